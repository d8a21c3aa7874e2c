import { z } from 'zod';
import type { ActivityToWrite } from '../activities/record-activities.js';
import { logger } from '../../lib/logger.js';
import { MESSAGE_TAG, SEND_LEASE_MS } from './deliver.js';
import { emailActivity } from './email-activities.js';
import type { EmailEvent, EmailRecord, EmailState } from './messages.js';

/**
 * SES events (configuration-set event publishing, through SNS and SQS) applied to the
 * emails they name (by the `cdp_message` tag the worker sets). Each event type is applied
 * once per SES message (`<type>#<ses message id>`), and its effects are idempotent, so a
 * redelivered notification changes nothing:
 *
 * - `Send` confirms a send whose outcome the worker did not learn (`sending` past its
 *   attempt's lease, or `failed` as unknown → `sent`); while an attempt holds the email it
 *   is applied later.
 * - `Delivery` is recorded as an event.
 * - A permanent `Bounce` marks the email `bounced`, records `act::b`, and suppresses the address.
 * - A `Complaint` marks it `complained`, records `act::b`, suppresses the address and
 *   unsubscribes the person (`act::u-all` when that changes the permission).
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
  delivery: z.object({ timestamp: z.string().optional() }).optional(),
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
  ): Promise<boolean>;
  suppress(
    instanceId: string,
    address: string,
    reason: 'bounce' | 'complaint',
    messageId: string,
    at: string,
  ): Promise<void>;
}

export interface EventPorts {
  store: EventStore;
  writeActivity(instanceId: string, activity: ActivityToWrite): Promise<void>;
  unsubscribe(instanceId: string, personId: string, context: string): Promise<boolean>;
}

/** The SES event an SQS message carries (an SNS notification, or the event itself). */
export function parseSesEvent(body: string): SesEvent {
  const parsed: unknown = JSON.parse(body);
  const envelope = Envelope.safeParse(parsed);
  return SesEvent.parse(envelope.success ? JSON.parse(envelope.data.Message) : parsed);
}

export async function applySesEvent(event: SesEvent, ports: EventPorts): Promise<string> {
  const tag = event.mail.tags?.[MESSAGE_TAG]?.[0];
  const split = tag?.lastIndexOf('_') ?? -1;
  if (!tag || split < 1) return 'not ours';
  const instanceId = tag.slice(0, split);
  const messageId = tag.slice(split + 1);
  const record = (await ports.store.get(instanceId, [messageId])).get(messageId);
  if (!record) {
    logger.warn('An SES event names an unknown email', { instanceId, messageId });
    return 'unknown email';
  }
  const type = event.eventType ?? event.notificationType ?? '';
  const key = `${type}#${event.mail.messageId}`;
  const at = new Date(
    event.bounce?.timestamp ??
      event.complaint?.timestamp ??
      event.delivery?.timestamp ??
      event.mail.timestamp ??
      Date.now(),
  );
  const record_ = (
    entry: Omit<EmailEvent, 'at'>,
    move?: { from: EmailState[]; to: EmailState; error?: string },
  ) =>
    recordOnce(ports.store, instanceId, messageId, key, { ...entry, at: at.toISOString() }, move);

  // A hard bounce or a complaint: the addresses suppressed and `act::b` recorded.
  const suppress = async (
    recipients: { emailAddress: string }[],
    reason: 'bounce' | 'complaint',
    bounceType: string,
  ) => {
    for (const { emailAddress } of recipients) {
      await ports.store.suppress(instanceId, emailAddress, reason, messageId, at.toISOString());
    }
    await ports.writeActivity(
      instanceId,
      emailActivity('bounced', record, at, key, { 'str::bounce-type': bounceType }),
    );
  };

  switch (type) {
    case 'Send': {
      if (record.status === 'sending' && Date.now() - (record.sending_at ?? 0) < SEND_LEASE_MS) {
        // The worker may still be recording the send: look again later.
        throw new Error('The email is being sent; its Send event is applied later');
      }
      const unknown = record.status === 'failed' && (record.error ?? '').includes('unknown');
      if (record.status !== 'sending' && !unknown) return 'already known';
      await ports.writeActivity(instanceId, emailActivity('sent', record, at, 'sent'));
      await record_({ type: 'sent' }, { from: ['sending', 'failed'], to: 'sent' });
      return 'sent';
    }
    case 'Delivery':
      await record_({ type: 'delivered' });
      return 'delivered';
    case 'Bounce': {
      if (event.bounce?.bounceType !== 'Permanent') {
        await record_({ type: 'soft_bounce', detail: event.bounce?.bounceSubType ?? 'Transient' });
        return 'soft bounce';
      }
      await suppress(event.bounce.bouncedRecipients, 'bounce', 'hard bounce');
      await record_(
        { type: 'bounced', detail: event.bounce.bounceSubType ?? 'General' },
        { from: ['queued', 'sending', 'sent', 'failed'], to: 'bounced' },
      );
      return 'bounced';
    }
    case 'Complaint': {
      await suppress(event.complaint?.complainedRecipients ?? [], 'complaint', 'complaint');
      await ports.unsubscribe(
        instanceId,
        record.person_id,
        `Marked "${record.email_name}" as spam (complaint)`,
      );
      await record_(
        { type: 'complained', detail: event.complaint?.complaintFeedbackType ?? 'abuse' },
        { from: ['queued', 'sending', 'sent', 'failed', 'bounced'], to: 'complained' },
      );
      return 'complained';
    }
    case 'Reject':
    case 'Rendering Failure':
      await record_(
        { type: 'rejected', detail: type },
        {
          from: ['sending', 'sent'],
          to: 'failed',
          error: `SES: ${type}`,
        },
      );
      return 'failed';
    default:
      return 'ignored';
  }
}

/** Records the event once; where the state cannot move (it moved on), the event still counts. */
async function recordOnce(
  store: EventStore,
  instanceId: string,
  messageId: string,
  key: string,
  event: EmailEvent,
  move?: { from: EmailState[]; to: EmailState; error?: string },
): Promise<void> {
  if (move && (await store.recordEvent(instanceId, messageId, key, event, move))) return;
  await store.recordEvent(instanceId, messageId, key, event);
}
