import { z } from 'zod';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { ID_PATTERN, newId } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import { isoTime, RETENTION_DAYS, RETENTION_MS } from './attempts.js';
import type { QueuedDelivery, WebhookEvent } from './delivery.js';
import {
  subscribesTo,
  webhookIdSchema,
  webhookNotFound,
  type Webhook,
  type WebhookStore,
} from './webhook.js';

/**
 * Replays (docs/webhooks.md, "Attempts and replays"): an event delivered to an endpoint in
 * the last `RETENTION_DAYS`, or every such event since a time, queued again for the endpoint.
 * A replayed event keeps its ID (the `webhook-id` receivers deduplicate on) and its body, and
 * is signed anew at each attempt with the webhook's current secrets, like any delivery.
 *
 * A replay since a time is a background job: its record (`ReplayJob`) says how far it got,
 * and the replay worker walks the endpoint's kept events by time, one shard after the other,
 * a page at a time (`REPLAY_PAGE`), paced, moving the job's position and counts in one write
 * conditioned on the position it read. A worker that stops mid-job is followed by another
 * from that position; a page queued by a worker that stopped before its write is queued again
 * (the receiver gets those events twice, with the same `webhook-id`: at least once).
 */

/** Events read, and queued, per page of a replay. */
export const REPLAY_PAGE = 100;
/** Shards of an endpoint's kept events (the `events` index). */
export const EVENT_SHARDS = 8;
/**
 * A replay whose position has not moved for this long is taken for dead (its worker's
 * messages went to the dead-letter queue): it no longer holds its webhook.
 */
export const REPLAY_STALE_MS = 15 * 60_000;

export const eventIdSchema = z
  .string()
  .regex(/^msg_[0-9a-f]{32}$/, 'expected an event ID (the webhook-id of a delivery: msg_…)');

const replayIdSchema = z
  .string()
  .regex(ID_PATTERN, 'expected a replay ID (24 hexadecimal characters)');

/**
 * `POST /v1/webhooks/replay`: one event (`event_id`), or every event `since` a time, sent
 * again; or, with `replay_id` alone, how far that replay got.
 */
export const ReplayRequest = z
  .strictObject({
    replay_id: replayIdSchema.optional().meta({
      description: 'Alone: the replay whose progress to answer (nothing is sent)',
    }),
    webhook_id: webhookIdSchema.optional().meta({ description: 'The webhook to replay to' }),
    event_id: eventIdSchema
      .optional()
      .meta({ description: 'The event to send again: its `webhook-id`' }),
    since: isoTime.optional().meta({
      description: `Every event at or after this time (at most ${RETENTION_DAYS} days ago)`,
    }),
    until: isoTime.optional().meta({
      description: 'With `since`: events before this time only (default: now)',
    }),
  })
  .superRefine((request, context) => {
    if (request.replay_id !== undefined) {
      for (const member of ['webhook_id', 'event_id', 'since', 'until'] as const) {
        if (request[member] !== undefined) {
          context.addIssue({
            code: 'custom',
            path: [member],
            message: 'not with replay_id (which asks for a replay’s progress)',
          });
        }
      }
      return;
    }
    if (request.webhook_id === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['webhook_id'],
        message: 'expected a webhook ID (24 hexadecimal characters), or replay_id alone',
      });
    }
    if ((request.event_id === undefined) === (request.since === undefined)) {
      context.addIssue({
        code: 'custom',
        path: [request.event_id === undefined ? 'event_id' : 'since'],
        message: 'expected either event_id (one event) or since (every event since then)',
      });
    }
    if (request.until !== undefined && request.since === undefined) {
      context.addIssue({ code: 'custom', path: ['until'], message: 'only with since' });
    }
  });
export type ReplayRequest = z.infer<typeof ReplayRequest>;

export const REPLAY_STATUSES = ['queued', 'running', 'complete', 'failed'] as const;
export type ReplayStatus = (typeof REPLAY_STATUSES)[number];

/** Where a replay since a time is: the shard it walks, after which event of it. */
export interface ReplayPosition {
  shard: number;
  /** The last event read (a position of the kept events' index); none at the shard's start. */
  after: string | null;
}

/** A replay, as kept and (`replayEntry`) as the API shows it. */
export interface ReplayJob {
  id: string;
  webhook_id: string;
  event_id?: string;
  since?: string;
  until?: string;
  status: ReplayStatus;
  /** Events kept for the endpoint in the range, read so far. */
  events_found: number;
  /** Of those, queued again. */
  events_queued: number;
  /** Of those, not queued: the webhook no longer subscribes to their type. */
  events_skipped: number;
  /** Queued events delivered since (a 2xx), each counted once. */
  events_delivered: number;
  position: ReplayPosition;
  created_at: string;
  updated_at: string;
  completed_at?: string;
  error?: string;
}

