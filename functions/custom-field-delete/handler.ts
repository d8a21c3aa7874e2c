import { DynamoAudienceStore } from '../../shared/adapters/audience-store.js';
import { ApiEnv, AudiencesEnv, readEnv } from '../../shared/config/env.js';
import { audiencesNaming } from '../../shared/domain/audiences/audience.js';
import {
  CustomFieldDeleteRequest,
  deleteCustomField,
} from '../../shared/domain/fields/custom-field-api.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { EmptyResponse } from '../../shared/api/schemas.js';

const { http, config, db } = createApiRuntime();
const audiences = new DynamoAudienceStore(db, {
  config: readEnv(ApiEnv).CONFIG_TABLE,
  audiences: readEnv(AudiencesEnv).AUDIENCES_TABLE,
});

/** `DELETE /v1/instances/custom-field/delete`: a custom person or organization field. */
export const handler = apiHandler(
  findRoute('DELETE /v1/instances/custom-field/delete'),
  { ...http, body: CustomFieldDeleteRequest, response: EmptyResponse },
  async ({ body, tenant }) => ({
    body: await deleteCustomField(body, tenant, config, async (instanceId, fieldId) =>
      audiencesNaming(await audiences.list(instanceId), tenant.instance.person_fields, fieldId),
    ),
  }),
);
