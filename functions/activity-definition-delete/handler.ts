import {
  archiveActivityDefinition,
  CustomActivityDeleteRequest,
} from '../../shared/domain/activities/definition-create.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { ArchivedActivityResponse } from '../../shared/api/schemas.js';

const { http, config } = createApiRuntime();

/** `DELETE /v1/definitions/activity/delete`: archive a custom activity's definition. */
export const handler = apiHandler(
  findRoute('DELETE /v1/definitions/activity/delete'),
  { ...http, body: CustomActivityDeleteRequest, response: ArchivedActivityResponse },
  async ({ body, tenant }) => ({ body: await archiveActivityDefinition(body, tenant, config) }),
);
