import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import { asAccounts } from '../../shared/domain/organizations/accounts.js';
import {
  getOrganizations,
  OrganizationGetRequest,
} from '../../shared/domain/organizations/organization-get.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AccountGetResponse, OrganizationGetResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const store = new DynamoOrganizationStore(db, readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE);

/**
 * `POST /v1/organizations/get`: organizations in pages, with field selection and search;
 * `POST /v1/accounts/get`: the same answered as `accounts`.
 */
export const handler = routeHandlers({
  'POST /v1/organizations/get': apiHandler(
    findRoute('POST /v1/organizations/get'),
    { ...http, body: OrganizationGetRequest, response: OrganizationGetResponse },
    async ({ body, tenant }) => ({
      body: await getOrganizations(
        body,
        tenant,
        store,
        await cursors(tenant.instance.id, 'organizations/get'),
      ),
    }),
  ),
  'POST /v1/accounts/get': apiHandler(
    findRoute('POST /v1/accounts/get'),
    { ...http, body: OrganizationGetRequest, response: AccountGetResponse },
    async ({ body, tenant }) => ({
      body: asAccounts(
        await getOrganizations(
          body,
          tenant,
          store,
          await cursors(tenant.instance.id, 'organizations/get'),
        ),
      ),
    }),
  ),
});
