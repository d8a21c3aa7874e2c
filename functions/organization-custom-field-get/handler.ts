import { getOrganizationCustomFields } from '../../shared/domain/fields/custom-field-api.js';
import { CustomFieldGetRequest } from '../../shared/domain/fields/custom-fields.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { OrganizationCustomFieldsResponse } from '../../shared/api/schemas.js';

const { http } = createApiRuntime();

/**
 * `POST /v1/accounts/custom-field/get` and `/v1/organizations/custom-field/get`: the
 * instance's custom organization fields (each name answers `liquid_name` as it is recorded).
 */
const listing = (area: 'accounts' | 'organizations', recordName: string) =>
  apiHandler(
    findRoute(`POST /v1/${area}/custom-field/get`),
    { ...http, body: CustomFieldGetRequest, response: OrganizationCustomFieldsResponse },
    ({ tenant }) => Promise.resolve({ body: getOrganizationCustomFields(tenant, recordName) }),
  );

export const handler = routeHandlers({
  'POST /v1/accounts/custom-field/get': listing('accounts', 'account'),
  'POST /v1/organizations/custom-field/get': listing('organizations', 'organization'),
});
