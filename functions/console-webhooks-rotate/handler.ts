import { ConsoleSecretResponse } from '../../shared/api/console-messages.js';
import {
  ConsoleRotateRequest,
  rotateConsoleSecret,
} from '../../shared/domain/console/console-webhooks.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createWebhookServices } from '../../shared/worker/webhook-runtime.js';

const { http, config, audit, region, db } = createConsoleRuntime();
const services = createWebhookServices(db);

/** `PUT /console/v1/webhooks/rotate`: a new signing secret, shown once; audited. */
export const handler = consoleHandler(
  findRoute('PUT /console/v1/webhooks/rotate'),
  { ...http, body: ConsoleRotateRequest, response: ConsoleSecretResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await rotateConsoleSecret(
      config,
      services,
      audit,
      { user, sourceIp, requestId },
      region,
      body,
    ),
  }),
);
