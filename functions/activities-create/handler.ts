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
  createPeopleWriters,
} from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { ActivitiesCreateResponse } from '../../shared/api/schemas.js';

const { http, db, config } = createApiRuntime();
const { people, location, activities } = createPeopleWriters(db);
const ingest = createIngestPorts(db);

/** `POST /v1/activities/create`: record 1 to 100 activities against people (or queue them). */
export const handler = apiHandler(
  findRoute('POST /v1/activities/create'),
  { ...http, body: ActivitiesCreateRequest, response: ActivitiesCreateResponse },
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
