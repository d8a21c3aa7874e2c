import { randomUUID } from 'node:crypto';
import type { ActivityToWrite } from '../activities/record-activities.js';
import { logger } from '../../lib/logger.js';
import { RetryLaterError } from '../../lib/retry-later.js';
import { emailActivity } from './email-activities.js';
import type { EmailEvent, EmailJob, EmailRecord, EmailState, OutgoingEmail } from './messages.js';

/**
 * The email worker's rule (DESIGN.md, Transactional email): each email is sent at most
 * once. Its record moves queued → sending (this attempt) with a conditional write before SES
 * is called, and sending → sent with the SES message ID and the `act::s` activity, in one
 * transaction, after. SES refusing the call (throttling, unavailable) gives the email back
 * (`queued`) and the message is retried with backoff; SES rejecting the email fails it.
 *
 * The one window left: the worker stops after SES accepted the email and before `sent` is
 * recorded (or SES's answer is lost). The email stays `sending`; a redelivery does not send
 * it again: once the attempt's lease has passed it marks it `failed` with "outcome unknown",
 * and the SES `Send` event, which names the message, sets it `sent` when it arrives. Every
 * failure that leaves the email `sending` asks the queue to wait out the lease before the
 * next delivery (`RetryLaterError`), so that delivery can settle it; if it was the last one,
 * `settleUndelivered` settles it instead.
 */
export const SEND_LEASE_MS = 90_000;
/** How long after a lease has passed a held email's redelivery comes back. */
const LEASE_MARGIN_MS = 1_000;

export const UNKNOWN_OUTCOME =
  'the send attempt stopped before SES answered: the outcome is unknown, and the email is not sent again (a Send event from SES marks it sent)';

/** How a send went wrong: refused (nothing sent, retry), rejected (never), or unknown. */
export class MailerError extends Error {
  constructor(
    readonly outcome: 'refused' | 'rejected' | 'unknown',
    message: string,
  ) {
    super(message);
    this.name = 'MailerError';
  }
}

export interface Mailer {
  /** Sends the email; answers SES's message ID, or throws `MailerError`. */
  send(email: OutgoingEmail, tags: Record<string, string>): Promise<string>;
}

export interface DeliveryStore {
  get(instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>>;
  suppressed(instanceId: string, addresses: string[]): Promise<Set<string>>;
  claim(instanceId: string, messageId: string, attempt: string, now: number): Promise<boolean>;
  release(instanceId: string, messageId: string, attempt: string): Promise<void>;
  markSent(
    instanceId: string,
    messageId: string,
    attempt: string,
    sesMessageId: string,
    activity: ActivityToWrite,
  ): Promise<boolean>;
  move(
    instanceId: string,
    messageId: string,
    from: EmailState[],
    to: EmailState,
    extra?: { error?: string; event?: EmailEvent },
  ): Promise<boolean>;
}

export interface DeliveryPorts {
  store: DeliveryStore;
  mailer: Mailer;
  /** Waits for this container's next slot under the account's send rate. */
  pace: () => Promise<void>;
  now?: () => number;
}

/**
 * The SES tag that names the email, so that SES events find it: `<instance>_<message>` (tag
 * values allow letters, digits, `_` and `-`; instance IDs have no `_`).
 */
export const MESSAGE_TAG = 'cdp_message';

export function messageTag(instanceId: string, messageId: string): string {
  return `${instanceId}_${messageId}`;
}

export type DeliveryOutcome = 'sent' | 'suppressed' | 'failed' | 'done-before' | 'missing';

export async function deliverEmail(
  job: EmailJob & { email: OutgoingEmail },
  { store, mailer, pace, now = Date.now }: DeliveryPorts,
): Promise<DeliveryOutcome> {
  const { instance_id: instanceId, message_id: messageId } = job;
  const record = (await store.get(instanceId, [messageId])).get(messageId);
  if (!record) {
    // Its record is gone (the person was erased): nothing may be sent.
    logger.warn('An email job names no email record; dropped', { instanceId, messageId });
    return 'missing';
  }
  if (record.status === 'sending') {
    const held = SEND_LEASE_MS - (now() - (record.sending_at ?? 0));
    if (held > 0) {
      throw new RetryLaterError(
        'Another attempt is sending this email; trying again later',
        held + LEASE_MARGIN_MS,
      );
    }
    await store.move(instanceId, messageId, ['sending'], 'failed', { error: UNKNOWN_OUTCOME });
    return 'failed';
  }
  if (record.status !== 'queued') return 'done-before';
  if ((await store.suppressed(instanceId, [record.to])).size > 0) {
    await store.move(instanceId, messageId, ['queued'], 'suppressed', {
      error: 'the address was put on the suppression list after the email was queued',
    });
    return 'suppressed';
  }
  const attempt = randomUUID();
  if (!(await store.claim(instanceId, messageId, attempt, now()))) return 'done-before';
  let sesMessageId: string;
  try {
    await pace();
    sesMessageId = await mailer.send(job.email, {
      [MESSAGE_TAG]: messageTag(instanceId, messageId),
    });
  } catch (error) {
    if (error instanceof MailerError && error.outcome === 'rejected') {
      await store.move(instanceId, messageId, ['sending'], 'failed', { error: error.message });
      return 'failed';
    }
    if (!(error instanceof MailerError) || error.outcome === 'refused') {
      // Nothing was sent: the email goes back to the queue's retries.
      await store.release(instanceId, messageId, attempt).catch((cause: unknown) => {
        throw heldByAttempt(cause);
      });
      throw error;
    }
    throw heldByAttempt(error);
  }
  const activity = emailActivity('sent', record, new Date(now()), 'sent');
  const recorded = await store
    .markSent(instanceId, messageId, attempt, sesMessageId, activity)
    .catch((cause: unknown) => {
      // SES has it; its Send event marks it sent if this attempt cannot.
      throw heldByAttempt(cause);
    });
  if (!recorded) {
    logger.warn('A sent email was no longer held by its attempt', { instanceId, messageId });
  }
  return 'sent';
}

/** A failure that leaves the email `sending`: its next delivery waits out the lease. */
function heldByAttempt(cause: unknown): RetryLaterError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new RetryLaterError(message, SEND_LEASE_MS + LEASE_MARGIN_MS, { cause });
}

/**
 * What the email's last delivery leaves, when it failed too (its message goes to the
 * dead-letter queue unless this settles it). A `queued` email stays queued, with an event
 * saying why it waits (a redrive sends it): `dead-letter`. An email an attempt left
 * `sending` is not sent again by anyone: it is `failed` with an unknown outcome now rather
 * than never (SES's Send event marks it sent if it went), and its message is done:
 * `settled`. So is an email already in a final state.
 */
export async function settleUndelivered(
  job: Pick<EmailJob, 'instance_id' | 'message_id'>,
  store: Pick<DeliveryStore, 'get' | 'move'>,
  reason: string,
): Promise<'settled' | 'dead-letter'> {
  const { instance_id: instanceId, message_id: messageId } = job;
  const status = async () => (await store.get(instanceId, [messageId])).get(messageId)?.status;
  if ((await status()) === 'sending') {
    await store.move(instanceId, messageId, ['sending'], 'failed', { error: UNKNOWN_OUTCOME });
  }
  // Read again: an attempt that gave the email back in the meantime left it queued.
  if ((await status()) !== 'queued') return 'settled';
  await store.move(instanceId, messageId, ['queued'], 'queued', {
    event: {
      type: 'dead_lettered',
      at: new Date().toISOString(),
      detail: `${reason}; it is in the dead-letter queue, and is sent when redriven`,
    },
  });
  return 'dead-letter';
}
