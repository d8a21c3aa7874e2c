import { replay, ReplayRequest } from '../../shared/domain/webhooks/replay.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createReplayServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { ReplaySchema } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const services = createReplayServices(db);

/**
 * `POST /v1/webhooks/replay`: one event, or every event since a time, sent again (202); with
 * `replay_id` alone, how far that replay got (200).
 */
export const handler = apiHandler(
  findRoute('POST /v1/webhooks/replay'),
  { ...http, body: ReplayRequest, response: ReplaySchema },
  async ({ body, tenant }) => {
    const { started, replay: answer } = await replay(body, tenant, services);
    return { status: started ? 202 : 200, body: answer };
  },
);
