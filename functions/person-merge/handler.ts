import { acceptIngest } from '../../shared/domain/ingest/ingest.js';
import { mergePeople, preparePeopleMerge } from '../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../shared/domain/people/merge-request.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import {
  createApiRuntime,
  createIngestPorts,
  createLocationServices,
  createPeopleStore,
  createSuppressionList,
} from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonMergeResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = createPeopleStore(db);
const location = createLocationServices(store);
const ingest = createIngestPorts(db);
const suppression = createSuppressionList(db);

/** `POST /v1/person/merge`: create or update 1 to 100 people (or queue them: `async`). */
export const handler = apiHandler(
  findRoute('POST /v1/person/merge'),
  { ...http, body: PersonMergeRequest, response: PersonMergeResponse },
  async ({ body, tenant }) => ({
    body: body.async
      ? await acceptIngest(
          {
            kind: 'person-merge',
            body,
            records: body.people.length,
            check: () => preparePeopleMerge(body, tenant),
          },
          tenant,
          ingest,
        )
      : { people: await mergePeople(body, { tenant, store, location, suppression }) },
  }),
);
