import { createCustomField } from '../../shared/domain/fields/custom-field-api.js';
import { CustomFieldCreateRequest } from '../../shared/domain/fields/custom-fields.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { CustomFieldCreateResponse } from '../../shared/api/schemas.js';

const { http, config } = createApiRuntime();

/** `POST /v1/accounts/custom-field/create` (and `/v1/organizations/…`): an organization field. */
const create = (area: 'accounts' | 'organizations') =>
  apiHandler(
    findRoute(`POST /v1/${area}/custom-field/create`),
    { ...http, body: CustomFieldCreateRequest, response: CustomFieldCreateResponse },
    async ({ body, tenant }) => ({
      body: await createCustomField('organization', body, tenant, config),
    }),
  );

export const handler = routeHandlers({
  'POST /v1/accounts/custom-field/create': create('accounts'),
  'POST /v1/organizations/custom-field/create': create('organizations'),
});
