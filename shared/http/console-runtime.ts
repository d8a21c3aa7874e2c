import { DynamoAuditLog } from '../adapters/audit-log.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../adapters/aws-clients.js';
import { DynamoConfigStore } from '../adapters/config-store.js';
import { consoleTokenVerifier, type ConsoleVerifier } from '../adapters/console-tokens.js';
import { ApiEnv, ConsoleEnv, readEnv } from '../config/env.js';
import { SignInRequiredError } from '../domain/errors.js';

/**
 * What every function of the console's API builds once per container: the config table's
 * store (instances, data sources, keys), the audit log beside it, and the verifier of the
 * signed-in user's ID token. `http` is what `consoleHandler` takes; a function that also
 * reads through the public API's runtime passes its DynamoDB client (one per container).
 */
export function createConsoleRuntime(db: DynamoDBDocumentClient = createDocumentClient()) {
  const env = readEnv(
    ApiEnv.pick({ CDP_REGION: true, CONFIG_TABLE: true }).extend(ConsoleEnv.shape),
  );
  const verify: ConsoleVerifier =
    env.CONSOLE_ISSUER && env.CONSOLE_CLIENT_ID
      ? consoleTokenVerifier({
          issuer: env.CONSOLE_ISSUER,
          clientId: env.CONSOLE_CLIENT_ID,
          ...(env.CONSOLE_JWKS_URL ? { jwksUrl: env.CONSOLE_JWKS_URL } : {}),
        })
      : () =>
          Promise.reject(
            new SignInRequiredError('this deployment has no console sign-in configured'),
          );
  return {
    env,
    db,
    region: env.CDP_REGION,
    config: new DynamoConfigStore(db, env.CONFIG_TABLE),
    audit: new DynamoAuditLog(db, env.CONFIG_TABLE),
    http: { verify },
  };
}