export function replayEntry(job: ReplayJob) {
  return {
    replay_id: job.id,
    webhook_id: job.webhook_id,
    ...(job.event_id !== undefined ? { event_id: job.event_id } : {}),
    ...(job.since !== undefined ? { since: job.since } : {}),
    ...(job.until !== undefined ? { until: job.until } : {}),
    status: job.status,
    events_found: job.events_found,
    events_queued: job.events_queued,
    events_skipped: job.events_skipped,
    events_delivered: job.events_delivered,
    created_at: job.created_at,
    updated_at: job.updated_at,
    ...(job.completed_at !== undefined ? { completed_at: job.completed_at } : {}),
    ...(job.error !== undefined ? { error: job.error } : {}),
  };
}
export type ReplayEntry = ReturnType<typeof replayEntry>;

/** An event kept for an endpoint, as a replay reads it: the event, unless it is large. */
export interface KeptEvent {
  id: string;
  type: string;
  /** Absent for a large event (claim check): its delivery carries its ID. */
  event?: WebhookEvent;
}

/** The events kept for endpoints (the deliveries table; large bodies in the payloads bucket). */
export interface KeptEvents {
  /** One event kept for the webhook (read consistently), without a large event's body. */
  find(instanceId: string, webhookId: string, eventId: string): Promise<KeptEvent | undefined>;
  /**
   * A page of one shard's events queued in `[since, until)`, in the order they were queued,
   * after `after`. (When an event was queued, not when it happened: that follows its change
   * by the stream's delay, so every event changed since `since` is found.)
   */
  page(
    instanceId: string,
    webhookId: string,
    query: { since: string; until: string; shard: number; after: string | null; limit: number },
  ): Promise<{ events: KeptEvent[]; last: string | null; hasMore: boolean }>;
}

export interface ReplayStore {
  /**
   * Keeps a new replay. `exclusive`: it also holds its webhook while it runs, and a replay of
   * the webhook that still runs is a `ReplayRunningError`.
   */
  create(instanceId: string, job: ReplayJob, exclusive: boolean, now: number): Promise<void>;
  /** Read consistently. */
  get(instanceId: string, replayId: string): Promise<ReplayJob | undefined>;
  /**
   * Moves a running replay from the position it was read at to `to` and adds the counts;
   * `done`, it completes (and no longer holds its webhook). False when its position or state
   * moved meanwhile (another run of it did the page).
   */
  advance(
    instanceId: string,
    job: ReplayJob,
    step: { to: ReplayPosition; found: number; queued: number; skipped: number; done: boolean },
    now: number,
  ): Promise<boolean>;
  /** The replay stops, saying why (and no longer holds its webhook). */
  fail(instanceId: string, job: ReplayJob, error: string, now: number): Promise<void>;
  /** Takes back a replay that could not be started (nothing was queued for it). */
  remove(instanceId: string, job: ReplayJob): Promise<void>;
}

/** Queues deliveries (the webhooks queue). */
export interface DeliveryQueue {
  queue(messages: readonly QueuedDelivery[]): Promise<void>;
}

/** A message of the replays queue: carry on with a replay from where it is. */
export const ReplayMessage = z.object({
  instance_id: z.string().min(1),
  replay_id: z.string().min(1),
});
export type ReplayMessage = z.infer<typeof ReplayMessage>;

export interface ReplayQueue {
  send(message: ReplayMessage): Promise<void>;
}

export interface ReplayPorts {
  webhooks: Pick<WebhookStore, 'get'>;
  events: KeptEvents;
  jobs: ReplayStore;
  deliveries: DeliveryQueue;
  replays: ReplayQueue;
  now?: () => number;
}

/** A replay of the webhook is still running: one at a time per webhook. */
export class ReplayRunningError extends ConflictError {
  constructor(webhookId: string, replayId: string | undefined) {
    super(
      `webhook_id: a replay of webhook ${webhookId} is running${replayId ? ` (replay_id ${replayId})` : ''}; wait for it to complete (webhooks/replay with replay_id shows its progress)`,
      [{ field: 'webhook_id', error: 'a replay is running' }],
    );
  }
}

const replayNotFound = (id: string) =>
  new NotFoundError(`replay_id: no replay ${id} in this instance`, [
    { field: 'replay_id', error: 'not found' },
  ]);

