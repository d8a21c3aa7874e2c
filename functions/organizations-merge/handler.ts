import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import { acceptIngest } from '../../shared/domain/ingest/ingest.js';
import {
  ACCOUNT_NAMES,
  AccountMergeRequest,
  accountResultsOf,
  organizationMergeOf,
} from '../../shared/domain/organizations/accounts.js';
import {
  mergeOrganizations,
  OrganizationMergeRequest,
  prepareOrganizationMerge,
} from '../../shared/domain/organizations/organization-merge.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime, createIngestPorts } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AccountMergeResponse, OrganizationMergeResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = new DynamoOrganizationStore(db, readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE);
const ingest = createIngestPorts(db);

/**
 * `POST /v1/organizations/merge`: create or update 1 to 100 organizations (or queue them);
 * `POST /v1/accounts/merge`: the same under the accounts names.
 */
export const handler = routeHandlers({
  'POST /v1/organizations/merge': apiHandler(
    findRoute('POST /v1/organizations/merge'),
    { ...http, body: OrganizationMergeRequest, response: OrganizationMergeResponse },
    async ({ body, tenant }) => ({
      body: body.async
        ? await acceptIngest(
            {
              kind: 'organizations-merge',
              body,
              records: body.organizations.length,
              check: () => prepareOrganizationMerge(body, tenant),
            },
            tenant,
            ingest,
          )
        : { organizations: await mergeOrganizations(body, { tenant, store }) },
    }),
  ),
  'POST /v1/accounts/merge': apiHandler(
    findRoute('POST /v1/accounts/merge'),
    { ...http, body: AccountMergeRequest, response: AccountMergeResponse },
    async ({ body, tenant }) => {
      const request = organizationMergeOf(body);
      return {
        body: body.async
          ? await acceptIngest(
              {
                kind: 'accounts-merge',
                body,
                records: body.accounts.length,
                check: () => prepareOrganizationMerge(request, tenant, ACCOUNT_NAMES),
              },
              tenant,
              ingest,
            )
          : {
              accounts: accountResultsOf(
                await mergeOrganizations(request, { tenant, store, names: ACCOUNT_NAMES }),
              ),
            },
      };
    },
  ),
});
