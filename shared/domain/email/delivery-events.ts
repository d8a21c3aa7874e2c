import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ActivityToWrite } from '../activities/record-activities.js';
import { logger } from '../../lib/logger.js';
import { acceptanceOf, MESSAGE_TAG, PROBE_TAG, type Acceptance } from './deliver.js';
import { emailActivity } from './email-activities.js';
import type { EmailTally } from './email-tallies.js';
import type { EmailEvent, EmailRecord, EmailState } from './messages.js';

/**
 * SES events (configuration-set event publishing, through SNS and SQS) applied to the
 * emails they name (by the `cdp_message` tag the worker sets). SNS and SQS deliver each at
 * least once, in any order; each effect is applied once and never undoes a later one.
 *
 * - A hard bounce or a complaint suppresses the addresses it is about first, whether or not
 *   the email is still there: suppression is about the address, and erasure keeps it (as a
 *   hash), so the next person with that address is not emailed either.
 * - Every event of a message SES took (`Send`, `Delivery`, `Bounce`, `Complaint`) proves it
 *   went: an email still waiting for that answer (`sending`, failed with an unknown outcome,
 *   even `queued`) becomes `sent` with its SES message ID and `act::s`, and one an event
 *   overtook (a bounce before the worker recorded the send) gets what it lacks.
 * - A delivery, bounce or complaint is about the addresses it names: the email's own
 *   recipient moves the email's state (`bounced`, `complained`), records `act::b` and, for a
 *   complaint, unsubscribes the person; a cc address gets an event naming it and its
 *   suppression, nothing more. Each is applied once per event type, SES message and address.
 * - A transient bounce is only recorded; `Reject` and `Rendering Failure` fail the email.
 */
const Envelope = z.object({ Type: z.string(), Message: z.string() });

const SesEvent = z.object({
  eventType: z.string().optional(),
  notificationType: z.string().optional(),
  mail: z.object({
    messageId: z.string(),
    timestamp: z.string().optional(),
    tags: z.record(z.string(), z.array(z.string())).optional(),
  }),
  bounce: z
    .object({
      bounceType: z.string(),
      bounceSubType: z.string().optional(),
      bouncedRecipients: z.array(z.object({ emailAddress: z.string() })).default([]),
      timestamp: z.string().optional(),
    })
    .optional(),
  complaint: z
    .object({
      complainedRecipients: z.array(z.object({ emailAddress: z.string() })).default([]),
      complaintFeedbackType: z.string().optional(),
      timestamp: z.string().optional(),
    })
    .optional(),
  delivery: z
    .object({ timestamp: z.string().optional(), recipients: z.array(z.string()).optional() })
    .optional(),
});
export type SesEvent = z.infer<typeof SesEvent>;

