import { ConsoleActivityResponse } from '../../shared/api/console-schemas.js';
import {
  createConsoleActivity,
  ConsoleActivityRequest,
} from '../../shared/domain/console/console-activities.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `POST /console/v1/activities/create`: a new activity definition, usable at once. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/activities/create'),
  { ...http, body: ConsoleActivityRequest, response: ConsoleActivityResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await createConsoleActivity(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
