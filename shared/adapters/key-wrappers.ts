import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import type { KeyWrapper } from '../domain/signing-keys.js';

/**
 * Key wrappers for the signing keyring (signing-keys.ts). On AWS, KMS: the region's key
 * (`alias/cdp-<region>-signing`) encrypts each secret, with an encryption context naming
 * its use, and only functions granted `kms:Decrypt` on it (those that sign or verify links
 * and cursors) can read the keyring. Locally, the same envelope with AES-256-GCM under a
 * fixed key: the local stack protects nothing (DynamoDB Local has no access control
 * either); what runs locally is the same code path (wrapped keys, key IDs, rotation), not
 * the same secrecy. A wrapped value says which wrapper made it (`kms:` or `local:`), and a
 * wrapper refuses another's.
 */
const SIGNING_PURPOSE = 'cdp-signing-key';
/** Webhook secrets: the same key, another context (grants name the purpose they allow). */
export const WEBHOOK_SECRET_PURPOSE = 'cdp-webhook-secret';

export function signingKeyAlias(region: string): string {
  return `alias/cdp-${region}-signing`;
}

export class KmsKeyWrapper implements KeyWrapper {
  constructor(
    private readonly kms: KMSClient,
    private readonly keyId: string,
    private readonly purpose: string = SIGNING_PURPOSE,
  ) {}

  async wrap(secret: string, context: Readonly<Record<string, string>> = {}): Promise<string> {
    const { CiphertextBlob } = await this.kms.send(
      new EncryptCommand({
        KeyId: this.keyId,
        Plaintext: Buffer.from(secret, 'utf8'),
        EncryptionContext: { ...context, purpose: this.purpose },
      }),
    );
    if (!CiphertextBlob) throw new Error('KMS returned no ciphertext');
    return `kms:${Buffer.from(CiphertextBlob).toString('base64')}`;
  }

  async unwrap(wrapped: string, context: Readonly<Record<string, string>> = {}): Promise<string> {
    if (!wrapped.startsWith('kms:')) {
      throw new Error('This signing key was not wrapped with KMS (a local keyring on AWS?)');
    }
    const { Plaintext } = await this.kms.send(
      new DecryptCommand({
        CiphertextBlob: Buffer.from(wrapped.slice(4), 'base64'),
        KeyId: this.keyId,
        EncryptionContext: { ...context, purpose: this.purpose },
      }),
    );
    if (!Plaintext) throw new Error('KMS returned no plaintext');
    return Buffer.from(Plaintext).toString('utf8');
  }
}

/** A context as additional authenticated data: its entries in key order (none: nothing). */
function associatedData(context: Readonly<Record<string, string>>): Buffer | undefined {
  const entries = Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? undefined : Buffer.from(JSON.stringify(entries), 'utf8');
}

/**
 * The local stack's wrapper: AES-256-GCM under a fixed key (see above: no secrecy), the
 * context bound as additional authenticated data as KMS binds its encryption context.
 */
export class LocalKeyWrapper implements KeyWrapper {
  private readonly key = createHash('sha256').update('cdp local signing keyring').digest();

  wrap(secret: string, context: Readonly<Record<string, string>> = {}): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const aad = associatedData(context);
    if (aad) cipher.setAAD(aad);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Promise.resolve(
      `local:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`,
    );
  }

  unwrap(wrapped: string, context: Readonly<Record<string, string>> = {}): Promise<string> {
    if (!wrapped.startsWith('local:')) {
      return Promise.reject(new Error('This signing key was not wrapped by the local stack'));
    }
    try {
      const bytes = Buffer.from(wrapped.slice(6), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, 12));
      decipher.setAuthTag(bytes.subarray(12, 28));
      const aad = associatedData(context);
      if (aad) decipher.setAAD(aad);
      return Promise.resolve(
        Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8'),
      );
    } catch (error) {
      return Promise.reject(
        new Error('This secret cannot be unwrapped with this context (wrapped for another?)', {
          cause: error,
        }),
      );
    }
  }
}

/** The deployment's wrapper: KMS when a key is configured (AWS), the local one otherwise. */
export function createKeyWrapper(
  kmsKeyId: string | undefined,
  purpose: string = SIGNING_PURPOSE,
): KeyWrapper {
  return kmsKeyId ? new KmsKeyWrapper(new KMSClient({}), kmsKeyId, purpose) : new LocalKeyWrapper();
}
