import { replayWebhook, ReplayRequest } from '../../shared/domain/webhooks/replay.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createReplayServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { ReplaySchema } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const services = createReplayServices(db);

/** `POST /v1/webhooks/replay`: one event, or every event since a time, sent again. */
export const handler = apiHandler(
  findRoute('POST /v1/webhooks/replay'),
  { ...http, body: ReplayRequest, response: ReplaySchema },
  async ({ body, tenant }) => ({ status: 202, body: await replayWebhook(body, tenant, services) }),
);
