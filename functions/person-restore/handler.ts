import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonRestoreResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'people');

/** `PUT /v1/person/restore`: restore archived people: back into listings, searches and counters. */
export const handler = apiHandler(
  findRoute('PUT /v1/person/restore'),
  { ...http, body: LifecycleRequest, response: PersonRestoreResponse },
  async ({ body, tenant, requestId }) => ({
    body: await changeLifecycle(body, {
      subject: 'people',
      action: 'restore',
      tenant,
      requestId,
      store,
      ingest,
    }),
  }),
);
