import { unsubscribeFromAudience } from '../../shared/domain/audiences/preferences.js';
import {
  maskedAddress,
  unsubscribeByLink,
  unsubscribeTarget,
} from '../../shared/domain/email/links.js';
import { publicRoute } from '../../shared/http/api-handler.js';
import { escapeHtml, htmlPage } from '../../shared/http/pages.js';
import { createLinkRuntime } from '../../shared/http/link-runtime.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';
import { findRoute } from '../../shared/routes.js';

const ports = createLinkRuntime({ people: true });
const { db } = createApiRuntime();
const audiences = createAudienceServices(db);
const people = createPeopleStore(db);

/**
 * `POST /t/u?t=…`: unsubscribes the email's person: RFC 8058 one-click
 * (`List-Unsubscribe=One-Click` from the mailbox provider) or the confirmation page's button.
 * With `&audience=<id>` (the preference center's buttons) from that public audience only.
 */
export const handler = publicRoute(findRoute('POST /t/u'), async (event) => {
  const audienceId = event.queryStringParameters?.audience;
  if (audienceId !== undefined) {
    const record = await unsubscribeTarget(event.queryStringParameters?.t, await ports());
    const list = await unsubscribeFromAudience(record.instance_id, record.person_id, audienceId, {
      audiences: audiences.store,
      memberships: audiences.memberships,
      people,
    });
    return htmlPage(
      'Unsubscribed',
      `<p><strong>${escapeHtml(maskedAddress(record.to))}</strong> will no longer receive <strong>${escapeHtml(list.name)}</strong>.</p>`,
    );
  }
  const record = await unsubscribeByLink(event.queryStringParameters?.t, await ports());
  return htmlPage(
    'Unsubscribed',
    `<p><strong>${escapeHtml(maskedAddress(record.to))}</strong> will no longer receive email from us.</p>`,
  );
});
