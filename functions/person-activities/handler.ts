import {
  getPersonActivities,
  PersonActivitiesRequest,
} from '../../shared/domain/people/person-activities.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { createFeedPorts } from '../../shared/http/feed-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonActivitiesResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const store = createPeopleStore(db);
const feedPorts = createFeedPorts(db);

/** `POST /v1/person/get/activities`: a person's activities, newest first. */
export const handler = apiHandler(
  findRoute('POST /v1/person/get/activities'),
  { ...http, body: PersonActivitiesRequest, response: PersonActivitiesResponse },
  async ({ body, tenant: { instance } }) => ({
    body: await getPersonActivities(
      body,
      instance.id,
      feedPorts(instance, store, await cursors(instance.id, 'person/get/activities')),
    ),
  }),
);
