import { ConsoleFieldResponse } from '../../shared/api/console-overview.js';
import {
  ConsoleFieldModifyRequest,
  modifyConsoleField,
} from '../../shared/domain/console/console-fields.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `PUT /console/v1/fields/modify`: a select field's options, a person field's tracking. */
export const handler = consoleHandler(
  findRoute('PUT /console/v1/fields/modify'),
  { ...http, body: ConsoleFieldModifyRequest, response: ConsoleFieldResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await modifyConsoleField(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
