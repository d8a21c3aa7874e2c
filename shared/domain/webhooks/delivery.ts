import { createHash, createHmac } from 'node:crypto';
import { z } from 'zod';
import { RetryLaterError } from '../../lib/retry-later.js';
import { checkWebhookUrl, type AddressPolicy, type HostResolver } from './address-policy.js';
import {
  secretKey,
  signingSecrets,
  subscribesTo,
  unwrapSecret,
  type Webhook,
  type WebhookHealth,
  type WebhookStore,
} from './webhook.js';
import type { KeyWrapper } from '../signing-keys.js';
import { logger } from '../../lib/logger.js';
import type { AttemptLog, DeliveryAttempt } from './attempts.js';

/**
 * Delivering one event to one webhook, per the Standard Webhooks specification
 * (docs/webhooks.md): `POST` of `{"type","timestamp","data"}` with the headers
 * `webhook-id` (the event's ID, the same on every attempt, so that receivers deduplicate),
 * `webhook-timestamp` (the attempt's time, seconds) and `webhook-signature` (`v1,<base64
 * HMAC-SHA256 of id.timestamp.body>`, one per secret that signs: two during a rotation's
 * grace). A 2xx within `DELIVERY_TIMEOUT_MS` is success; anything else (another status, a
 * redirect, which is never followed, a refused address, a timeout) is retried on
 * `RETRY_SCHEDULE_SECONDS`.
 */

export const WebhookEvent = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  /** When it happened (ISO 8601). */
  timestamp: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type WebhookEvent = z.infer<typeof WebhookEvent>;

/** One event for one webhook, as the delivery worker attempts it. */
export const DeliveryMessage = z.object({
  instance_id: z.string().min(1),
  webhook_id: z.string().min(1),
  event: WebhookEvent,
  /** The replay that queued it again (replay.ts); absent for the event's own delivery. */
  replay_id: z.string().min(1).optional(),
});
export type DeliveryMessage = z.infer<typeof DeliveryMessage>;

/**
 * A message of the webhooks queue: a delivery with its event, or, for an event larger than
 * `LARGE_EVENT_BYTES` (claim check), with the event's ID only; the event is then read from
 * where it is kept (the deliveries table, its body in the payloads bucket).
 */
export const QueuedDelivery = DeliveryMessage.extend({
  event: WebhookEvent.optional(),
  event_id: z.string().min(1).optional(),
  /** Attempts made before it moved to the slow queue (they count towards `MAX_ATTEMPTS`). */
  attempts_before: z.number().int().min(0).optional(),
}).refine((message) => message.event !== undefined || message.event_id !== undefined, {
  message: 'expected event or event_id',
  path: ['event'],
});
export type QueuedDelivery = z.infer<typeof QueuedDelivery>;

/**
 * Events whose JSON is larger than this travel by reference (a message holds 256 KB at most;
 * an item of the deliveries table 400 KB, so their bodies are kept in the payloads bucket).
 */
export const LARGE_EVENT_BYTES = 200 * 1024;

export function isLargeEvent(event: WebhookEvent): boolean {
  return Buffer.byteLength(JSON.stringify(event)) > LARGE_EVENT_BYTES;
}

/** What the queue carries of a delivery: the event itself, or its ID when it is large. */
export function queuedDelivery(message: DeliveryMessage): QueuedDelivery {
  if (!isLargeEvent(message.event)) return message;
  const { event, ...rest } = message;
  return { ...rest, event_id: event.id };
}

export const DELIVERY_TIMEOUT_MS = 15_000;

/** The name's lookup gets at most this much of the attempt's time (it is inside it). */
export const LOOKUP_TIMEOUT_MS = 5_000;

/**
 * An endpoint that took this long to answer (or did not answer in time) is slow for
 * `SLOW_FOR_MS` from then: its deliveries go to the slow queue, whose own workers make them
 * (docs/webhooks.md, "Fair shares"). A prompt answer there makes it prompt again.
 */
