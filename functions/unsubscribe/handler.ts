import { maskedAddress, unsubscribeByLink } from '../../shared/domain/email/links.js';
import { publicRoute } from '../../shared/http/api-handler.js';
import { escapeHtml, htmlPage } from '../../shared/http/pages.js';
import { createLinkRuntime } from '../../shared/http/link-runtime.js';
import { findRoute } from '../../shared/routes.js';

const ports = createLinkRuntime({ people: true });

/**
 * `POST /t/u?t=…`: unsubscribes the email's person: RFC 8058 one-click
 * (`List-Unsubscribe=One-Click` from the mailbox provider) or the confirmation page's button.
 */
export const handler = publicRoute(findRoute('POST /t/u'), async (event) => {
  const record = await unsubscribeByLink(event.queryStringParameters?.t, await ports());
  return htmlPage(
    'Unsubscribed',
    `<p><strong>${escapeHtml(maskedAddress(record.to))}</strong> will no longer receive email from us.</p>`,
  );
});
