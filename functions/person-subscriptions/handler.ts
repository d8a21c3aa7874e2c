import {
  getSubscriptions,
  PersonSubscriptionsRequest,
} from '../../shared/domain/people/person-subscriptions.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonSubscriptionsResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = createPeopleStore(db);

/** `POST /v1/person/subscriptions`: the email and SMS permissions of 1 to 100 people. */
export const handler = apiHandler(
  findRoute('POST /v1/person/subscriptions'),
  { ...http, body: PersonSubscriptionsRequest, response: PersonSubscriptionsResponse },
  async ({ body, tenant }) => ({ body: await getSubscriptions(body, tenant, store) }),
);
