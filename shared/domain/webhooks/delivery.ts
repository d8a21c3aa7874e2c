import { createHash, createHmac } from 'node:crypto';
import { z } from 'zod';
import { RetryLaterError } from '../../lib/retry-later.js';
import { checkWebhookUrl, type AddressPolicy, type HostResolver } from './address-policy.js';
import {
  secretKey,
  signingSecrets,
  subscribesTo,
  type Webhook,
  type WebhookStore,
} from './webhook.js';
import type { KeyWrapper } from '../signing-keys.js';

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

/** A message of the webhooks queue: one event for one webhook. */
export const DeliveryMessage = z.object({
  instance_id: z.string().min(1),
  webhook_id: z.string().min(1),
  event: WebhookEvent,
});
export type DeliveryMessage = z.infer<typeof DeliveryMessage>;

export const DELIVERY_TIMEOUT_MS = 15_000;

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
}

export interface DeliveryAnswer {
  status: number;
  latencyMs: number;
}

/**
 * Posts a delivery (the HTTP port): connects only to addresses the policy allows (checked
 * on the addresses it connects to), follows no redirect, gives up after the timeout (it
 * then throws, as for a refused address or a network failure).
 */
export type WebhookTransport = (request: DeliveryRequest) => Promise<DeliveryAnswer>;

export interface DeliveryPorts {
  store: Pick<WebhookStore, 'get'>;
  secrets: KeyWrapper;
  addresses: AddressPolicy;
  resolve: HostResolver;
  transport: WebhookTransport;
  now?: () => number;
}

export type DeliveryOutcome =
  { kind: 'delivered'; status: number; latencyMs: number } | { kind: 'dropped'; reason: string };

/** An attempt that failed: retried after the schedule's wait. */
export class DeliveryFailedError extends RetryLaterError {}

/**
 * One attempt of a message (`attempt`, 1-based, from the queue's receive count). The webhook
 * is read again: deleted, disabled or no longer subscribed, the event is dropped.
 */
export async function deliver(
  message: DeliveryMessage,
  attempt: number,
  ports: DeliveryPorts,
): Promise<DeliveryOutcome> {
  const webhook = await ports.store.get(message.instance_id, message.webhook_id);
  const dropped = whyDropped(webhook, message.event.type);
  if (dropped !== undefined || !webhook) return { kind: 'dropped', reason: dropped ?? '' };
  const now = (ports.now ?? Date.now)();
  const failed = (why: string, cause?: unknown) =>
    new DeliveryFailedError(
      `attempt ${attempt} to webhook ${webhook.id} failed: ${why}`,
      retryDelaySeconds(attempt) * 1000,
      { cause },
    );
  try {
    // Again at every attempt: its name may resolve elsewhere now. The transport checks the
    // addresses it connects to as well (a name may change between the two).
    await checkWebhookUrl(webhook.url, ports.addresses, ports.resolve);
  } catch (error) {
    throw failed('its address is refused', error);
  }
  const secrets = await Promise.all(
    signingSecrets(webhook, now).map((secret) => ports.secrets.unwrap(secret.wrapped)),
  );
  const { id, type, timestamp, data } = message.event;
  const body = JSON.stringify({ type, timestamp, data });
  const seconds = Math.floor(now / 1000);
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
    });
  } catch (error) {
    throw failed(error instanceof Error ? error.message : 'no answer', error);
  }
  if (answer.status < 200 || answer.status > 299) throw failed(`it answered ${answer.status}`);
  return { kind: 'delivered', ...answer };
}

function whyDropped(webhook: Webhook | undefined, type: string): string | undefined {
  if (!webhook) return 'the webhook was deleted';
  if (!webhook.enabled) return 'the webhook is disabled';
  if (!subscribesTo(webhook.events, type)) return `the webhook no longer subscribes to ${type}`;
  return undefined;
}
