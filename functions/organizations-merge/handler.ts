import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import { acceptIngest } from '../../shared/domain/ingest/ingest.js';
import {
  mergeOrganizations,
  OrganizationMergeRequest,
  prepareOrganizationMerge,
} from '../../shared/domain/organizations/organization-merge.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createIngestPorts } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { OrganizationMergeResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = new DynamoOrganizationStore(db, readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE);
const ingest = createIngestPorts(db);

/** `POST /v1/organizations/merge`: create or update 1 to 100 organizations (or queue them). */
export const handler = apiHandler(
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
);
