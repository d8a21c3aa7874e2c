import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute, type RouteKey } from '../../shared/routes.js';
import { OrganizationDeleteResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'organizations');

const route = (key: RouteKey) =>
  apiHandler(
    findRoute(key),
    { ...http, body: LifecycleRequest, response: OrganizationDeleteResponse },
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

/**
 * `DELETE /v1/organizations/delete`: delete archived organizations that have no people; `DELETE /v1/accounts/delete`: the same under the
 * accounts names.
 */
export const handler = routeHandlers({
  'DELETE /v1/organizations/delete': route('DELETE /v1/organizations/delete'),
  'DELETE /v1/accounts/delete': route('DELETE /v1/accounts/delete'),
});
