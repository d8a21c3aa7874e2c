import {
  createWebhook,
  WebhookCreateRequest,
  withoutSecret,
} from '../../shared/domain/webhooks/webhook.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createWebhookServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { WebhookCreatedSchema } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const services = createWebhookServices(db);

/** `POST /v1/webhooks/create`: a webhook and its secret, shown once (docs/webhooks.md). */
export const handler = apiHandler(
  findRoute('POST /v1/webhooks/create'),
  {
    ...http,
    body: WebhookCreateRequest,
    response: WebhookCreatedSchema,
    keptAnswer: withoutSecret,
  },
  async ({ body, tenant }) => ({ body: await createWebhook(body, tenant, services) }),
);