/** The webhook a replay is for: the instance's, and enabled (a disabled one receives nothing). */
async function replayable(instanceId: string, webhookId: string, ports: ReplayPorts) {
  const webhook = await ports.webhooks.get(instanceId, webhookId);
  if (!webhook) throw webhookNotFound(webhookId);
  if (!webhook.enabled) {
    throw new ValidationError(
      `webhook_id: webhook ${webhookId} is disabled; enable it (webhooks/update) to replay to it`,
      [{ field: 'webhook_id', error: 'disabled' }],
    );
  }
  return webhook;
}

/**
 * Starts a replay (checked before anything is written or queued): one event is queued at
 * once, and its replay is complete; a range becomes a job for the replay worker. Answers the
 * replay (`webhooks/replay` with its `replay_id` follows it).
 */
export async function replayWebhook(
  request: ReplayRequest & { webhook_id: string },
  tenant: Tenant,
  ports: ReplayPorts,
): Promise<ReplayEntry> {
  const instanceId = tenant.instance.id;
  const now = (ports.now ?? Date.now)();
  const at = new Date(now).toISOString();
  const range = request.event_id === undefined ? replayRange(request, now) : undefined;
  const webhook = await replayable(instanceId, request.webhook_id, ports);
  const base = {
    id: newId(now),
    webhook_id: webhook.id,
    events_delivered: 0,
    position: { shard: 0, after: null },
    created_at: at,
    updated_at: at,
  };
  if (!range) return replayEvent(instanceId, webhook, request.event_id ?? '', base, ports);
  const job: ReplayJob = {
    ...base,
    ...range,
    status: 'queued',
    events_found: 0,
    events_queued: 0,
    events_skipped: 0,
  };
  await ports.jobs.create(instanceId, job, true, now);
  await startOrTakeBack(instanceId, job, ports, () =>
    ports.replays.send({ instance_id: instanceId, replay_id: job.id }),
  );
  return replayEntry(job);
}

/** The range of a replay since a time: within what is kept, and over. */
function replayRange(request: ReplayRequest, now: number): { since: string; until: string } {
  const at = new Date(now).toISOString();
  const since = request.since ?? at;
  const until = request.until ?? at;
  if (Date.parse(since) < now - RETENTION_MS) {
    throw new ValidationError(
      `since: at most ${RETENTION_DAYS} days ago (events are kept ${RETENTION_DAYS} days)`,
      [{ field: 'since', error: `more than ${RETENTION_DAYS} days ago` }],
    );
  }
  if (until > at) {
    throw new ValidationError('until: expected a time that has passed', [
      { field: 'until', error: 'in the future' },
    ]);
  }
  if (since >= until) {
    const field = request.until === undefined ? 'since' : 'until';
    throw new ValidationError(`${field}: expected since to be before until`, [
      { field, error: 'since is not before until' },
    ]);
  }
  return { since, until };
}

async function replayEvent(
  instanceId: string,
  webhook: Webhook,
  eventId: string,
  base: Pick<
    ReplayJob,
    'id' | 'webhook_id' | 'events_delivered' | 'position' | 'created_at' | 'updated_at'
  >,
  ports: ReplayPorts,
): Promise<ReplayEntry> {
  const kept = await ports.events.find(instanceId, webhook.id, eventId);
  if (!kept) {
    throw new NotFoundError(
      `event_id: no event ${eventId} was delivered to webhook ${webhook.id} in the last ${RETENTION_DAYS} days`,
      [{ field: 'event_id', error: 'not found' }],
    );
  }
  if (!subscribesTo(webhook.events, kept.type)) {
    throw new ValidationError(
      `event_id: webhook ${webhook.id} no longer subscribes to ${kept.type} events`,
      [{ field: 'event_id', error: `not subscribed to ${kept.type}` }],
    );
  }
  const job: ReplayJob = {
    ...base,
    event_id: eventId,
    status: 'complete',
    events_found: 1,
    events_queued: 1,
    events_skipped: 0,
    completed_at: base.created_at,
  };
  await ports.jobs.create(instanceId, job, false, Date.parse(base.created_at));
  await startOrTakeBack(instanceId, job, ports, () =>
    ports.deliveries.queue([deliveryOf(instanceId, webhook.id, job.id, kept)]),
  );
  return replayEntry(job);
}

/** Queues the replay's first work; if that fails, the replay is taken back (nothing ran). */
async function startOrTakeBack(
  instanceId: string,
  job: ReplayJob,
  ports: ReplayPorts,
  start: () => Promise<void>,
): Promise<void> {
  try {
    await start();
  } catch (error) {
    await ports.jobs.remove(instanceId, job).catch(() => undefined);
    throw error;
  }
}

