import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import { asAccounts } from '../../shared/domain/organizations/accounts.js';
import {
  AccountGetByIdsRequest,
  getOrganizationsByIds,
  OrganizationGetByIdsRequest,
} from '../../shared/domain/organizations/organization-get.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AccountGetByIdsResponse, OrganizationGetByIdsResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = new DynamoOrganizationStore(db, readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE);

/**
 * `POST /v1/organizations/get-by-ids` and `POST /v1/accounts/get-by-ids`: up to 100
 * organizations by ID, keyed by ID.
 */
export const handler = routeHandlers({
  'POST /v1/organizations/get-by-ids': apiHandler(
    findRoute('POST /v1/organizations/get-by-ids'),
    { ...http, body: OrganizationGetByIdsRequest, response: OrganizationGetByIdsResponse },
    async ({ body, tenant }) => ({
      body: await getOrganizationsByIds(
        { ids: body.organization_ids, fields: body.fields },
        tenant,
        store,
      ),
    }),
  ),
  'POST /v1/accounts/get-by-ids': apiHandler(
    findRoute('POST /v1/accounts/get-by-ids'),
    { ...http, body: AccountGetByIdsRequest, response: AccountGetByIdsResponse },
    async ({ body, tenant }) => ({
      body: asAccounts(
        await getOrganizationsByIds({ ids: body.account_ids, fields: body.fields }, tenant, store),
      ),
    }),
  ),
});