export const SLOW_ANSWER_MS = 3_000;
export const SLOW_FOR_MS = 10 * 60_000;

/**
 * Waits after each failed attempt (seconds, before jitter): 15 attempts over 3.2 days. The
 * waits of the last five are SQS's longest visibility timeout (12 hours).
 */
export const RETRY_SCHEDULE_SECONDS = [
  5, 30, 120, 600, 1_800, 3_600, 7_200, 14_400, 28_800, 43_200, 43_200, 43_200, 43_200, 43_200,
] as const;
/** Attempts in all: the first and one after each wait (the queue's `maxReceiveCount`). */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_SECONDS.length + 1;
const MAX_WAIT_SECONDS = 43_200;

/** The wait after attempt `attempt` (1-based) fails: the schedule's, up to 20% longer. */
export function retryDelaySeconds(attempt: number, random: () => number = Math.random): number {
  const index = Math.min(Math.max(attempt, 1), RETRY_SCHEDULE_SECONDS.length) - 1;
  const base = RETRY_SCHEDULE_SECONDS[index] ?? MAX_WAIT_SECONDS;
  return Math.min(MAX_WAIT_SECONDS, Math.round(base * (1 + 0.2 * random())));
}

/** The `webhook-signature` header: `v1,<signature>` for each secret, space-separated. */
export function signatureHeader(
  id: string,
  timestampSeconds: number,
  body: string,
  secrets: readonly string[],
): string {
  return secrets
    .map(
      (secret) =>
        `v1,${createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`,
    )
    .join(' ');
}

/** A stable event ID from what identifies the change (the same on every redelivery of it). */
export function eventId(...parts: string[]): string {
  return `msg_${createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32)}`;
}

export interface DeliveryRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** What is left of the attempt's time (`DELIVERY_TIMEOUT_MS` less its lookup). */
  timeoutMs?: number;
}

export interface DeliveryAnswer {
  status: number;
  latencyMs: number;
  /** The first KB of the answer's body (attempts.ts, `responseExcerpt`). */
  body?: string;
  /** Whether the body went on past that. */
  truncated?: boolean;
}

/**
 * Posts a delivery (the HTTP port): connects only to addresses the policy allows (checked
 * on the addresses it connects to), follows no redirect, gives up after the timeout (it
 * then throws, as for a refused address or a network failure).
 */
export type WebhookTransport = (request: DeliveryRequest) => Promise<DeliveryAnswer>;

/** Counts a replayed event delivered, once per (replay, event) whatever the repeats. */
export interface ReplayTally {
  delivered(
    instanceId: string,
    replayId: string,
    webhookId: string,
    eventId: string,
  ): Promise<void>;
}

export interface DeliveryPorts {
  store: Pick<
    WebhookStore,
    'get' | 'recordFailure' | 'recordSuccess' | 'takeProbe' | 'disable' | 'markSlow' | 'clearSlow'
  >;
  /**
   * The prompt queue's workers only: moves a message of a slow endpoint to the slow queue
   * (that receive was no attempt).
   */
  divert?: (message: DeliveryMessage) => Promise<void>;
  /**
   * Erased people (their marks, `erasure-marks.ts`), and what is kept of their events: an
   * event naming an erased person is never sent, and what was kept of them is erased.
   */
  erasures?: {
    isErased(instanceId: string, personId: string): Promise<boolean>;
    forget(instanceId: string, personId: string): Promise<unknown>;
  };
  secrets: KeyWrapper;
  addresses: AddressPolicy;
  resolve: HostResolver;
  transport: WebhookTransport;
  log: AttemptLog;
  replays: ReplayTally;
  now?: () => number;
}

export type DeliveryOutcome =
  | { kind: 'delivered'; status: number; latencyMs: number }
  | { kind: 'dropped'; reason: string }
  | { kind: 'diverted' };

/** An attempt that failed: retried after the schedule's wait. */
export class DeliveryFailedError extends RetryLaterError {}

