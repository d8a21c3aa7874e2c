import { z } from 'zod';
import type { CursorCodec } from '../cursor.js';
import { ValidationError } from '../errors.js';
import type { Tenant } from '../tenancy.js';
import { webhookIdSchema, webhookNotFound, type WebhookStore } from './webhook.js';

/**
 * The attempt log of webhook deliveries (docs/webhooks.md, "Attempts and replays"): one
 * record per attempt that reached for the endpoint (a request made, or refused before it was
 * made because the address is refused now), with its outcome, the HTTP status, the latency
 * and the first KB of the answer, kept `RETENTION_DAYS`. Attempts skipped while the endpoint
 * is paused make no record (their attempt numbers are missing from the log).
 */

/** How long attempts, kept events and replays are kept. */
export const RETENTION_DAYS = 30;
export const RETENTION_MS = RETENTION_DAYS * 86_400_000;

/** How much of an answer's body an attempt keeps. */
export const RESPONSE_BODY_BYTES = 1024;

export const ATTEMPT_OUTCOMES = ['succeeded', 'failed'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** One attempt, as kept and as `webhooks/deliveries/get` answers it. */
export interface DeliveryAttempt {
  webhook_id: string;
  /** The event's ID: the `webhook-id` header of the attempt. */
  event_id: string;
  event_type: string;
  /** The replay that queued it; `null` for the event's own delivery. */
  replay_id: string | null;
  /** 1 for the first attempt of a delivery (or of a replay), then one more per retry. */
  attempt: number;
  status: AttemptOutcome;
  /** The HTTP status answered; `null` when no answer came (timeout, refused, no connection). */
  status_code: number | null;
  /** From the request to the end of the answer (or of the wait); `null` when none was made. */
  latency_ms: number | null;
  /** The first `RESPONSE_BODY_BYTES` of the answer's body (UTF-8), `null` without an answer. */
  response_body: string | null;
  /** Whether the body went on past what is kept. */
  response_truncated: boolean;
  /** Why a failed attempt failed. */
  error: string | null;
  attempted_at: string;
}

/** Where attempts are written (the delivery worker): idempotent per (event, replay, attempt). */
export interface AttemptLog {
  record(instanceId: string, attempt: DeliveryAttempt): Promise<void>;
}

/** A page of one endpoint's attempts, newest first. */
export interface AttemptPageQuery {
  outcomes: readonly AttemptOutcome[];
  /** Inclusive, ISO 8601 (UTC). */
  from?: string;
  /** Exclusive. */
  to?: string;
  /** The position after which the page starts (the last one of the page before). */
  before?: string;
  limit: number;
}

export interface AttemptReader {
  attempts(
    instanceId: string,
    webhookId: string,
    query: AttemptPageQuery,
  ): Promise<{ attempts: DeliveryAttempt[]; next?: string }>;
}

/** Whether the date of `YYYY-MM-DD…` is a day of the calendar (Date.parse takes 02-30 as 03-02). */
function dayExists(value: string): boolean {
  const [year = 0, month = 0, day = 0] = value.slice(0, 10).split('-').map(Number);
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= days;
}

/** An ISO 8601 time with its offset (`2026-11-24T10:00:00Z`), read as the instant it names. */
export const isoTime = z
  .string()
  .regex(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/,
    'expected an ISO 8601 time with its offset, such as 2026-11-24T10:00:00Z',
  )
  .refine((value) => !Number.isNaN(Date.parse(value)) && dayExists(value), 'not a valid time')
  .transform((value) => new Date(value).toISOString());

/** `POST /v1/webhooks/deliveries/get`. */
export const DeliveriesGetRequest = z
  .strictObject({
    webhook_id: webhookIdSchema,
    status: z
      .enum(ATTEMPT_OUTCOMES, { message: 'expected succeeded or failed' })
      .optional()
      .meta({ description: '`succeeded` (a 2xx answer) or `failed` (anything else)' }),
    from: isoTime.optional().meta({ description: 'Attempts made at or after this time' }),
    to: isoTime.optional().meta({ description: 'Attempts made before this time' }),
    // Each of up to 16 partitions is read for a whole page: 100 keeps a page near 2 MB read.
    limit: z.number().int().min(1).max(100).default(50),
    cursor_id: z.string().max(2000).optional(),
  })
  .refine((request) => !request.from || !request.to || request.from < request.to, {
    message: 'expected a time after from',
    path: ['to'],
  });
export type DeliveriesGetRequest = z.infer<typeof DeliveriesGetRequest>;

/** What a cursor holds: the listing it pages (a cursor of another is refused) and where. */
const Cursor = z.object({
  v: z.literal(1),
  webhook: z.string(),
  status: z.enum(ATTEMPT_OUTCOMES).nullable(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  before: z.string().min(1),
});

export interface DeliveriesPorts {
  webhooks: Pick<WebhookStore, 'get'>;
  attempts: AttemptReader;
  cursors: CursorCodec;
}

/**
 * A page of one endpoint's attempts, newest first, optionally of one outcome and in a time
 * range. The webhook must be the instance's (another instance's is unknown here).
 */
export async function getDeliveries(
  request: DeliveriesGetRequest,
  tenant: Tenant,
  ports: DeliveriesPorts,
): Promise<{ deliveries: DeliveryAttempt[]; cursor_id: string | null; has_more: boolean }> {
  const listing = {
    webhook: request.webhook_id,
    status: request.status ?? null,
    from: request.from ?? null,
    to: request.to ?? null,
  };
  const cursor = request.cursor_id
    ? await ports.cursors.decode(Cursor, request.cursor_id)
    : undefined;
  if (
    cursor &&
    (cursor.webhook !== listing.webhook ||
      cursor.status !== listing.status ||
      cursor.from !== listing.from ||
      cursor.to !== listing.to)
  ) {
    throw new ValidationError(
      'cursor_id: it was issued for another listing (send webhook_id, status, from and to as for the first page)',
      [{ field: 'cursor_id', error: 'issued for another listing' }],
    );
  }
  const instanceId = tenant.instance.id;
  if (!(await ports.webhooks.get(instanceId, request.webhook_id))) {
    throw webhookNotFound(request.webhook_id);
  }
  const page = await ports.attempts.attempts(instanceId, request.webhook_id, {
    outcomes: request.status ? [request.status] : ATTEMPT_OUTCOMES,
    ...(request.from ? { from: request.from } : {}),
    ...(request.to ? { to: request.to } : {}),
    ...(cursor ? { before: cursor.before } : {}),
    limit: request.limit,
  });
  return {
    deliveries: page.attempts,
    cursor_id: page.next
      ? await ports.cursors.encode({ v: 1, ...listing, before: page.next })
      : null,
    has_more: page.next !== undefined,
  };
}

/** The first `RESPONSE_BODY_BYTES` of a body as text, without a character cut in two. */
export function responseExcerpt(bytes: Buffer): string {
  const kept = bytes.subarray(0, RESPONSE_BODY_BYTES);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(kept);
  // A multi-byte character cut at the end decodes as U+FFFD: it is dropped, not shown.
  return bytes.length > RESPONSE_BODY_BYTES ? text.replace(/\uFFFD$/, '') : text;
}
