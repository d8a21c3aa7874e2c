import { ConsoleKeyCreatedResponse } from '../../shared/api/console-schemas.js';
import {
  ConsoleKeyCreateRequest,
  createConsoleKey,
} from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `POST /console/v1/keys/create`: a new key of a data source, shown in this answer only. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/keys/create'),
  { ...http, body: ConsoleKeyCreateRequest, response: ConsoleKeyCreatedResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await createConsoleKey(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
