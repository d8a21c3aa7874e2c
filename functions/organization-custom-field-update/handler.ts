import { updateCustomField } from '../../shared/domain/fields/custom-field-api.js';
import { CustomFieldUpdateRequest } from '../../shared/domain/fields/custom-fields.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { CustomFieldUpdateResponse } from '../../shared/api/schemas.js';

const { http, config } = createApiRuntime();

/** `PUT /v1/accounts/custom-field/update` (and `/v1/organizations/…`): a select field's options. */
const update = (area: 'accounts' | 'organizations') =>
  apiHandler(
    findRoute(`PUT /v1/${area}/custom-field/update`),
    { ...http, body: CustomFieldUpdateRequest, response: CustomFieldUpdateResponse },
    async ({ body, tenant }) => ({
      body: await updateCustomField('organization', body, tenant, config),
    }),
  );

export const handler = routeHandlers({
  'PUT /v1/accounts/custom-field/update': update('accounts'),
  'PUT /v1/organizations/custom-field/update': update('organizations'),
});
