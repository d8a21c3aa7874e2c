import document from '../../docs/openapi.json' with { type: 'json' };
import { readEnv } from '../../shared/config/env.js';
import { publicRoute } from '../../shared/http/api-handler.js';
import { ReferenceEnv, servedDocument } from '../../shared/http/reference.js';
import { findRoute } from '../../shared/routes.js';

/** Built once: the committed document (`npm run openapi`) with this deployment's servers. */
const served = JSON.stringify(servedDocument(document, readEnv(ReferenceEnv)));

/** `GET /openapi.json`: the OpenAPI 3.1 document of the API; no key needed. */
export const handler = publicRoute(findRoute('GET /openapi.json'), () =>
  Promise.resolve({
    statusCode: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'public, max-age=300',
    },
    body: served,
  }),
);
