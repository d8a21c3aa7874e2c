import { setAudienceArchived, AudienceIdRequest } from '../../shared/domain/audiences/audience.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AudienceEntrySchema } from '../../shared/api/schemas.js';

const { http, db, chargeTokens } = createApiRuntime();
const services = { ...createAudienceServices(db).services, charge: chargeTokens };

/** `PUT /v1/audiences/restore`: restore an archived audience (its members are decided again) (docs/audiences.md). */
export const handler = apiHandler(
  findRoute('PUT /v1/audiences/restore'),
  { ...http, body: AudienceIdRequest, response: AudienceEntrySchema },
  async ({ body, tenant }) => ({ body: await setAudienceArchived(body, false, tenant, services) }),
);
