import { DynamoOffsetCheckpoints } from '../../shared/adapters/offset-checkpoints.js';
import { ApiEnv, readEnv } from '../../shared/config/env.js';
import {
  getPersonActivities,
  PersonActivitiesRequest,
} from '../../shared/domain/people/person-activities.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonActivitiesResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const store = createPeopleStore(db);
const requests = readEnv(ApiEnv).REQUESTS_TABLE;
const checkpoints = requests ? new DynamoOffsetCheckpoints(db, requests) : undefined;

/** `POST /v1/person/get/activities`: a person's activities, newest first. */
export const handler = apiHandler(
  findRoute('POST /v1/person/get/activities'),
  { ...http, body: PersonActivitiesRequest, response: PersonActivitiesResponse },
  async ({ body, tenant }) => {
    const { instance } = tenant;
    const names = new Map(
      instance.activities.map((definition) => [definition.id, definition.name]),
    );
    return {
      body: await getPersonActivities(body, instance.id, {
        reader: store,
        cursors: await cursors(instance.id, 'person/get/activities'),
        ...(checkpoints ? { checkpoints } : {}),
        ...(instance.timezone ? { timeZone: instance.timezone } : {}),
        definitionName: (fieldId) => names.get(fieldId),
      }),
    };
  },
);
