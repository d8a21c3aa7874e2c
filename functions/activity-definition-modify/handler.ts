import {
  CustomActivityModifyRequest,
  modifyActivityDefinition,
} from '../../shared/domain/activities/definition-create.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { CustomActivityResponse } from '../../shared/api/schemas.js';

const { http, config } = createApiRuntime();

/** `PUT /v1/definitions/activity/modify`: change a custom activity's definition. */
export const handler = apiHandler(
  findRoute('PUT /v1/definitions/activity/modify'),
  { ...http, body: CustomActivityModifyRequest, response: CustomActivityResponse },
  async ({ body, tenant }) => ({ body: await modifyActivityDefinition(body, tenant, config) }),
);
