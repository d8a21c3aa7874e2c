import { DynamoActivityStore } from '../../shared/adapters/activity-store.js';
import { DynamoConfigStore } from '../../shared/adapters/config-store.js';
import { PeopleEnv, readEnv } from '../../shared/config/env.js';
import {
  ActivitiesCreateRequest,
  recordActivities,
} from '../../shared/domain/activities/record-activities.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import {
  createApiRuntime,
  createLocationServices,
  createPeopleStore,
} from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, db, env } = createApiRuntime();
const tables = readEnv(PeopleEnv);
const people = createPeopleStore(db);
const location = createLocationServices(people);
const activities = new DynamoActivityStore(db, {
  activities: tables.ACTIVITIES_TABLE,
  people: tables.PEOPLE_TABLE,
});
const config = new DynamoConfigStore(db, env.CONFIG_TABLE);

/** `POST /v1/activities/create`: record 1 to 100 activities against people. */
export const handler = apiHandler(
  findRoute('POST /v1/activities/create'),
  { ...http, body: ActivitiesCreateRequest },
  async ({ body, tenant }) => {
    const entries = await recordActivities(body, {
      tenant,
      people,
      activities,
      location,
      freshDefinitions: async () =>
        (await config.getInstance(tenant.instance.id))?.activities ?? [],
    });
    // Until asynchronous ingestion lands, `async: true` is recorded at once.
    return {
      body: {
        activities: body.async
          ? entries.map(() => ({ person_status: 'queued', status: 'queued' }))
          : entries,
      },
    };
  },
);
