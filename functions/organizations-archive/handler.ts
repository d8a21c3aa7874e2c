import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute, type RouteKey } from '../../shared/routes.js';
import { OrganizationArchiveResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'organizations');

const route = (key: RouteKey) =>
  apiHandler(
    findRoute(key),
    { ...http, body: LifecycleRequest, response: OrganizationArchiveResponse },
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

/**
 * `PUT /v1/organizations/archive`: archive organizations: out of listings, searches and counters; `PUT /v1/accounts/archive`: the same under the
 * accounts names.
 */
export const handler = routeHandlers({
  'PUT /v1/organizations/archive': route('PUT /v1/organizations/archive'),
  'PUT /v1/accounts/archive': route('PUT /v1/accounts/archive'),
});
