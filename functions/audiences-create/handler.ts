import { createAudience, AudienceCreateRequest } from '../../shared/domain/audiences/audience.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AudienceEntrySchema } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { services } = createAudienceServices(db);

/** `POST /v1/audiences/create`: create an audience (docs/audiences.md). */
export const handler = apiHandler(
  findRoute('POST /v1/audiences/create'),
  { ...http, body: AudienceCreateRequest, response: AudienceEntrySchema },
  async ({ body, tenant }) => ({ body: await createAudience(body, tenant, services) }),
);
