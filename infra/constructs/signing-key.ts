import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key, type IKey } from 'aws-cdk-lib/aws-kms';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { signingKeyAlias, WEBHOOK_SECRET_PURPOSE } from '../../shared/adapters/key-wrappers.js';
import type { Region } from '../../shared/domain/regions.js';

/**
 * The region's KMS key that wraps the signing keyring (shared/domain/signing-keys.ts):
 * retained with the data, rotated yearly by KMS, under `alias/cdp-<region>-signing` (the
 * admin CLI wraps new keys with it). Only functions with access `signing` may decrypt with
 * it; the operator's credentials encrypt (`npm run admin -- apply`, `signing-key rotate`).
 * Kept apart from the stacks so that it can move with them.
 */
export class SigningKey extends Construct {
  readonly key: IKey;

  constructor(scope: Construct, id: string, props: { region: Region }) {
    super(scope, id);
    this.key = new Key(this, 'key', {
      alias: signingKeyAlias(props.region),
      description: `cdp ${props.region}: wraps the signing keys of paging cursors and email links`,
      enableKeyRotation: true,
      rotationPeriod: Duration.days(365),
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}

/** `kms:Decrypt` with the signing key, only for its use, and where to find it. */
export function grantSigning(fn: LambdaFunction, key: IKey): void {
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['kms:Decrypt'],
      resources: [key.keyArn],
      conditions: { StringEquals: { 'kms:EncryptionContext:purpose': 'cdp-signing-key' } },
    }),
  );
  fn.addEnvironment('SIGNING_KMS_KEY_ID', key.keyArn);
}

/**
 * Webhook secrets with the same key, in their own encryption context: the endpoints that make
 * secrets wrap and unwrap (`wrap`), the delivery worker only unwraps. Neither can read the
 * signing keyring, nor the keyring's functions a webhook secret.
 */
export function grantWebhookSecrets(fn: LambdaFunction, key: IKey, use: 'wrap' | 'unwrap'): void {
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: use === 'wrap' ? ['kms:Encrypt', 'kms:Decrypt'] : ['kms:Decrypt'],
      resources: [key.keyArn],
      conditions: {
        StringEquals: { 'kms:EncryptionContext:purpose': WEBHOOK_SECRET_PURPOSE },
      },
    }),
  );
  fn.addEnvironment('SIGNING_KMS_KEY_ID', key.keyArn);
}
