import { getAudiences, AudiencesGetRequest } from '../../shared/domain/audiences/audience.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AudiencesGetResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { services } = createAudienceServices(db);

/** `POST /v1/audiences/get`: the instance's audiences (docs/audiences.md). */
export const handler = apiHandler(
  findRoute('POST /v1/audiences/get'),
  { ...http, body: AudiencesGetRequest, response: AudiencesGetResponse },
  async ({ body, tenant }) => ({ body: await getAudiences(body, tenant, services) }),
);
