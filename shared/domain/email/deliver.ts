import { randomUUID } from 'node:crypto';
import type { ActivityToWrite } from '../activities/record-activities.js';
import { logger } from '../../lib/logger.js';
import { RetryLaterError } from '../../lib/retry-later.js';
import { canWait, sleep } from '../../lib/time-budget.js';
import { emailActivity } from './email-activities.js';
import type { EmailEvent, EmailJob, EmailRecord, EmailState, OutgoingEmail } from './messages.js';

/**
 * The email worker's rule (DESIGN.md, Transactional email): each email is sent at most
 * once, none is lost, and every email ends in a final state or in a dead letter that the
 * DLQ listing explains and a redrive settles.
 *
 * - The email is paced and its MIME built (attachments read) while it is still `queued`, and
 *   claimed (queued → sending, with this attempt's ID) only then, and only if there is time
 *   left for a whole SES call and the write that records it: nothing that can fail before
 *   the call leaves an email `sending` (docs/api.md, "Sent once"). The claim answers with
 *   the email's record (it is not read first); the suppression list, read meanwhile, decides
 *   before the call: a suppressed address moves the claimed email to `suppressed`, and a
 *   list that cannot be read gives it back (`queued`).
 * - SES refusing the call (throttling, sending paused, no connection made) gives the email
 *   back (`queued`) and the queue retries it; SES rejecting it fails it.
 * - Any other failure of the call (a 5xx, a timeout, a connection cut after the request went
 *   out) leaves the outcome **unknown**: SES may have taken the email. It is not sent again
 *   on a guess. The email stays `sending` (`unknown_at`), and SES's own events settle it:
 *   the configuration set publishes a `Send` event for every email SES takes, and that event
 *   (or any later one: delivery, bounce, complaint) marks it `sent` (delivery-events.ts).
 * - It is sent again only once that event has provably not come: the confirmation window
 *   (`confirmWindowMs`, longer than the events worker's own retries) has passed, SES's
 *   events have been applied for sends it took a whole window after the attempt ended (the
 *   deployment's events watermark: any send's, or that of a probe to the mailbox simulator,
 *   which the worker sends when traffic is quiet), and none waits in the events' dead-letter
 *   queue. Until then the message keeps coming back.
 * - An attempt that dies (the function is killed, the store fails after SES answered) is
 *   treated the same way once its lease has passed; while the lease holds, no one else
 *   touches the email, not even the message's last receive (`settleUndelivered`).
 */
export const SEND_LEASE_MS = 90_000;
/** How long an email whose send had an unknown outcome waits for SES's event, by default. */
export const CONFIRM_WINDOW_MS = 10 * 60_000;
/** How long after a lease or window a held email's redelivery comes back. */
const LEASE_MARGIN_MS = 1_000;
/** Time kept after an SES call for the write that records its outcome. */
export const RECORD_MARGIN_MS = 3_000;

export const UNKNOWN_OUTCOME =
  'the send attempt did not learn whether SES took the email, and SES sent no event for it: the outcome is unknown, and the email is not sent again (an SES event marks it sent if it went)';

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

/** An email ready to hand to SES: its MIME built, its attachments read. */
export interface PreparedEmail {
  raw: Buffer;
  from: string;
  to: string;
  cc: string[];
}

export interface Mailer {
  /** The longest one call to SES can take (connection and answer), in ms. */
  readonly callMaxMs: number;
  /** Builds the MIME message (reads its attachments); sends nothing. */
  prepare(email: OutgoingEmail): Promise<PreparedEmail>;
  /**
   * Sends the email; answers SES's message ID, or throws `MailerError`. Starts no call (and
   * no retry) that could not end `RECORD_MARGIN_MS` before the current deadline.
   */
  send(email: PreparedEmail, tags: Record<string, string>): Promise<string>;
}

/** What recording SES's acceptance of an email writes (`acceptanceOf` decides). */
export interface Acceptance {
  sesMessageId: string;
  /** The state the email must be in for this write (it was read so). */
  expected: EmailState;
  /** When set, only while this attempt holds the email. */
  attempt?: string;
  /** Moves the email to `sent` (it was waiting for this answer). */
  promote: boolean;
  /** The `act::s` activity, where the email reached its recipient's server. */
  activity?: ActivityToWrite;
}

