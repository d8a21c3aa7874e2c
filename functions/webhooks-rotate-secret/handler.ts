import {
  rotateWebhookSecret,
  WebhookIdRequest,
  withoutSecret,
} from '../../shared/domain/webhooks/webhook.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createWebhookServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { WebhookSecretResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const services = createWebhookServices(db);

/** `PUT /v1/webhooks/rotate-secret`: a new secret; the old one signs beside it for a day. */
export const handler = apiHandler(
  findRoute('PUT /v1/webhooks/rotate-secret'),
  { ...http, body: WebhookIdRequest, response: WebhookSecretResponse, keptAnswer: withoutSecret },
  async ({ body, tenant }) => ({ body: await rotateWebhookSecret(body, tenant, services) }),
);
