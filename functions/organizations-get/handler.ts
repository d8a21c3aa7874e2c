import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import {
  getOrganizations,
  OrganizationGetRequest,
} from '../../shared/domain/organizations/organization-get.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { OrganizationGetResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const store = new DynamoOrganizationStore(db, readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE);

/** `POST /v1/organizations/get`: organizations in pages, with field selection and search. */
export const handler = apiHandler(
  findRoute('POST /v1/organizations/get'),
  { ...http, body: OrganizationGetRequest, response: OrganizationGetResponse },
  async ({ body, tenant }) => ({
    body: await getOrganizations(body, tenant, store, await cursors(tenant.instance.id)),
  }),
);
