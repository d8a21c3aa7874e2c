import { maskedAddress, unsubscribeTarget } from '../../shared/domain/email/links.js';
import { publicRoute } from '../../shared/http/api-handler.js';
import { escapeHtml, htmlPage } from '../../shared/http/pages.js';
import { createLinkRuntime } from '../../shared/http/link-runtime.js';
import { findRoute } from '../../shared/routes.js';

const ports = createLinkRuntime();

/**
 * `GET /t/u?t=…`: the confirmation page of an unsubscribe link. It changes nothing (mail
 * scanners follow links); its button POSTs to the same address.
 */
export const handler = publicRoute(findRoute('GET /t/u'), async (event) => {
  const token = event.queryStringParameters?.t ?? '';
  const record = await unsubscribeTarget(token, await ports());
  return htmlPage(
    'Unsubscribe',
    `<p>Stop receiving email at <strong>${escapeHtml(maskedAddress(record.to))}</strong>?</p>
<form method="post" action="?t=${encodeURIComponent(token)}">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button>
</form>`,
  );
});
