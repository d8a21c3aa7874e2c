import { updateCustomField } from '../../shared/domain/fields/custom-field-api.js';
import { CustomFieldUpdateRequest } from '../../shared/domain/fields/custom-fields.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { CustomFieldUpdateResponse } from '../../shared/api/schemas.js';

const { http, config } = createApiRuntime();

/** `PUT /v1/person/custom-field/update`: a select field's options, whether changes are tracked. */
export const handler = apiHandler(
  findRoute('PUT /v1/person/custom-field/update'),
  { ...http, body: CustomFieldUpdateRequest, response: CustomFieldUpdateResponse },
  async ({ body, tenant }) => ({
    body: await updateCustomField('person', body, tenant, config),
  }),
);
