import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute, type RouteKey } from '../../shared/routes.js';
import { OrganizationRestoreResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'organizations');

const route = (key: RouteKey) =>
  apiHandler(
    findRoute(key),
    { ...http, body: LifecycleRequest, response: OrganizationRestoreResponse },
    async ({ body, tenant, requestId }) => ({
      body: await changeLifecycle(body, {
        subject: 'organizations',
        action: 'restore',
        tenant,
        requestId,
        store,
        ingest,
      }),
    }),
  );

/**
 * `PUT /v1/organizations/restore`: bring archived organizations back; `PUT /v1/accounts/restore`: the same under the
 * accounts names.
 */
export const handler = routeHandlers({
  'PUT /v1/organizations/restore': route('PUT /v1/organizations/restore'),
  'PUT /v1/accounts/restore': route('PUT /v1/accounts/restore'),
});
