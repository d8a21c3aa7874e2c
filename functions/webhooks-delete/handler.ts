import { deleteWebhook, WebhookIdRequest } from '../../shared/domain/webhooks/webhook.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createWebhookServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { WebhookDeleteResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const services = createWebhookServices(db);

/** `DELETE /v1/webhooks/delete`: the webhook receives nothing more. */
export const handler = apiHandler(
  findRoute('DELETE /v1/webhooks/delete'),
  { ...http, body: WebhookIdRequest, response: WebhookDeleteResponse },
  async ({ body, tenant }) => ({ body: await deleteWebhook(body, tenant, services) }),
);