/**
 * How long an endpoint gets no attempt after `failures` failed ones in a row: the retry
 * schedule's wait after as many attempts (so that the message that failed comes back after
 * it), at most `MAX_PAUSE_SECONDS`, so that an endpoint that is back is found within that.
 */
export const MAX_PAUSE_SECONDS = 3_600;
export function pauseSeconds(failures: number): number {
  const index = Math.min(Math.max(failures, 1), RETRY_SCHEDULE_SECONDS.length) - 1;
  return Math.min(MAX_PAUSE_SECONDS, RETRY_SCHEDULE_SECONDS[index] ?? MAX_PAUSE_SECONDS);
}

/**
 * Attempts in flight to one endpoint at once, per worker container (default). Until an
 * attempt fails, nothing says an endpoint hangs: without a cap, every message of every
 * batch in flight for it would wait its 15 s before the first failure pauses it. With it,
 * the others wait for a slot (not a retry: they keep their attempt), then find the endpoint
 * paused and fail at once, or go on if it answered.
 */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 5;

/** An endpoint failing this long is disabled (its owner enables it again). */
export const DISABLE_AFTER_MS = 5 * 86_400_000;

/**
 * One attempt of a message (`attempt`, 1-based, from the queue's receive count). The webhook
 * is read again: deleted, disabled or no longer subscribed, the event is dropped.
 *
 * One endpoint's trouble stays its own: a failed attempt pauses its endpoint
 * (`pauseSeconds`); while paused, its messages fail at once without a request (the attempt
 * counts, and the message waits the schedule's next wait), except one probe when the pause
 * ends (taken with a conditional write, so that one attempt of all those waiting goes). A
 * hanging or dead endpoint so costs the workers one attempt per pause, not one per message,
 * and the other endpoints' deliveries never wait behind its timeouts. The first 2xx clears
 * the record; an endpoint failing for `DISABLE_AFTER_MS` is disabled, saying why.
 */
export async function deliver(
  message: DeliveryMessage,
  attempt: number,
  ports: DeliveryPorts,
): Promise<DeliveryOutcome> {
  const webhook = await ports.store.get(message.instance_id, message.webhook_id);
  const dropped = whyDropped(webhook, message.event.type);
  if (dropped !== undefined || !webhook) return { kind: 'dropped', reason: dropped ?? '' };
  const erased = await erasedPerson(message, ports);
  if (erased !== undefined) {
    await ports.erasures?.forget(message.instance_id, erased);
    return { kind: 'dropped', reason: 'the person it names was erased' };
  }
  const now = (ports.now ?? Date.now)();
  // A slow endpoint's attempts are made by the slow queue's workers, apart from the others.
  if (ports.divert && webhook.slow_until !== undefined && now < webhook.slow_until) {
    await ports.divert(message);
    return { kind: 'diverted' };
  }
  const { health } = webhook;
  const failed = (why: string, cause?: unknown) =>
    new DeliveryFailedError(
      `attempt ${attempt} to webhook ${webhook.id} failed: ${why}`,
      retryDelaySeconds(attempt) * 1000,
      { cause },
    );
  if (health) {
    const paused = () =>
      failed(`its endpoint is paused after ${health.failures} failed attempts in a row`);
    if (now < health.paused_until) throw paused();
    // The pause is over: one attempt goes, the others wait for its outcome.
    const probe = now + DELIVERY_TIMEOUT_MS + 5_000;
    const taken = await ports.store.takeProbe(
      message.instance_id,
      webhook.id,
      health.paused_until,
      probe,
    );
    if (!taken) throw paused();
  }
  const result = await attemptDelivery(webhook, message, now, ports);
  await logAttempt(message, attempt, now, result, ports);
  await notePace(webhook, message.instance_id, result, ports);
  if (!result.failure && result.answer) {
    if (health) await ports.store.recordSuccess(message.instance_id, webhook.id);
    if (message.replay_id !== undefined) await countReplayed(message, ports);
    return { kind: 'delivered', status: result.answer.status, latencyMs: result.answer.latencyMs };
  }
  const why = result.failure?.why ?? 'no answer';
  // The pause runs from the failure (a timeout comes 15 s after the attempt started).
  await recordFailure(webhook, message.instance_id, why, (ports.now ?? Date.now)(), ports);
  throw failed(why, result.failure?.cause);
}

