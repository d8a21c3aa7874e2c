import {
  getInstanceSchema,
  InstanceSchemaRequest,
} from '../../shared/domain/fields/instance-schema.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { InstanceSchemaResponse } from '../../shared/api/schemas.js';

const { http } = createApiRuntime();

/** `POST /v1/instance-schema/get`: the instance's fields and activities, by namespace. */
export const handler = apiHandler(
  findRoute('POST /v1/instance-schema/get'),
  { ...http, body: InstanceSchemaRequest, response: InstanceSchemaResponse },
  ({ body, tenant }) => Promise.resolve({ body: getInstanceSchema(body, tenant) }),
);
