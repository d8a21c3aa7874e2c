import { getPeople, PersonGetRequest } from '../../shared/domain/people/person-get.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createListingPorts } from '../../shared/http/listing-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { PersonGetResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const ports = createListingPorts(db);

/** `POST /v1/person/get`: people in pages, with field selection and the instance's totals. */
export const handler = apiHandler(
  findRoute('POST /v1/person/get'),
  { ...http, body: PersonGetRequest, response: PersonGetResponse },
  async ({ body, tenant }) => ({
    body: await getPeople(body, tenant, ports, await cursors(tenant.instance.id, 'person/get')),
  }),
);
