import {
  getPeople,
  PersonGetRequest,
  type AudienceMembers,
} from '../../shared/domain/people/person-get.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonGetResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const store = createPeopleStore(db);
const { store: audienceStore, memberships } = createAudienceServices(db);
const audiences: AudienceMembers = {
  size: async (instanceId, audienceId) => {
    const audience = await audienceStore.get(instanceId, audienceId);
    if (!audience) return undefined;
    const counters = await audienceStore.counters(instanceId, [audience], Date.now());
    return counters.get(audienceId)?.members ?? 0;
  },
  membersPage: async (...args) => {
    const page = await memberships.membersPage(...args);
    return { keys: page.keys, hasMore: page.hasMore };
  },
};

/** `POST /v1/person/get`: people in pages, with field selection and the instance's totals. */
export const handler = apiHandler(
  findRoute('POST /v1/person/get'),
  { ...http, body: PersonGetRequest, response: PersonGetResponse },
  async ({ body, tenant }) => ({
    body: await getPeople(body, tenant, store, await cursors(tenant.instance.id), audiences),
  }),
);
