import { DynamoMembershipStore } from '../../shared/adapters/membership-store.js';
import { PeopleEnv, readEnv } from '../../shared/config/env.js';
import { removeMembers, MembershipRequest } from '../../shared/domain/organizations/memberships.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { EmptyResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const env = readEnv(PeopleEnv.pick({ PEOPLE_TABLE: true, ORGANIZATIONS_TABLE: true }));
const store = new DynamoMembershipStore(db, {
  people: env.PEOPLE_TABLE,
  organizations: env.ORGANIZATIONS_TABLE,
});

/** `PUT /v1/organizations/contacts/remove`: unlink people from an organization. */
export const handler = apiHandler(
  findRoute('PUT /v1/organizations/contacts/remove'),
  { ...http, body: MembershipRequest, response: EmptyResponse },
  async ({ body, tenant }) => {
    await removeMembers(body, tenant, store);
    return { body: {} };
  },
);