/**
 * Whether the endpoint is slow now: an attempt that took `SLOW_ANSWER_MS` or more (a timeout
 * included) marks it slow for `SLOW_FOR_MS`; a prompt answer clears the mark.
 */
async function notePace(
  webhook: Webhook,
  instanceId: string,
  result: AttemptResult,
  ports: DeliveryPorts,
): Promise<void> {
  if (result.latencyMs === null) return;
  if (result.latencyMs >= SLOW_ANSWER_MS) {
    await ports.store.markSlow(instanceId, webhook.id, (ports.now ?? Date.now)() + SLOW_FOR_MS);
  } else if (webhook.slow_until !== undefined && result.answer) {
    await ports.store.clearSlow(instanceId, webhook.id);
  }
}

/** What one attempt came to: the answer if any, why it failed if it did, how long it took. */
interface AttemptResult {
  answer?: DeliveryAnswer;
  failure?: { why: string; cause?: unknown };
  /** `null` when no request was made. */
  latencyMs: number | null;
}

/** The request itself: a 2xx answer, or what went wrong. */
async function attemptDelivery(
  webhook: Webhook,
  message: DeliveryMessage,
  now: number,
  ports: DeliveryPorts,
): Promise<AttemptResult> {
  const clock = ports.now ?? Date.now;
  const began = clock();
  try {
    // Again at every attempt: its name may resolve elsewhere now. The transport checks the
    // addresses it connects to as well (a name may change between the two). The lookup is
    // part of the attempt's time: a resolver that never answers costs `LOOKUP_TIMEOUT_MS`.
    await checkWebhookUrl(webhook.url, ports.addresses, (host) =>
      withTimeout(ports.resolve(host), LOOKUP_TIMEOUT_MS, `looking up ${host}`),
    );
  } catch (error) {
    // A lookup that timed out is one that did not resolve (`checkWebhookUrl`).
    return { failure: { why: 'its address is refused', cause: error }, latencyMs: null };
  }
  const secrets = await Promise.all(
    signingSecrets(webhook, now).map((secret) =>
      unwrapSecret(ports.secrets, message.instance_id, webhook.id, secret),
    ),
  );
  const { id, type, timestamp, data } = message.event;
  const body = JSON.stringify({ type, timestamp, data });
  const seconds = Math.floor(now / 1000);
  const started = clock();
  let answer: DeliveryAnswer;
  try {
    answer = await ports.transport({
      url: webhook.url,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'cdp-webhooks/1',
        'webhook-id': id,
        'webhook-timestamp': String(seconds),
        'webhook-signature': signatureHeader(id, seconds, body, secrets),
      },
      body,
      timeoutMs: Math.max(1, DELIVERY_TIMEOUT_MS - (started - began)),
    });
  } catch (error) {
    const why = error instanceof Error ? error.message : 'no answer';
    return { failure: { why, cause: error }, latencyMs: Math.max(0, clock() - started) };
  }
  if (answer.status < 200 || answer.status > 299) {
    return {
      answer,
      failure: { why: `it answered ${answer.status}` },
      latencyMs: answer.latencyMs,
    };
  }
  return { answer, latencyMs: answer.latencyMs };
}

/**
 * Writes the attempt to the log. The log is for watching deliveries, not part of them: a
 * log that cannot be written is reported (the error log) and the delivery goes on, so that
 * an attempt that succeeded is not made again for its record's sake.
 */
