import { z } from 'zod';
import { DynamoConfigStore } from '../../shared/adapters/config-store.js';
import { createActivityDefinition } from '../../shared/domain/activities/definition-create.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { ActivityDefinitionResponse } from '../../shared/api/schemas.js';

const { http, db, env } = createApiRuntime();
const config = new DynamoConfigStore(db, env.CONFIG_TABLE);

/** `POST /v1/definitions/activity/create`: define a custom activity through the API. */
export const handler = apiHandler(
  findRoute('POST /v1/definitions/activity/create'),
  // The definition is checked by the domain (with the instance's person fields).
  { ...http, body: z.looseObject({}), response: ActivityDefinitionResponse },
  async ({ body, tenant }) => ({ body: await createActivityDefinition(body, tenant, config) }),
);
