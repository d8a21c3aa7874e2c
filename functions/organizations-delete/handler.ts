import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'organizations');

/** `DELETE /v1/organizations/delete`: delete archived organizations that have no people. */
export const handler = apiHandler(
  findRoute('DELETE /v1/organizations/delete'),
  { ...http, body: LifecycleRequest },
  async ({ body, tenant, requestId }) => ({
    body: await changeLifecycle(body, {
      subject: 'organizations',
      action: 'delete',
      tenant,
      requestId,
      store,
      ingest,
    }),
  }),
);
