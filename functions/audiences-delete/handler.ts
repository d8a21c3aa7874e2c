import { deleteAudience, AudienceIdRequest } from '../../shared/domain/audiences/audience.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AudienceDeleteResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { services } = createAudienceServices(db);

/** `DELETE /v1/audiences/delete`: delete an archived audience (docs/audiences.md). */
export const handler = apiHandler(
  findRoute('DELETE /v1/audiences/delete'),
  { ...http, body: AudienceIdRequest, response: AudienceDeleteResponse },
  async ({ body, tenant }) => ({ body: await deleteAudience(body, tenant, services) }),
);
