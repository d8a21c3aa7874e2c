import { updateWebhook, WebhookUpdateRequest } from '../../shared/domain/webhooks/webhook.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createWebhookServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { WebhookEntrySchema } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const services = createWebhookServices(db);

/** `PUT /v1/webhooks/update`: a webhook's URL, events, description or state. */
export const handler = apiHandler(
  findRoute('PUT /v1/webhooks/update'),
  { ...http, body: WebhookUpdateRequest, response: WebhookEntrySchema },
  async ({ body, tenant }) => ({ body: await updateWebhook(body, tenant, services) }),
);
