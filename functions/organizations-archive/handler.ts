import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'organizations');

/** `PUT /v1/organizations/archive`: archive organizations: out of listings, searches and counters. */
export const handler = apiHandler(
  findRoute('PUT /v1/organizations/archive'),
  { ...http, body: LifecycleRequest },
  async ({ body, tenant, requestId }) => ({
    body: await changeLifecycle(body, {
      subject: 'organizations',
      action: 'archive',
      tenant,
      requestId,
      store,
      ingest,
    }),
  }),
);
