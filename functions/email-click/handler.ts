import { followClick } from '../../shared/domain/email/links.js';
import { publicRoute } from '../../shared/http/api-handler.js';
import { createLinkRuntime } from '../../shared/http/link-runtime.js';
import { findRoute } from '../../shared/routes.js';

const ports = createLinkRuntime();

/** `GET /t/c?t=…`: a tracked link; the click is recorded, then 302 to the stored destination. */
export const handler = publicRoute(findRoute('GET /t/c'), async (event) => ({
  statusCode: 302,
  headers: {
    location: await followClick(event.queryStringParameters?.t, await ports()),
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  },
  body: '',
}));
