import { getWebhooks, WebhooksGetRequest } from '../../shared/domain/webhooks/webhook.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createWebhookServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { WebhooksGetResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const services = createWebhookServices(db);

/** `POST /v1/webhooks/get`: the instance's webhooks, without secrets (docs/webhooks.md). */
export const handler = apiHandler(
  findRoute('POST /v1/webhooks/get'),
  { ...http, body: WebhooksGetRequest, response: WebhooksGetResponse },
  async ({ body, tenant }) => ({ body: await getWebhooks(body, tenant, services) }),
);
