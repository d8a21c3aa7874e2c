import { getReplay, ReplaysGetRequest } from '../../shared/domain/webhooks/replay.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createReplayServices } from '../../shared/worker/webhook-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { ReplaySchema } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { jobs } = createReplayServices(db);

/** `POST /v1/webhooks/replays/get`: how far a replay got. */
export const handler = apiHandler(
  findRoute('POST /v1/webhooks/replays/get'),
  { ...http, body: ReplaysGetRequest, response: ReplaySchema },
  async ({ body, tenant }) => ({ body: await getReplay(body, tenant, jobs) }),
);
