import { ConsoleActivityArchivedResponse } from '../../shared/api/console-schemas.js';
import {
  archiveConsoleActivity,
  ConsoleActivityArchiveRequest,
} from '../../shared/domain/console/console-activities.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `PUT /console/v1/activities/archive`: an activity definition archived (its activities stay). */
export const handler = consoleHandler(
  findRoute('PUT /console/v1/activities/archive'),
  { ...http, body: ConsoleActivityArchiveRequest, response: ConsoleActivityArchivedResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await archiveConsoleActivity(config, audit, { user, sourceIp, requestId }, region, body),
  }),
);
