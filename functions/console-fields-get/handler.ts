import { ConsoleFieldsResponse } from '../../shared/api/console-overview.js';
import { fieldsOfInstance } from '../../shared/domain/console/console-fields.js';
import { ConsoleInstanceRequest } from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, region } = createConsoleRuntime();

/** `POST /console/v1/fields/get`: an instance's custom fields of people and organizations. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/fields/get'),
  { ...http, body: ConsoleInstanceRequest, response: ConsoleFieldsResponse },
  async ({ body, user }) => ({
    body: await fieldsOfInstance(config, { user }, region, body.instance_id),
  }),
);
