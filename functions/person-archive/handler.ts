import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonArchiveResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'people');

/** `PUT /v1/person/archive`: archive people: out of listings, searches and counters, merge keys kept. */
export const handler = apiHandler(
  findRoute('PUT /v1/person/archive'),
  { ...http, body: LifecycleRequest, response: PersonArchiveResponse },
  async ({ body, tenant, requestId }) => ({
    body: await changeLifecycle(body, {
      subject: 'people',
      action: 'archive',
      tenant,
      requestId,
      store,
      ingest,
    }),
  }),
);
