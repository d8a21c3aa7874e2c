import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonDeleteResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'people', true);

/** `DELETE /v1/person/delete`: erase archived people and everything that names them (GDPR). */
export const handler = apiHandler(
  findRoute('DELETE /v1/person/delete'),
  { ...http, body: LifecycleRequest, response: PersonDeleteResponse },
  async ({ body, tenant, requestId }) => ({
    body: await changeLifecycle(body, {
      subject: 'people',
      action: 'delete',
      tenant,
      requestId,
      store,
      ingest,
    }),
  }),
);