async function logAttempt(
  message: DeliveryMessage,
  attempt: number,
  at: number,
  result: AttemptResult,
  ports: DeliveryPorts,
): Promise<void> {
  const record: DeliveryAttempt = {
    webhook_id: message.webhook_id,
    event_id: message.event.id,
    event_type: message.event.type,
    replay_id: message.replay_id ?? null,
    attempt,
    status: result.failure ? 'failed' : 'succeeded',
    status_code: result.answer?.status ?? null,
    latency_ms: result.latencyMs,
    response_body: result.answer ? (result.answer.body ?? '') : null,
    response_truncated: result.answer?.truncated ?? false,
    error: result.failure ? result.failure.why.slice(0, 500) : null,
    attempted_at: new Date(at).toISOString(),
  };
  try {
    await ports.log.record(message.instance_id, record);
  } catch (error) {
    logger.error('Could not record a webhook delivery attempt', {
      instanceId: message.instance_id,
      webhookId: message.webhook_id,
      eventId: message.event.id,
      attempt,
      error: error as Error,
    });
  }
}

/**
 * Counts a replayed event delivered. Like the attempt log, the count is not part of the
 * delivery: one that cannot be written is reported and the delivery stands (sending the
 * event again for the count's sake would be worse than a count one short).
 */
async function countReplayed(message: DeliveryMessage, ports: DeliveryPorts): Promise<void> {
  try {
    await ports.replays.delivered(
      message.instance_id,
      message.replay_id ?? '',
      message.webhook_id,
      message.event.id,
    );
  } catch (error) {
    logger.error('Could not count a replayed webhook event delivered', {
      instanceId: message.instance_id,
      webhookId: message.webhook_id,
      replayId: message.replay_id,
      eventId: message.event.id,
      error: error as Error,
    });
  }
}

/** The endpoint's record after a failed attempt; disabled once it has failed for days. */
async function recordFailure(
  webhook: Webhook,
  instanceId: string,
  why: string,
  now: number,
  ports: DeliveryPorts,
): Promise<void> {
  const seen = webhook.health;
  const failures = (seen?.failures ?? 0) + 1;
  const next: WebhookHealth = {
    failing_since: seen?.failing_since ?? new Date(now).toISOString(),
    failures,
    paused_until: now + pauseSeconds(failures) * 1000,
    last_failure: why.slice(0, 200),
  };
  const recorded = await ports.store.recordFailure(instanceId, webhook.id, seen, next);
  // A failure another attempt, a success or the owner's change overtook decides nothing.
  if (recorded && now - Date.parse(next.failing_since) >= DISABLE_AFTER_MS) {
    await ports.store.disable(
      instanceId,
      webhook.id,
      { health: next, updated_at: webhook.updated_at },
      `its deliveries failed for 5 days (since ${next.failing_since}; the last: ${next.last_failure ?? why})`,
      new Date(now).toISOString(),
    );
  }
}

/**
 * The person an event names when they were erased since; `person.deleted` is the exception
 * (it names the ID only, and it is what receivers erase by).
 */
async function erasedPerson(
  message: DeliveryMessage,
  ports: DeliveryPorts,
): Promise<string | undefined> {
  const personId = message.event.data.person_id;
  if (!ports.erasures || typeof personId !== 'string' || message.event.type === 'person.deleted') {
    return undefined;
  }
  return (await ports.erasures.isErased(message.instance_id, personId)) ? personId : undefined;
}

function whyDropped(webhook: Webhook | undefined, type: string): string | undefined {
  if (!webhook) return 'the webhook was deleted';
  if (!webhook.enabled) return 'the webhook is disabled';
  if (!subscribesTo(webhook.events, type)) return `the webhook no longer subscribes to ${type}`;
  return undefined;
}

/** `work`, or an error after `ms` (the work is left to finish unheeded). */
function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`${what}: no answer within ${ms} ms`));
    }, ms);
  });
  return Promise.race([work, late]).finally(() => {
    clearTimeout(timer);
  });
}
