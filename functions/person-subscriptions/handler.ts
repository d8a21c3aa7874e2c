import {
  getSubscriptions,
  PersonSubscriptionsRequest,
} from '../../shared/domain/people/person-subscriptions.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonSubscriptionsResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = createPeopleStore(db);
const audiences = createAudienceServices(db);

/** `POST /v1/person/subscriptions`: permissions and audience memberships of 1 to 100 people. */
export const handler = apiHandler(
  findRoute('POST /v1/person/subscriptions'),
  { ...http, body: PersonSubscriptionsRequest, response: PersonSubscriptionsResponse },
  async ({ body, tenant }) => ({
    body: await getSubscriptions(body, tenant, store, {
      names: async (instanceId) =>
        new Map(
          (await audiences.store.list(instanceId)).map((audience) => [audience.id, audience.name]),
        ),
      membershipsOf: (instanceId, ids) => audiences.memberships.membershipsOf(instanceId, ids),
    }),
  }),
);
