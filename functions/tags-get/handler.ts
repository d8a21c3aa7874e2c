import { DynamoTagStore } from '../../shared/adapters/tag-store.js';
import { TransactionBatcher } from '../../shared/adapters/transaction-batcher.js';
import { PeopleEnv, readEnv } from '../../shared/config/env.js';
import { getTags, TagsGetRequest } from '../../shared/domain/people/tags.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { TagsResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const { PEOPLE_TABLE } = readEnv(PeopleEnv.pick({ PEOPLE_TABLE: true }));
const tags = new DynamoTagStore(db, PEOPLE_TABLE, new TransactionBatcher(db));

/** `POST /v1/tags/get`: the instance's tags with their counts, a page at a time (tags.ts). */
export const handler = apiHandler(
  findRoute('POST /v1/tags/get'),
  { ...http, body: TagsGetRequest, response: TagsResponse },
  async ({ body, tenant }) => {
    const page = await getTags(body, tenant, tags);
    return {
      body: page.tags,
      ...(page.next === undefined ? {} : { headers: { 'x-next-cursor': page.next } }),
    };
  },
);
