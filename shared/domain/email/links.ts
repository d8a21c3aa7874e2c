import { randomUUID } from 'node:crypto';
import type { ActivityToWrite } from '../activities/record-activities.js';
import { NotFoundError } from '../errors.js';
import { logger } from '../../lib/logger.js';
import { emailActivity } from './email-activities.js';
import type { LinkPurpose, LinkSigner } from './link-tokens.js';
import type { EmailEvent, EmailRecord } from './messages.js';

/**
 * What the public links of an email do (DESIGN.md, Transactional email): a click records
 * `act::c` and redirects to the destination stored with the email (never one from the URL);
 * an open records `act::o`; an unsubscribe (POST only) sets `bol::p` false. A token that is
 * not signed for this purpose, or names no email, is a 404 that leads nowhere, the same
 * whatever was wrong (no oracle for which instances or emails exist); an expired one says so.
 *
 * Links can be replayed (mail scanners, proxies that fetch every image, a reader clicking
 * twice, or someone scripting a pixel): an open is recorded once per message, and a click
 * once per message and link, per `ENGAGEMENT_WINDOW_MS` (a conditional write on the email:
 * the window it was last recorded in). The redirect and the pixel are answered every time.
 */
export const ENGAGEMENT_WINDOW_MS = 3_600_000;

export interface LinkPorts {
  signer: LinkSigner;
  store: {
    get(instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>>;
    addEvent(instanceId: string, messageId: string, event: EmailEvent): Promise<void>;
    /**
     * Records an open or a click (`marker`: `o`, or `c<index>`) with its activity, unless one
     * was recorded in this `window` already; answers whether it was.
     */
    recordEngagement(
      instanceId: string,
      messageId: string,
      marker: string,
      window: number,
      activity: ActivityToWrite,
    ): Promise<boolean>;
    recordEvent(
      instanceId: string,
      messageId: string,
      key: string,
      event: EmailEvent,
    ): Promise<boolean>;
  };
  writeActivity(instanceId: string, activity: ActivityToWrite): Promise<void>;
  unsubscribe(instanceId: string, personId: string, context: string): Promise<boolean>;
  now?: () => Date;
}

const notFound = () => new NotFoundError('This link is not valid');

async function emailOf(purpose: LinkPurpose, token: unknown, ports: LinkPorts) {
  const contents = ports.signer.verify(purpose, token);
  if (!contents) throw notFound();
  if (contents.expired) throw new NotFoundError('This link has expired');
  const record = (await ports.store.get(contents.instanceId, [contents.messageId])).get(
    contents.messageId,
  );
  if (!record) throw notFound();
  return { record, index: contents.index };
}

/** What a `Location` header carries as it is: printable ASCII. */
const HEADER_SAFE = /^[\u0021-\u007e]+$/;

/**
 * Records an open or a click once per window: the activity and the window, in one
 * conditional write; then its event on the email (while it has room).
 */
async function recordEngagement(
  record: EmailRecord,
  marker: string,
  activity: ActivityToWrite,
  event: EmailEvent,
  ports: LinkPorts,
  at: Date,
): Promise<void> {
  const window = Math.floor(at.getTime() / ENGAGEMENT_WINDOW_MS);
  const first = await ports.store.recordEngagement(
    record.instance_id,
    record.message_id,
    marker,
    window,
    activity,
  );
  if (first) await ports.store.addEvent(record.instance_id, record.message_id, event);
}

/** A click: the destination to redirect to, once the click is recorded. */
export async function followClick(token: unknown, ports: LinkPorts): Promise<string> {
  const { record, index } = await emailOf('click', token, ports);
  const url = record.links[index];
  // A destination stored before such links were refused cannot be redirected to.
  if (url === undefined || !HEADER_SAFE.test(url)) throw notFound();
  const at = ports.now?.() ?? new Date();
  await recordEngagement(
    record,
    `c${index}`,
    emailActivity('clicked', record, at, randomUUID(), { 'str::url': url }),
    { type: 'clicked', at: at.toISOString(), url },
    ports,
    at,
  ).catch((error: unknown) => {
    // The reader reaches the destination even if the click cannot be recorded.
    logger.warn('A click was not recorded', {
      messageId: record.message_id,
      error: error as Error,
    });
  });
  return url;
}

export async function recordOpen(token: unknown, ports: LinkPorts): Promise<void> {
  const { record } = await emailOf('open', token, ports);
  const at = ports.now?.() ?? new Date();
  await recordEngagement(
    record,
    'o',
    emailActivity('opened', record, at, randomUUID()),
    { type: 'opened', at: at.toISOString() },
    ports,
    at,
  );
}

/** The email an unsubscribe link belongs to (the confirmation page changes nothing). */
export async function unsubscribeTarget(token: unknown, ports: LinkPorts): Promise<EmailRecord> {
  return (await emailOf('unsubscribe', token, ports)).record;
}

/** A one-click (or confirmed) unsubscribe. Repeating it changes nothing more. */
export async function unsubscribeByLink(token: unknown, ports: LinkPorts): Promise<EmailRecord> {
  const { record } = await emailOf('unsubscribe', token, ports);
  const at = ports.now?.() ?? new Date();
  await ports.unsubscribe(
    record.instance_id,
    record.person_id,
    `Unsubscribed with the link in the email "${record.email_name}"`,
  );
  await ports.store.recordEvent(record.instance_id, record.message_id, 'unsubscribe', {
    type: 'unsubscribed',
    at: at.toISOString(),
  });
  return record;
}

/** `jane.doe@example.com` → `j•••@example.com`: enough to recognise, not to harvest. */
export function maskedAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 1) return '•••';
  return `${address.slice(0, 1)}•••${address.slice(at)}`;
}
