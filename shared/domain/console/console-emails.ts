import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import type { EmailReader } from '../email/email-status.js';
import { visibleStatus, type EmailLog, type EmailRecord } from '../email/messages.js';
import type { Region } from '../regions.js';
import {
  type ConsoleCaller,
  ConsoleInstanceId,
  type ConsoleStore,
  managedInstance,
} from './console-keys.js';

/**
 * Transactional emails in the console: the instance's log, newest first (or one person's,
 * from the references kept with each email), and one email's HTML as it was written, for a
 * preview. Reads only, each bounded by its page: the log's shards and the person's
 * references are queried for a page, then its emails read in one batch.
 */
const instanceId = ConsoleInstanceId;
const messageId = z.string().regex(ID_PATTERN, 'expected a message ID (24 hexadecimal characters)');

export const ConsoleEmailsRequest = z.strictObject({
  instance_id: instanceId,
  person_id: z
    .string()
    .regex(ID_PATTERN, 'expected a person ID (24 hexadecimal characters)')
    .optional(),
  limit: z.number().int().min(1).max(100).default(25),
  before: messageId.optional().meta({ description: 'The `next` of the previous page' }),
});
export const ConsoleEmailPreviewRequest = z.strictObject({
  instance_id: instanceId,
  message_id: messageId,
});

export type EmailLogReader = EmailLog & Pick<EmailReader, 'get'>;

/** One email as the console lists it: its state and what happened to it, counted. */
export function emailSummary(record: EmailRecord) {
  const count = (type: string) => record.events.filter((event) => event.type === type).length;
  const last = (type: string) => record.events.findLast((event) => event.type === type);
  const bounce = last('bounced');
  const complaint = last('complained');
  return {
    message_id: record.message_id,
    person_id: record.person_id,
    to: record.to,
    subject: record.subject ?? null,
    email_name: record.email_name,
    status: visibleStatus(record.status),
    error: record.error ?? null,
    created_at: record.created_at,
    updated_at: record.updated_at,
    opens: count('opened'),
    clicks: count('clicked'),
    bounce: bounce ? { at: bounce.at, detail: bounce.detail ?? null } : null,
    complaint: complaint ? { at: complaint.at, detail: complaint.detail ?? null } : null,
  };
}

/** A page of the instance's emails (or one person's), newest first; `next` continues it. */
export async function emailsOf(
  store: Pick<ConsoleStore, 'getInstance'>,
  emails: EmailLogReader,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleEmailsRequest>,
) {
  const instance = await managedInstance(store, caller.user, region, request.instance_id);
  const query = {
    limit: request.limit,
    ...(request.before !== undefined ? { before: request.before } : {}),
  };
  const page =
    request.person_id === undefined
      ? await emails.recent(instance.id, query)
      : await emails.ofPerson(instance.id, request.person_id, query);
  return {
    instance_id: instance.id,
    emails: page.records.map(emailSummary),
    next: page.next ?? null,
  };
}

/**
 * An email's HTML as it was written (its links to their destinations, without the open pixel,
 * so that a preview records no open and no click), with its summary. `html` is null when it
 * is no longer kept (30 days), was too large to keep, or was never built (suppressed).
 */
export async function emailPreviewOf(
  store: Pick<ConsoleStore, 'getInstance'>,
  emails: EmailLogReader,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleEmailPreviewRequest>,
) {
  const instance = await managedInstance(store, caller.user, region, request.instance_id);
  const [records, html] = await Promise.all([
    emails.get(instance.id, [request.message_id]),
    emails.preview(instance.id, request.message_id),
  ]);
  const record = records.get(request.message_id);
  if (!record) {
    throw new NotFoundError(`message_id: no email ${request.message_id} in this instance`, [
      { field: 'message_id', error: 'not found' },
    ]);
  }
  return { instance_id: instance.id, email: emailSummary(record), html: html ?? null };
}
