import type { DynamoConfigStore } from '../shared/adapters/config-store.js';
import { hashApiKey } from '../shared/domain/api-keys.js';
import {
  ACTIVATION_DELAY_MS,
  retired,
  rotated,
  signingKeyOf,
  storedKey,
  type KeyWrapper,
} from '../shared/domain/signing-keys.js';

/**
 * `npm run admin -- key list | revoke` and `signing-key list | rotate | retire`: API keys
 * one by one, and the deployment's signing keyring. Every change moves the keys version,
 * so that warm functions drop their caches within seconds.
 */
type Print = (line: string) => void;

export async function listKeys(store: DynamoConfigStore, instanceId: string, print: Print) {
  const keys = await store.listKeys(instanceId);
  print(`Keys of instance "${instanceId}": ${keys.length}`);
  for (const key of keys) {
    print(
      `  ${key.key_hash.slice(0, 16)}  ${key.data_source}  ${key.origin}${key.created_at ? `  created ${key.created_at}` : ''}${key.revoked_at ? `  REVOKED ${key.revoked_at}` : ''}`,
    );
  }
}

/** Revokes the key named by its plaintext, its hash, or a prefix of the hash (16+ characters). */
export async function revokeKey(
  store: DynamoConfigStore,
  instanceId: string,
  named: { key?: string; hash?: string },
  print: Print,
): Promise<void> {
  let hash = named.key !== undefined ? hashApiKey(named.key.trim()) : named.hash?.toLowerCase();
  if (!hash)
    throw new Error('key revoke needs --key <the key> or --key-hash <its hash, 16+ characters>');
  if (hash.length < 64) {
    if (hash.length < 16) throw new Error('--key-hash: give at least 16 characters of the hash');
    const prefix = hash;
    const matches = (await store.listKeys(instanceId)).filter(
      (key) => key.revoked_at === undefined && key.key_hash.startsWith(prefix),
    );
    if (matches.length !== 1) {
      throw new Error(`--key-hash: ${matches.length} keys of "${instanceId}" start with ${prefix}`);
    }
    hash = matches[0]?.key_hash ?? '';
  }
  if (!(await store.revokeKey(instanceId, hash))) {
    throw new Error(`Instance "${instanceId}" has no key ${hash.slice(0, 16)}… (revoked already?)`);
  }
  print(
    `Revoked ${hash.slice(0, 16)}… of instance "${instanceId}": refused everywhere within seconds.`,
  );
}

export async function listSigningKeys(store: DynamoConfigStore, print: Print): Promise<void> {
  const stored = await store.getSigningKeys();
  if (!stored) {
    print('No signing keyring yet: `npm run admin -- apply <file>` creates it.');
    return;
  }
  const now = Date.now();
  const signing = signingKeyOf(stored.keyring.keys, now)?.kid;
  print(`Signing keys (version ${stored.version}):`);
  for (const key of stored.keyring.keys) {
    const state =
      key.kid === signing
        ? 'signing'
        : Date.parse(key.active_from) > now
          ? `signs from ${key.active_from}`
          : key.retire_at !== undefined && Date.parse(key.retire_at) <= now
            ? 'retired'
            : 'verifying';
    print(
      `  ${key.kid}  ${state}  created ${key.created_at}${key.retire_at ? `  retires ${key.retire_at}` : ''}`,
    );
  }
}

/**
 * Adds a new signing key: it verifies at once, signs once every function has read it
 * (`ACTIVATION_DELAY_MS`), and the key it replaces verifies `overlapDays` after that.
 */
export async function rotateSigningKey(
  store: DynamoConfigStore,
  wrapper: KeyWrapper,
  overlapDays: number,
  print: Print,
): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const stored = await store.getSigningKeys();
    if (!stored)
      throw new Error('No signing keyring yet: `npm run admin -- apply <file>` creates it.');
    const now = new Date();
    const fresh = await storedKey(wrapper, now, new Date(now.getTime() + ACTIVATION_DELAY_MS));
    const next = rotated(stored.keyring, fresh, overlapDays * 86_400_000, now);
    if (await store.putSigningKeys(next, stored.version)) {
      await store.bumpKeysVersion();
      print(
        `New signing key ${fresh.kid}: signs from ${fresh.active_from}; the key it replaces verifies ${overlapDays} days after that.`,
      );
      return;
    }
  }
  throw new Error('The keyring kept changing; try again');
}

/** Retires a key now (it leaked): its links and cursors stop working within seconds. */
export async function retireSigningKey(
  store: DynamoConfigStore,
  kid: string,
  print: Print,
): Promise<void> {
  const stored = await store.getSigningKeys();
  if (!stored) throw new Error('No signing keyring yet.');
  if (!(await store.putSigningKeys(retired(stored.keyring, kid, new Date()), stored.version))) {
    throw new Error('The keyring changed meanwhile; try again');
  }
  await store.bumpKeysVersion();
  print(`Retired ${kid}: its links and cursors are refused from now on.`);
}
