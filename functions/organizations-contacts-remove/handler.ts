import { DynamoMembershipStore } from '../../shared/adapters/membership-store.js';
import { PeopleEnv, readEnv } from '../../shared/config/env.js';
import {
  AccountMembershipRequest,
  membershipOf,
} from '../../shared/domain/organizations/accounts.js';
import { removeMembers, MembershipRequest } from '../../shared/domain/organizations/memberships.js';
import { apiHandler, routeHandlers } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { EmptyResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const env = readEnv(PeopleEnv.pick({ PEOPLE_TABLE: true, ORGANIZATIONS_TABLE: true }));
const store = new DynamoMembershipStore(db, {
  people: env.PEOPLE_TABLE,
  organizations: env.ORGANIZATIONS_TABLE,
});

/**
 * `PUT /v1/organizations/contacts/remove`: unlink people from an organization;
 * `PUT /v1/accounts/contacts/remove`: the same, in either vocabulary.
 */
export const handler = routeHandlers({
  'PUT /v1/organizations/contacts/remove': apiHandler(
    findRoute('PUT /v1/organizations/contacts/remove'),
    { ...http, body: MembershipRequest, response: EmptyResponse },
    async ({ body, tenant }) => {
      await removeMembers(body, tenant, store);
      return { body: {} };
    },
  ),
  'PUT /v1/accounts/contacts/remove': apiHandler(
    findRoute('PUT /v1/accounts/contacts/remove'),
    { ...http, body: AccountMembershipRequest, response: EmptyResponse },
    async ({ body, tenant }) => {
      const { request, names } = membershipOf(body);
      await removeMembers(request, tenant, store, names);
      return { body: {} };
    },
  ),
});
