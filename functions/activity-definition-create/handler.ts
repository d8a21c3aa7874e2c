import { z } from 'zod';
import { createActivityDefinition } from '../../shared/domain/activities/definition-create.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { ActivityDefinitionResponse } from '../../shared/api/schemas.js';

const { http, config } = createApiRuntime();

/**
 * `POST /v1/definitions/activity/create`: define a custom activity through the API, in the
 * real API's shape or the configuration's.
 */
export const handler = apiHandler(
  findRoute('POST /v1/definitions/activity/create'),
  // Either shape is checked by the domain (with the instance's person fields).
  { ...http, body: z.looseObject({}), response: ActivityDefinitionResponse },
  async ({ body, tenant }) => ({ body: await createActivityDefinition(body, tenant, config) }),
);
