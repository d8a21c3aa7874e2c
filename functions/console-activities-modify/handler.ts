import { ConsoleActivityResponse } from '../../shared/api/console-schemas.js';
import {
  modifyConsoleActivity,
  ConsoleActivityRequest,
} from '../../shared/domain/console/console-activities.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `PUT /console/v1/activities/modify`: an activity definition replaced by the one given. */
export const handler = consoleHandler(
  findRoute('PUT /console/v1/activities/modify'),
  { ...http, body: ConsoleActivityRequest, response: ConsoleActivityResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await modifyConsoleActivity(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
