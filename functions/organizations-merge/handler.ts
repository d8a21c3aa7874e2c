import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import {
  mergeOrganizations,
  OrganizationMergeRequest,
} from '../../shared/domain/organizations/organization-merge.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, db } = createApiRuntime();
const store = new DynamoOrganizationStore(db, readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE);

/** `POST /v1/organizations/merge`: create or update 1 to 100 organizations. */
export const handler = apiHandler(
  findRoute('POST /v1/organizations/merge'),
  { ...http, body: OrganizationMergeRequest },
  async ({ body, tenant }) => {
    const organizations = await mergeOrganizations(body, { tenant, store });
    // Until asynchronous ingestion lands, `async: true` is ingested at once.
    return {
      body: {
        organizations: body.async ? organizations.map(() => ({ status: 'queued' })) : organizations,
      },
    };
  },
);
