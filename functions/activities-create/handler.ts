import { DynamoActivityStore } from '../../shared/adapters/activity-store.js';
import { DynamoConfigStore } from '../../shared/adapters/config-store.js';
import { PeopleEnv, readEnv } from '../../shared/config/env.js';
import {
  ActivitiesCreateRequest,
  prepareActivities,
  recordActivities,
} from '../../shared/domain/activities/record-activities.js';
import { acceptIngest } from '../../shared/domain/ingest/ingest.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import {
  createApiRuntime,
  createIngestPorts,
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
const ingest = createIngestPorts(db);

/** `POST /v1/activities/create`: record 1 to 100 activities against people (or queue them). */
export const handler = apiHandler(
  findRoute('POST /v1/activities/create'),
  { ...http, body: ActivitiesCreateRequest },
  async ({ body, tenant }) => {
    const context = {
      tenant,
      people,
      activities,
      location,
      freshDefinitions: () => config.activityDefinitions(tenant.instance.id),
    };
    return {
      body: body.async
        ? await acceptIngest(
            {
              kind: 'activities-create',
              body,
              records: body.activities.length,
              check: () => prepareActivities(body, context, new Date()),
            },
            tenant,
            ingest,
          )
        : { activities: await recordActivities(body, context) },
    };
  },
);
