import { getPeopleByIds, PersonGetByIdsRequest } from '../../shared/domain/people/person-get.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonGetByIdsResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = createPeopleStore(db);

/** `POST /v1/person/get-by-ids`: up to 100 people by ID, keyed by ID. */
export const handler = apiHandler(
  findRoute('POST /v1/person/get-by-ids'),
  { ...http, body: PersonGetByIdsRequest, response: PersonGetByIdsResponse },
  async ({ body, tenant }) => ({ body: await getPeopleByIds(body, tenant, store) }),
);
