import { preferencesOf } from '../../shared/domain/audiences/preferences.js';
import { maskedAddress, unsubscribeTarget } from '../../shared/domain/email/links.js';
import { publicRoute } from '../../shared/http/api-handler.js';
import { escapeHtml, htmlPage } from '../../shared/http/pages.js';
import { createLinkRuntime } from '../../shared/http/link-runtime.js';
import { createDocumentClient } from '../../shared/adapters/aws-clients.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';

const ports = createLinkRuntime();
const audiences = createAudienceServices(createDocumentClient());

/**
 * `GET /t/u?t=…`: the confirmation page of an unsubscribe link, and the preference center:
 * the public audiences the person belongs to, each with a button that unsubscribes from it
 * alone. It changes nothing (mail scanners follow links); its buttons POST to the same
 * address (`&audience=<id>` for one audience).
 */
export const handler = publicRoute(findRoute('GET /t/u'), async (event) => {
  const token = event.queryStringParameters?.t ?? '';
  const record = await unsubscribeTarget(token, await ports());
  const lists = await preferencesOf(record.instance_id, record.person_id, {
    audiences: audiences.store,
    memberships: audiences.memberships,
  });
  const action = `?t=${encodeURIComponent(token)}`;
  const preferences = lists
    .map(
      (list) =>
        `<li><strong>${escapeHtml(list.name)}</strong>${
          list.description ? ` <span>${escapeHtml(list.description)}</span>` : ''
        } ${
          list.subscribed
            ? `<form method="post" action="${action}&amp;audience=${list.audience_id}"><button type="submit">Unsubscribe from this list</button></form>`
            : '<em>unsubscribed</em>'
        }</li>`,
    )
    .join('\n');
  return htmlPage(
    'Unsubscribe',
    `<p>Stop receiving email at <strong>${escapeHtml(maskedAddress(record.to))}</strong>?</p>
${lists.length > 0 ? `<p>Your lists:</p>\n<ul class="lists">\n${preferences}\n</ul>\n<p>Or stop all email from us:</p>` : ''}
<form method="post" action="${action}">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe${lists.length > 0 ? ' from all' : ''}</button>
</form>`,
  );
});
