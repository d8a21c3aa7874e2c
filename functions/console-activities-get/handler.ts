import { ConsoleActivitiesResponse } from '../../shared/api/console-schemas.js';
import { activitiesOf } from '../../shared/domain/console/console-activities.js';
import { ConsoleInstanceRequest } from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, region } = createConsoleRuntime();

/** `POST /console/v1/activities/get`: an instance's activity definitions. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/activities/get'),
  { ...http, body: ConsoleInstanceRequest, response: ConsoleActivitiesResponse },
  async ({ body, user }) => ({
    body: await activitiesOf(config, { user }, region, body.instance_id),
  }),
);
