import {
  AudienceSubscribeRequest,
  subscribeToAudience,
} from '../../shared/domain/audiences/subscribe.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AudienceSubscribeResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { store, memberships } = createAudienceServices(db);
const people = createPeopleStore(db);

/** `PUT /v1/audience/subscribe`: members' email and SMS choices for one audience. */
export const handler = apiHandler(
  findRoute('PUT /v1/audience/subscribe'),
  { ...http, body: AudienceSubscribeRequest, response: AudienceSubscribeResponse },
  async ({ body, tenant }) => ({
    body: await subscribeToAudience(body, tenant, { audiences: store, people, memberships }),
  }),
);