export interface DeliveryStore {
  get(instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>>;
  suppressed(instanceId: string, addresses: string[]): Promise<Set<string>>;
  /** Takes a queued email for an attempt: its record as claimed, or undefined if not queued. */
  claim(
    instanceId: string,
    messageId: string,
    attempt: string,
    now: number,
  ): Promise<EmailRecord | undefined>;
  release(instanceId: string, messageId: string, attempt: string): Promise<void>;
  /** Marks an attempt's outcome unknown (it is over); false if it no longer holds the email. */
  markUnknown(instanceId: string, messageId: string, attempt: string, at: number): Promise<boolean>;
  /** Records SES's acceptance as `acceptance` says; false if the email is no longer as read. */
  recordAcceptance(instanceId: string, messageId: string, acceptance: Acceptance): Promise<boolean>;
  move(
    instanceId: string,
    messageId: string,
    from: EmailState[],
    to: EmailState,
    extra?: { error?: string; event?: EmailEvent; attempt?: string },
  ): Promise<boolean>;
}

/**
 * What proves that SES did not take an email: how far its events have been applied, and
 * whether any is stuck in the events' dead-letter queue. A probe (a send to the mailbox
 * simulator) moves the watermark on when no other traffic does.
 */
export interface SendConfirmations {
  /** SES's acceptance time (epoch ms) of the latest send whose `Send` event was applied. */
  eventsThrough(): Promise<number | undefined>;
  /** SES events waiting in the events' dead-letter queue (unknown counts as some). */
  deadLetteredEvents(): Promise<number>;
  /** Sends a probe, at most once in a while per container. */
  probe(): Promise<void>;
}

export interface DeliveryPorts {
  store: DeliveryStore;
  mailer: Mailer;
  /** Waits for this container's next slot under the account's send rate. */
  pace: () => Promise<void>;
  confirmations: SendConfirmations;
  /** How long an unknown outcome waits for SES's event before it can be proven otherwise. */
  confirmWindowMs?: number;
  now?: () => number;
}

/**
 * The SES tag that names the email, so that SES events find it: `<instance>_<message>` (tag
 * values allow letters, digits, `_` and `-`; instance IDs have no `_`).
 */
export const MESSAGE_TAG = 'cdp_message';
/** The SES tag of a probe (`SendConfirmations`): its events only move the events watermark. */
export const PROBE_TAG = 'cdp_probe';

export function messageTag(instanceId: string, messageId: string): string {
  return `${instanceId}_${messageId}`;
}

export type DeliveryOutcome = 'sent' | 'suppressed' | 'failed' | 'done-before' | 'missing';

/** Whether a failed email failed because its send's outcome was unknown (an event may fix it). */
export function failedUnknown(record: Pick<EmailRecord, 'status' | 'error' | 'unknown_at'>) {
  if (record.status !== 'failed') return false;
  // Records failed so before `unknown_at` existed say it in their error.
  return record.unknown_at !== undefined || (record.error ?? '').includes('outcome is unknown');
}

/** Whether an attempt still holds a `sending` email: it has not ended, and its lease holds. */
export function attemptLive(record: EmailRecord, now: number): boolean {
  return (
    record.status === 'sending' &&
    record.unknown_at === undefined &&
    now < (record.sending_at ?? 0) + SEND_LEASE_MS
  );
}

/**
 * What SES taking the email (`sesMessageId`) changes, given the email as read; undefined when
 * there is nothing to record (known already, or a state no send can be in). The `act::s`
 * activity is dated when the attempt started, so that the worker and an SES event that both
 * record it write the same item.
 */
export function acceptanceOf(
  record: EmailRecord,
  sesMessageId: string,
  startedAt: Date,
): Acceptance | undefined {
  if (record.ses_message_id !== undefined) return undefined;
  const activity = emailActivity('sent', record, startedAt, 'sent');
  const base = { sesMessageId, expected: record.status };
  switch (record.status) {
    case 'queued':
    case 'sending':
      // `queued`: an attempt gave it back thinking SES refused it, and SES says it took it.
      return { ...base, promote: true, activity };
    case 'failed':
      // Failed as unknown: it went after all. Failed otherwise (SES rejected it after taking
      // the call): the ID is kept, but nothing reached the recipient.
      return failedUnknown(record)
        ? { ...base, promote: true, activity }
        : { ...base, promote: false };
    case 'bounced':
    case 'complained':
      // An event overtook the worker: the email did go out.
      return { ...base, promote: false, activity };
    default:
      return undefined;
  }
}

export async function deliverEmail(
  job: EmailJob & { email: OutgoingEmail },
  ports: DeliveryPorts,
): Promise<DeliveryOutcome> {
  const { store, mailer, pace, now = Date.now } = ports;
  const { instance_id: instanceId, message_id: messageId } = job;
  // The message is built (attachments read, MIME composed: the worker's main CPU work) and
  // the suppression list read for the address the job names (one call with the batch's other
  // emails) at once, from the start. A build that fails counts only for an email that would
  // be sent.
  const preparing = mailer.prepare(job.email);
  preparing.catch(() => undefined);
  const suppressing = store.suppressed(instanceId, [job.email.to]);
  suppressing.catch(() => undefined);
  const suppressedAt = (address: string) =>
    address === job.email.to ? suppressing : store.suppressed(instanceId, [address]);
  // Claims the email for this attempt and sends it; undefined if it was not queued.
  const claimAndSend = async (prepared: PreparedEmail) => {
    const attempt = randomUUID();
    const startedAt = now();
    const claimed = await store.claim(instanceId, messageId, attempt, startedAt);
    return claimed && sendClaimed(claimed, { attempt, startedAt, prepared }, suppressedAt, ports);
  };
  // The common case first: a queued email, claimed as soon as it is paced and built, its
  // record the claim's answer, its suppression decided while the claim is on its way (no
  // read of the record before the claim: one round trip less before SES).
  await pace();
  const built = await preparing.catch(() => undefined);
  if (built && canWait(mailer.callMaxMs + RECORD_MARGIN_MS)) {
    const outcome = await claimAndSend(built);
    if (outcome) return outcome;
  }
  // Otherwise as the email's record says: not there yet, held by another attempt, done, or
  // queued but not ready to send (its build failed, or too little time is left).
  let record = await recordOf(job, store, now);
  if (!record) return 'missing';
  if (record.status === 'sending') {
    await settleHeld(record, ports);
    // Proven not sent, and given back: it is sent now, as a queued email.
    record = { ...record, status: 'queued' };
  }
  if (record.status !== 'queued') return 'done-before';
  if ((await suppressedAt(record.to)).size > 0) {
    await store.move(instanceId, messageId, ['queued'], 'suppressed', {
      error: SUPPRESSED_SINCE_QUEUED,
    });
    return 'suppressed';
  }
  // Everything that can fail before SES is called happens while the email is still queued.
  const prepared = await preparing;
  if (!canWait(mailer.callMaxMs + RECORD_MARGIN_MS)) {
    throw new Error('not sent: too little of the invocation is left for a call to SES');
  }
  return (await claimAndSend(prepared)) ?? 'done-before';
}

const SUPPRESSED_SINCE_QUEUED =
  'the address was put on the suppression list after the email was queued';

/**
 * Sends an email this attempt has claimed, unless its address is suppressed (then it is
 * `suppressed`, never sent); a suppression list that cannot be read gives the email back, as
 * nothing was sent.
 */
async function sendClaimed(
  claimed: EmailRecord,
  send: { attempt: string; startedAt: number; prepared: PreparedEmail },
  suppressedAt: (address: string) => Promise<Set<string>>,
  ports: DeliveryPorts,
): Promise<DeliveryOutcome> {
  const { store, mailer, now = Date.now } = ports;
  const { instance_id: instanceId, message_id: messageId } = claimed;
  const { attempt, startedAt } = send;
  const giveBack = async () => {
    await store.release(instanceId, messageId, attempt).catch((cause: unknown) => {
      throw heldByAttempt(cause);
    });
  };
  try {
    if ((await suppressedAt(claimed.to)).size > 0) {
      await store.move(instanceId, messageId, ['sending'], 'suppressed', {
        error: SUPPRESSED_SINCE_QUEUED,
        attempt,
      });
      return 'suppressed';
    }
  } catch (error) {
    await giveBack();
    throw error;
  }
  let sesMessageId: string;
  try {
    sesMessageId = await mailer.send(send.prepared, {
      [MESSAGE_TAG]: messageTag(instanceId, messageId),
    });
  } catch (error) {
    if (error instanceof MailerError && error.outcome === 'rejected') {
      await store.move(instanceId, messageId, ['sending'], 'failed', {
        error: error.message,
        attempt,
      });
      return 'failed';
    }
    if (!(error instanceof MailerError) || error.outcome === 'refused') {
      // Nothing was sent: the email goes back to the queue's retries.
      await giveBack();
      throw error;
    }
    // SES may have taken it: only its event can tell. Not sent again on a guess.
    await store.markUnknown(instanceId, messageId, attempt, now()).catch((cause: unknown) => {
      throw heldByAttempt(cause);
    });
    throw new RetryLaterError(
      `${error.message} (the outcome is unknown: waiting for SES's event)`,
      windowOf(ports) + LEASE_MARGIN_MS,
      { cause: error },
    );
  }
  await recordSent(claimed, { attempt, sesMessageId, startedAt }, store).catch((cause: unknown) => {
    // SES has it; its Send event marks it sent if this attempt cannot.
    throw heldByAttempt(cause);
  });
  return 'sent';
}

/**
 * The email's record. The API queues an email before it writes its record (so that no record
 * says `queued` without a message behind it, send.ts): a job read a moment too early waits
 * for it, a little here, then by coming back, until the sending request's deadline.
 */
async function recordOf(
  job: EmailJob,
  store: Pick<DeliveryStore, 'get'>,
  now: () => number,
): Promise<EmailRecord | undefined> {
  const read = async () => (await store.get(job.instance_id, [job.message_id])).get(job.message_id);
  const waitUntil = (job.record_by ?? 0) + RECORD_MARGIN_MS;
  for (let attempt = 0; ; attempt += 1) {
    const record = await read();
    if (record) return record;
    const left = waitUntil - now();
    if (left <= 0) {
      // Never written (the request failed before it), or erased with its person: nothing may
      // be sent.
      logger.warn('An email job names no email record; dropped', {
        instanceId: job.instance_id,
        messageId: job.message_id,
      });
      return undefined;
    }
    if (attempt >= 3) {
      throw new RetryLaterError('The email is not recorded yet; trying again later', left);
    }
    await sleep(Math.min(left, 250 * 2 ** attempt));
  }
}

const windowOf = (ports: Pick<DeliveryPorts, 'confirmWindowMs'>) =>
  ports.confirmWindowMs ?? CONFIRM_WINDOW_MS;

/** When the attempt holding a `sending` email ended: when it said so, or when its lease did. */
function attemptEnded(record: EmailRecord): number {
  return record.unknown_at ?? (record.sending_at ?? 0) + SEND_LEASE_MS;
}

/** How long after a probe the proof is looked at again (its event comes in seconds). */
const AFTER_PROBE_MS = 15_000;

/**
 * A `sending` email met by a delivery: untouched while its attempt is live; then waiting for
 * SES's event; then, once SES's events prove it was not taken, given back to be sent again
 * (it returns). Otherwise throws: the message comes back later.
 */
async function settleHeld(record: EmailRecord, ports: DeliveryPorts): Promise<void> {
  const { store, now = Date.now } = ports;
  const { instance_id: instanceId, message_id: messageId } = record;
  const at = now();
  if (attemptLive(record, at)) {
    throw new RetryLaterError(
      'Another attempt is sending this email; trying again later',
      (record.sending_at ?? 0) + SEND_LEASE_MS - at + LEASE_MARGIN_MS,
    );
  }
  if (record.unknown_at === undefined && record.attempt !== undefined) {
    // The attempt died without a word: its outcome is unknown from now on.
    await store.markUnknown(instanceId, messageId, record.attempt, at);
  }
  const confirmBy = attemptEnded(record) + windowOf(ports);
  if (at < confirmBy) {
    throw new RetryLaterError(
      'The outcome of the send is unknown; waiting for SES to confirm it',
      confirmBy - at + LEASE_MARGIN_MS,
    );
  }
  if (await provenNotSent(record, ports)) {
    if (await resend(record, store, at)) return;
    throw new Error('The email moved while it was being given back; trying again');
  }
  // SES's events do not reach past the window yet: a probe makes them, unless sends do.
  await ports.confirmations.probe();
  throw new RetryLaterError(
    "The outcome of the send is unknown and SES's events do not yet prove it was not sent; waiting",
    Math.min(AFTER_PROBE_MS, windowOf(ports)),
  );
}

/**
 * Whether SES provably did not take the email: its events have been applied for sends it
 * took a whole confirmation window after this attempt ended, and none is dead-lettered.
 */
async function provenNotSent(
  record: EmailRecord,
  ports: Pick<DeliveryPorts, 'confirmations' | 'confirmWindowMs'>,
): Promise<boolean> {
  const through = await ports.confirmations.eventsThrough();
  if (through === undefined || through < attemptEnded(record) + windowOf(ports)) return false;
  return (await ports.confirmations.deadLetteredEvents()) === 0;
}

/** Gives an email SES provably did not take back to be sent (conditioned on its attempt). */
function resend(
  record: EmailRecord,
  store: Pick<DeliveryStore, 'move'>,
  at: number,
): Promise<boolean> {
  return store.move(record.instance_id, record.message_id, ['sending'], 'queued', {
    ...(record.attempt !== undefined ? { attempt: record.attempt } : {}),
    event: {
      type: 'resending',
      at: new Date(at).toISOString(),
      detail:
        'SES published its events for later sends and none for this one: it did not take it, and it is sent again',
    },
  });
}

/**
 * Records a send SES answered: `sent` with its SES message ID and `act::s`, in one write. If
 * an SES event got there first (it recorded the send itself, or a fast bounce moved the
 * state), what is missing is recorded on the state the event left.
 */
async function recordSent(
  claimed: EmailRecord,
  send: { attempt: string; sesMessageId: string; startedAt: number },
  store: DeliveryStore,
): Promise<void> {
  const { instance_id: instanceId, message_id: messageId } = claimed;
  const startedAt = new Date(send.startedAt);
  let acceptance = acceptanceOf({ ...claimed, status: 'sending' }, send.sesMessageId, startedAt);
  for (let round = 0; acceptance && round < 5; round += 1) {
    if (
      await store.recordAcceptance(instanceId, messageId, { ...acceptance, attempt: send.attempt })
    ) {
      return;
    }
    const now = (await store.get(instanceId, [messageId])).get(messageId);
    if (!now || now.attempt !== send.attempt) break;
    acceptance = acceptanceOf(now, send.sesMessageId, startedAt);
  }
  if (acceptance) {
    logger.warn('A sent email was no longer held by its attempt', { instanceId, messageId });
  }
}

/** A failure that leaves the email `sending`: its next delivery waits out the lease. */
function heldByAttempt(cause: unknown): RetryLaterError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new RetryLaterError(message, SEND_LEASE_MS + LEASE_MARGIN_MS, { cause });
}

