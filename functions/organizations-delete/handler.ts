import { changeLifecycle } from '../../shared/domain/lifecycle/lifecycle-calls.js';
import { LifecycleRequest } from '../../shared/domain/lifecycle/lifecycle.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime, createLifecyclePorts } from '../../shared/http/api-runtime.js';
import { findRoute, type RouteKey } from '../../shared/routes.js';
import { AccountDeleteResponse, OrganizationDeleteResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, ingest } = createLifecyclePorts(db, 'organizations');

/** The organizations names answer `*_organizations`, the accounts names `*_accounts`. */
const route = (key: RouteKey, subject: 'organizations' | 'accounts') =>
  apiHandler(
    findRoute(key),
    {
      ...http,
      body: LifecycleRequest,
      response: subject === 'accounts' ? AccountDeleteResponse : OrganizationDeleteResponse,
    },
    async ({ body, tenant, requestId }) => ({
      body: await changeLifecycle(body, {
        subject,
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
  'DELETE /v1/organizations/delete': route('DELETE /v1/organizations/delete', 'organizations'),
  'DELETE /v1/accounts/delete': route('DELETE /v1/accounts/delete', 'accounts'),
});
