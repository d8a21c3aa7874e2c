import { ConsoleAttemptsResponse } from '../../shared/api/console-messages.js';
import {
  attemptsOf,
  ConsoleAttemptsRequest,
} from '../../shared/domain/console/console-webhooks.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createAttemptServices } from '../../shared/worker/webhook-runtime.js';

const { db, cursors } = createApiRuntime();
const { http, config, region } = createConsoleRuntime(db);
const services = createAttemptServices(db);

/** `POST /console/v1/webhooks/attempts`: an endpoint's delivery attempts, newest first. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/webhooks/attempts'),
  { ...http, body: ConsoleAttemptsRequest, response: ConsoleAttemptsResponse },
  async ({ body, user }) => ({
    body: await attemptsOf(
      config,
      async (instanceId) => services(await cursors(instanceId, 'console/webhooks/attempts')),
      { user },
      region,
      body,
    ),
  }),
);