/**
 * What the email's last delivery leaves, when it failed too (its message goes to the
 * dead-letter queue unless this settles it). Nothing is failed on a guess:
 *
 * - an email a live attempt holds is that attempt's to settle: it is left alone;
 * - an email whose attempt ended without an answer stays `sending` until SES's event marks
 *   it sent, or is given back (`queued`) if SES's events already prove it was not sent;
 * - a `queued` email stays queued.
 *
 * Each gets an event saying why its message waits in the dead-letter queue, which the DLQ
 * listing shows; a redrive sends a queued one and settles a sending one (`deliverEmail`).
 * An email already in a final state: `settled`, the message is done.
 */
export async function settleUndelivered(
  job: Pick<EmailJob, 'instance_id' | 'message_id'>,
  ports: Pick<DeliveryPorts, 'confirmations' | 'confirmWindowMs'> & {
    store: Pick<DeliveryStore, 'get' | 'move'>;
  },
  reason: string,
  now: () => number = Date.now,
): Promise<'settled' | 'dead-letter'> {
  const { store } = ports;
  const { instance_id: instanceId, message_id: messageId } = job;
  const read = async () => (await store.get(instanceId, [messageId])).get(messageId);
  const deadLettered = (state: EmailState, detail: string) =>
    store.move(instanceId, messageId, [state], state, {
      event: { type: 'dead_lettered', at: new Date(now()).toISOString(), detail },
    });
  const record = await read();
  if (record?.status === 'sending') {
    if (attemptLive(record, now())) {
      await deadLettered(
        'sending',
        `${reason}; another attempt is still sending it and settles it; its message is in the dead-letter queue`,
      );
      return 'dead-letter';
    }
    const proven =
      now() >= attemptEnded(record) + windowOf(ports) && (await provenNotSent(record, ports));
    if (!proven || !(await resend(record, store, now()))) {
      await deadLettered(
        'sending',
        `${reason}; whether SES took it is unknown: its event marks it sent, and a redrive sends it again only once SES's events prove it was not; its message is in the dead-letter queue`,
      );
      return 'dead-letter';
    }
  }
  // Read again: an attempt that gave the email back in the meantime left it queued.
  if ((await read())?.status !== 'queued') return 'settled';
  await deadLettered(
    'queued',
    `${reason}; it is in the dead-letter queue, and is sent when redriven`,
  );
  return 'dead-letter';
}

/**
 * What a dead-lettered email message stands for, for the DLQ listing: where its email is, and
 * what a redrive of the message does to it.
 */
export function deadLetterState(record: EmailRecord | undefined, now: number): string {
  if (!record) return 'no email record (never written, or erased): a redrive drops the message';
  const since = (at: number | undefined) => new Date(at ?? 0).toISOString();
  switch (record.status) {
    case 'queued':
      return 'queued: a redrive sends it';
    case 'sending':
      if (attemptLive(record, now)) {
        return `being sent by an attempt since ${since(record.sending_at)}: that attempt settles it`;
      }
      return `sending since ${since(record.sending_at)}, its outcome unknown: SES's event marks it sent; a redrive sends it again once SES's events prove it was not sent`;
    default:
      return `${record.status}${record.error ? ` (${record.error})` : ''}: a redrive changes nothing`;
  }
}
