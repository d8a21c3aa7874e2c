import { recordOpen } from '../../shared/domain/email/links.js';
import { publicRoute } from '../../shared/http/api-handler.js';
import { createLinkRuntime } from '../../shared/http/link-runtime.js';
import { findRoute } from '../../shared/routes.js';

const ports = createLinkRuntime();
/** A transparent 1×1 GIF. */
const PIXEL = 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';

/** `GET /t/o?t=…`: the open pixel; the open is recorded, the answer is the image. */
export const handler = publicRoute(findRoute('GET /t/o'), async (event) => {
  await recordOpen(event.queryStringParameters?.t, await ports());
  return {
    statusCode: 200,
    headers: { 'content-type': 'image/gif', 'cache-control': 'no-store, max-age=0' },
    body: PIXEL,
    isBase64Encoded: true,
  };
});
