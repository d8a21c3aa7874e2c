import { updateAudience, AudienceUpdateRequest } from '../../shared/domain/audiences/audience.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AudienceEntrySchema } from '../../shared/api/schemas.js';

const { http, db, chargeTokens } = createApiRuntime();
const services = { ...createAudienceServices(db).services, charge: chargeTokens };

/** `PUT /v1/audiences/update`: change an audience's name, filters or presentation (docs/audiences.md). */
export const handler = apiHandler(
  findRoute('PUT /v1/audiences/update'),
  { ...http, body: AudienceUpdateRequest, response: AudienceEntrySchema },
  async ({ body, tenant }) => ({ body: await updateAudience(body, tenant, services) }),
);
