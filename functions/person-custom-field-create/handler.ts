import { createCustomField } from '../../shared/domain/fields/custom-field-api.js';
import { CustomFieldCreateRequest } from '../../shared/domain/fields/custom-fields.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { CustomFieldCreateResponse } from '../../shared/api/schemas.js';

const { http, config } = createApiRuntime();

/** `POST /v1/person/custom-field/create`: a custom person field, usable at once. */
export const handler = apiHandler(
  findRoute('POST /v1/person/custom-field/create'),
  { ...http, body: CustomFieldCreateRequest, response: CustomFieldCreateResponse },
  async ({ body, tenant }) => ({
    body: await createCustomField('person', body, tenant, config),
  }),
);
