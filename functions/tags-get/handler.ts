import { DynamoTagStore } from '../../shared/adapters/tag-store.js';
import { TransactionBatcher } from '../../shared/adapters/transaction-batcher.js';
import { OrganizationsEnv, PeopleEnv, readEnv } from '../../shared/config/env.js';
import { getTags, TagsGetRequest } from '../../shared/domain/people/tags.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { TagsResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { PEOPLE_TABLE } = readEnv(PeopleEnv.pick({ PEOPLE_TABLE: true }));
const { ORGANIZATIONS_TABLE } = readEnv(OrganizationsEnv);
const batcher = new TransactionBatcher(db);
const listings = {
  people: new DynamoTagStore(db, PEOPLE_TABLE, batcher),
  organizations: new DynamoTagStore(db, ORGANIZATIONS_TABLE, batcher, 'OT'),
};

/** `POST /v1/tags/get`: people's then organizations' tags with their counts, a page at a time. */
export const handler = apiHandler(
  findRoute('POST /v1/tags/get'),
  { ...http, body: TagsGetRequest, response: TagsResponse },
  async ({ body, tenant }) => {
    const page = await getTags(body, tenant, listings);
    return {
      body: page.tags,
      ...(page.next === undefined ? {} : { headers: { 'x-next-cursor': page.next } }),
    };
  },
);