function deliveryOf(
  instanceId: string,
  webhookId: string,
  replayId: string,
  kept: KeptEvent,
): QueuedDelivery {
  const base = { instance_id: instanceId, webhook_id: webhookId, replay_id: replayId };
  return kept.event ? { ...base, event: kept.event } : { ...base, event_id: kept.id };
}

/** A replay's progress, by its ID (another instance's is unknown). */
export async function getReplay(
  replayId: string,
  tenant: Tenant,
  jobs: Pick<ReplayStore, 'get'>,
): Promise<ReplayEntry> {
  const job = await jobs.get(tenant.instance.id, replayId);
  if (!job) throw replayNotFound(replayId);
  return replayEntry(job);
}

/**
 * `webhooks/replay`: starts a replay (`started`), or answers the progress of the one
 * `replay_id` names.
 */
export async function replay(
  request: ReplayRequest,
  tenant: Tenant,
  ports: ReplayPorts,
): Promise<{ started: boolean; replay: ReplayEntry }> {
  const { replay_id: replayId, webhook_id: webhookId } = request;
  if (replayId !== undefined) {
    return { started: false, replay: await getReplay(replayId, tenant, ports.jobs) };
  }
  // The request's schema asks for webhook_id without replay_id.
  if (webhookId === undefined) throw webhookNotFound('');
  return {
    started: true,
    replay: await replayWebhook({ ...request, webhook_id: webhookId }, tenant, ports),
  };
}

export interface ReplayWorkerPorts extends ReplayPorts {
  /** How long one message works before it queues the rest of the job. */
  sliceMs: number;
  /** The most events a replay queues a second (the webhooks queue is every endpoint's). */
  eventsPerSecond: number;
  sleep: (ms: number) => Promise<void>;
}

/**
 * Carries a replay on from its position: pages of kept events, the subscribed ones queued
 * again, the position moved after each page, paced to `eventsPerSecond`; after `sliceMs`,
 * the rest is queued as a new message. A message handled twice (SQS delivers at least once)
 * finds the position moved by the other and carries on from there.
 */
export async function runReplay(message: ReplayMessage, ports: ReplayWorkerPorts): Promise<void> {
  const clock = ports.now ?? Date.now;
  const started = clock();
  for (;;) {
    const job = await ports.jobs.get(message.instance_id, message.replay_id);
    if (!job || job.status === 'complete' || job.status === 'failed') return;
    if (job.since === undefined || job.until === undefined) return;
    const webhook = await ports.webhooks.get(message.instance_id, job.webhook_id);
    if (!webhook?.enabled) {
      await ports.jobs.fail(
        message.instance_id,
        job,
        webhook ? 'the webhook was disabled' : 'the webhook was deleted',
        clock(),
      );
      return;
    }
    const pageStarted = clock();
    const page = await ports.events.page(message.instance_id, webhook.id, {
      since: job.since,
      until: job.until,
      shard: job.position.shard,
      after: job.position.after,
      limit: REPLAY_PAGE,
    });
    const wanted = page.events.filter((kept) => subscribesTo(webhook.events, kept.type));
    await ports.deliveries.queue(
      wanted.map((kept) => deliveryOf(message.instance_id, webhook.id, job.id, kept)),
    );
    const next: ReplayPosition | undefined = page.hasMore
      ? { shard: job.position.shard, after: page.last }
      : job.position.shard + 1 < EVENT_SHARDS
        ? { shard: job.position.shard + 1, after: null }
        : undefined;
    const advanced = await ports.jobs.advance(
      message.instance_id,
      job,
      {
        to: next ?? job.position,
        found: page.events.length,
        queued: wanted.length,
        skipped: page.events.length - wanted.length,
        done: next === undefined,
      },
      clock(),
    );
    // Another run of this replay did the page: read where it is now.
    if (!advanced) continue;
    if (!next) return;
    const due = pageStarted + (wanted.length / ports.eventsPerSecond) * 1000;
    if (due > clock()) await ports.sleep(due - clock());
    if (clock() - started > ports.sliceMs) {
      await ports.replays.send(message);
      return;
    }
  }
}

/** A replay whose worker gave up on it (its message's last receive): it stops, saying why. */
export async function abandonReplay(
  message: ReplayMessage,
  why: string,
  ports: Pick<ReplayPorts, 'jobs' | 'now'>,
): Promise<void> {
  const job = await ports.jobs.get(message.instance_id, message.replay_id);
  if (!job || job.status === 'complete' || job.status === 'failed') return;
  await ports.jobs.fail(message.instance_id, job, why.slice(0, 300), (ports.now ?? Date.now)());
}
