import { mergePeople } from '../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../shared/domain/people/merge-request.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import {
  createApiRuntime,
  createLocationServices,
  createPeopleStore,
} from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, db } = createApiRuntime();
const store = createPeopleStore(db);
const location = createLocationServices(store);

/** `POST /v1/person/merge`: create or update 1 to 100 people. */
export const handler = apiHandler(
  findRoute('POST /v1/person/merge'),
  { ...http, body: PersonMergeRequest },
  async ({ body, tenant }) => {
    const people = await mergePeople(body, { tenant, store, location });
    // Until asynchronous ingestion lands, `async: true` is ingested at once and answered
    // in the queued shape clients expect.
    return { body: { people: body.async ? people.map(() => ({ status: 'queued' })) : people } };
  },
);
