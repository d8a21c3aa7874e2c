import { ConsoleKeyRevokedResponse } from '../../shared/api/console-schemas.js';
import {
  ConsoleKeyRevokeRequest,
  revokeConsoleKey,
} from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `PUT /console/v1/keys/revoke`: a key refused everywhere within seconds. */
export const handler = consoleHandler(
  findRoute('PUT /console/v1/keys/revoke'),
  { ...http, body: ConsoleKeyRevokeRequest, response: ConsoleKeyRevokedResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await revokeConsoleKey(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