export interface EventStore {
  get(instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>>;
  recordEvent(
    instanceId: string,
    messageId: string,
    key: string,
    event: EmailEvent,
    move?: { from: EmailState[]; to: EmailState; error?: string },
    /** The day's counter the event adds one to, once (email-tallies.ts). */
    tally?: EmailTally,
  ): Promise<boolean>;
  suppress(
    instanceId: string,
    address: string,
    reason: 'bounce' | 'complaint',
    messageId: string,
    at: string,
  ): Promise<void>;
  recordAcceptance(instanceId: string, messageId: string, acceptance: Acceptance): Promise<boolean>;
}

export interface EventPorts {
  store: EventStore;
  writeActivity(instanceId: string, activity: ActivityToWrite): Promise<void>;
  unsubscribe(instanceId: string, personId: string, context: string): Promise<boolean>;
  /**
   * Hears of each `Send` event once it is applied, with SES's acceptance time: the events
   * watermark that proves an email with an unknown outcome was not sent (deliver.ts).
   */
  sendApplied?(acceptedAt: number): Promise<void>;
}

/** The SES event an SQS message carries (an SNS notification, or the event itself). */
export function parseSesEvent(body: string): SesEvent {
  const parsed: unknown = JSON.parse(body);
  const envelope = Envelope.safeParse(parsed);
  return SesEvent.parse(envelope.success ? JSON.parse(envelope.data.Message) : parsed);
}

/**
 * The email an SQS message's SES event is about (its `cdp_message` tag), so that the events of
 * one email are applied in order; undefined for a message that is not a readable event of ours.
 */
export function emailOfEvent(body: string): string | undefined {
  try {
    return parseSesEvent(body).mail.tags?.[MESSAGE_TAG]?.[0];
  } catch {
    return undefined;
  }
}

export async function applySesEvent(event: SesEvent, ports: EventPorts): Promise<string> {
  const type = event.eventType ?? event.notificationType ?? '';
  const outcome = await applyToEmail(event, type, ports);
  if (type === 'Send' && outcome !== 'not ours') {
    const acceptedAt = Date.parse(event.mail.timestamp ?? '');
    if (Number.isFinite(acceptedAt)) await ports.sendApplied?.(acceptedAt);
  }
  return outcome;
}

async function applyToEmail(event: SesEvent, type: string, ports: EventPorts): Promise<string> {
  if (event.mail.tags?.[PROBE_TAG]?.[0] !== undefined) return 'probe';
  const tag = event.mail.tags?.[MESSAGE_TAG]?.[0];
  const split = tag?.lastIndexOf('_') ?? -1;
  if (!tag || split < 1) return 'not ours';
  const instanceId = tag.slice(0, split);
  const messageId = tag.slice(split + 1);
  const sesMessageId = event.mail.messageId;
  const at = new Date(
    event.bounce?.timestamp ??
      event.complaint?.timestamp ??
      event.delivery?.timestamp ??
      event.mail.timestamp ??
      Date.now(),
  );
  const hardBounce = type === 'Bounce' && event.bounce?.bounceType === 'Permanent';
  const affected = hardBounce
    ? (event.bounce?.bouncedRecipients ?? []).map((recipient) => recipient.emailAddress)
    : type === 'Complaint'
      ? (event.complaint?.complainedRecipients ?? []).map((recipient) => recipient.emailAddress)
      : [];
  for (const address of affected) {
    await ports.store.suppress(
      instanceId,
      address,
      hardBounce ? 'bounce' : 'complaint',
      messageId,
      at.toISOString(),
    );
  }

  let record = (await ports.store.get(instanceId, [messageId])).get(messageId);
  if (!record) {
    logger.warn('An SES event names an unknown email', { instanceId, messageId, type });
    return affected.length > 0 ? 'suppressed; the email is gone' : 'unknown email';
  }
  if (TOOK_IT.has(type)) record = await confirmSend(record, sesMessageId, at, ports.store);
  const email = record;
  const own = (address: string) => sameAddress(address, email.to);

  const perRecipient = async (
    addresses: string[],
    entry: Omit<EmailEvent, 'at' | 'recipient'>,
    move?: { from: EmailState[]; to: EmailState },
    own?: () => Promise<void>,
    tally?: EmailTally,
  ) => {
    for (const address of addresses) {
      const mine = sameAddress(address, email.to);
      if (mine && own) await own();
      await recordOnce(
        ports.store,
        instanceId,
        messageId,
        `${type}#${sesMessageId}#${addressKey(address)}`,
        { ...entry, at: at.toISOString(), recipient: address.trim().toLowerCase() },
        mine ? move : undefined,
        // An email counts as bounced or complained about by its own recipient, once.
        mine ? tally : undefined,
      );
    }
  };

  switch (type) {
    case 'Send': {
      return 'sent';
    }
    case 'Delivery':
      await perRecipient(event.delivery?.recipients ?? [email.to], { type: 'delivered' });
      return 'delivered';
    case 'Bounce': {
      const recipients = (event.bounce?.bouncedRecipients ?? []).map((r) => r.emailAddress);
      if (!hardBounce) {
        await perRecipient(recipients, {
          type: 'soft_bounce',
          detail: event.bounce?.bounceSubType ?? 'Transient',
        });
        return 'soft bounce';
      }
      await perRecipient(
        recipients,
        { type: 'bounced', detail: event.bounce?.bounceSubType ?? 'General' },
        { from: ['queued', 'sending', 'sent', 'failed'], to: 'bounced' },
        () => ports.writeActivity(instanceId, bounceActivity(email, at, type, 'hard bounce')),
        'bounced',
      );
      return recipients.some(own) ? 'bounced' : 'a cc address bounced';
    }
    case 'Complaint': {
      await perRecipient(
        affected,
        { type: 'complained', detail: event.complaint?.complaintFeedbackType ?? 'abuse' },
        { from: ['queued', 'sending', 'sent', 'failed', 'bounced'], to: 'complained' },
        async () => {
          await ports.writeActivity(instanceId, bounceActivity(email, at, type, 'complaint'));
          await ports.unsubscribe(
            instanceId,
            email.person_id,
            `Marked "${email.email_name}" as spam (complaint)`,
          );
        },
        'complained',
      );
      return affected.some(own) ? 'complained' : 'a cc address complained';
    }
    case 'Reject':
    case 'Rendering Failure':
      await recordOnce(
        ports.store,
        instanceId,
        messageId,
        `${type}#${sesMessageId}`,
        { type: 'rejected', detail: type, at: at.toISOString() },
        { from: ['sending', 'sent'], to: 'failed', error: `SES: ${type}` },
      );
      return 'failed';
    default:
      return 'ignored';
  }
}

/** Events SES publishes only for a message it took. */
const TOOK_IT = new Set(['Send', 'Delivery', 'Bounce', 'Complaint']);

/**
 * Records that SES took the email, where the email does not know it yet (deliver.ts,
 * `acceptanceOf`); answers the email as it now stands.
 */
async function confirmSend(
  record: EmailRecord,
  sesMessageId: string,
  at: Date,
  store: EventStore,
): Promise<EmailRecord> {
  let current = record;
  const startedAt = new Date(record.sending_at ?? at.getTime());
  for (let round = 0; round < 5; round += 1) {
    const acceptance = acceptanceOf(current, sesMessageId, startedAt);
    if (!acceptance) return current;
    if (await store.recordAcceptance(current.instance_id, current.message_id, acceptance)) {
      return {
        ...current,
        ses_message_id: sesMessageId,
        ...(acceptance.promote ? { status: 'sent' as const } : {}),
      };
    }
    // The email moved meanwhile (the worker recorded the send, another event): read again.
    const fresh = (await store.get(current.instance_id, [current.message_id])).get(
      current.message_id,
    );
    if (!fresh) return current;
    current = fresh;
  }
  throw new Error('The email kept changing while its send was being confirmed; retrying');
}

function bounceActivity(record: EmailRecord, at: Date, type: string, bounceType: string) {
  return emailActivity('bounced', record, at, type, { 'str::bounce-type': bounceType });
}

function sameAddress(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/** A short key for an address in the email's `seen` set (the address itself is in the event). */
function addressKey(address: string): string {
  return createHash('sha256').update(address.trim().toLowerCase()).digest('hex').slice(0, 16);
}

/** Records the event once; where the state cannot move (it moved on), the event still counts. */
async function recordOnce(
  store: EventStore,
  instanceId: string,
  messageId: string,
  key: string,
  event: EmailEvent,
  move?: { from: EmailState[]; to: EmailState; error?: string },
  tally?: EmailTally,
): Promise<void> {
  if (move && (await store.recordEvent(instanceId, messageId, key, event, move, tally))) return;
  await store.recordEvent(instanceId, messageId, key, event, undefined, tally);
}
