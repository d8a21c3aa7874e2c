import { ConsoleFieldResponse } from '../../shared/api/console-overview.js';
import {
  ConsoleFieldCreateRequest,
  createConsoleField,
} from '../../shared/domain/console/console-fields.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `POST /console/v1/fields/create`: a new custom field, usable at once. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/fields/create'),
  { ...http, body: ConsoleFieldCreateRequest, response: ConsoleFieldResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await createConsoleField(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
