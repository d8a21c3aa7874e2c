import { ConsoleWebhooksResponse } from '../../shared/api/console-messages.js';
import {
  ConsoleWebhooksRequest,
  webhooksOf,
} from '../../shared/domain/console/console-webhooks.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createWebhookServices } from '../../shared/worker/webhook-runtime.js';

const { http, config, region, db } = createConsoleRuntime();
const webhooks = createWebhookServices(db);

/** `POST /console/v1/webhooks/get`: the instance's endpoints with their health. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/webhooks/get'),
  { ...http, body: ConsoleWebhooksRequest, response: ConsoleWebhooksResponse },
  async ({ body, user }) => ({
    body: await webhooksOf(config, webhooks.store, { user }, region, body),
  }),
);
