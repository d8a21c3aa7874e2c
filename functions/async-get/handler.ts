import { DynamoRequestStore } from '../../shared/adapters/request-store.js';
import { IngestEnv, readEnv } from '../../shared/config/env.js';
import { AsyncGetRequest, getAsyncRequest } from '../../shared/domain/ingest/request-status.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AsyncGetResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const requests = new DynamoRequestStore(
  db,
  readEnv(IngestEnv.pick({ REQUESTS_TABLE: true })).REQUESTS_TABLE,
);

/** `POST /v1/async/get`: the state of an asynchronous request, and its answer when done. */
export const handler = apiHandler(
  findRoute('POST /v1/async/get'),
  { ...http, body: AsyncGetRequest, response: AsyncGetResponse },
  async ({ body, tenant }) => ({
    body: await getAsyncRequest(body, tenant.instance.id, requests),
  }),
);
