import { getPersonCustomFields } from '../../shared/domain/fields/custom-field-api.js';
import { CustomFieldGetRequest } from '../../shared/domain/fields/custom-fields.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonCustomFieldsResponse } from '../../shared/api/schemas.js';

const { http } = createApiRuntime();

/** `POST /v1/person/custom-field/get`: the instance's custom person fields. */
export const handler = apiHandler(
  findRoute('POST /v1/person/custom-field/get'),
  { ...http, body: CustomFieldGetRequest, response: PersonCustomFieldsResponse },
  ({ tenant }) => Promise.resolve({ body: getPersonCustomFields(tenant) }),
);
