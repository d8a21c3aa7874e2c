import { createHash } from 'node:crypto';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import {
  ATTEMPT_OUTCOMES,
  RETENTION_MS,
  type AttemptLog,
  type AttemptOutcome,
  type AttemptPageQuery,
  type AttemptReader,
  type DeliveryAttempt,
} from '../domain/webhooks/attempts.js';
import {
  isLargeEvent,
  WebhookEvent,
  type DeliveryMessage,
  type ReplayTally,
} from '../domain/webhooks/delivery.js';
import {
  EVENT_SHARDS,
  REPLAY_STALE_MS,
  REPLAY_STATUSES,
  ReplayRunningError,
  type KeptEvent,
  type KeptEvents,
  type ReplayJob,
  type ReplayPosition,
  type ReplayStore,
} from '../domain/webhooks/replay.js';
import { ATTEMPT_ATTRIBUTES } from '../resources.js';
import {
  batchGet,
  batchWrite,
  cancellationCodes,
  conditionally,
  deletes,
  isConditionFailure,
  partitionKeys,
  type Item,
  type Key,
  type WriteRequest,
} from './dynamo-helpers.js';
import { runBounded } from '../lib/bounded.js';
import { retried } from './ingest-queue.js';
import { S3PayloadEraser } from './payload-eraser.js';
import { referencePk } from './person-references.js';
import { queryShard } from './sharded-index.js';

/**
 * The deliveries table (docs/data-model.md, "deliveries"): what webhooks were sent, kept
 * `RETENTION_MS` (TTL `expires_at`).
 *
 * - `<inst>#WE#<webhook>#<event>` / `E`: an event queued for a webhook (`event_json`, or for a
 *   large event `payload_key`, its body in the payloads bucket under `webhooks/`); in the
 *   `events` index by `vpk` = `<inst>#WV#<webhook>#<shard>`, `vsk` = `<kept at>#<event>`.
 * - same partition, `A#<replay or 0>#<attempt>`: an attempt, in the `attempts` index by
 *   `apk` = `<inst>#WA#<webhook>#<S|F>#<shard>`, `ask` = `<attempted at>#<event>#<replay>#<attempt>`.
 *   Its key is what identifies the attempt: a message handled twice rewrites one item.
 * - same partition, `D#<replay>`: the event was delivered for that replay (counted once).
 * - `<inst>#PREF#<person>` / `WE#<webhook>#<event>`: the person an event names, for erasure
 *   (`large` when its body is in the bucket).
 * - `<inst>#WR#<replay>` / `R`: a replay; `<inst>#WJ#<webhook>` / `ACTIVE`: the replay since a
 *   time that holds the webhook while it runs.
 *
 * Shards (the event ID's hash) spread one endpoint's writes over 8 partitions of each index.
 */
const eventPk = (instanceId: string, webhookId: string, eventId: string) =>
  `${instanceId}#WE#${webhookId}#${eventId}`;
const EVENT_SK = 'E';
/** A person's reference to an event kept for a webhook (`<inst>#PREF#<person>` / this). */
const eventRef = (webhookId: string, eventId: string) => `WE#${webhookId}#${eventId}`;
const EVENT_REF = /^WE#(.+)#([^#]+)$/;
const eventsIndexPk = (instanceId: string, webhookId: string, shard: number) =>
  `${instanceId}#WV#${webhookId}#${shard}`;
const attemptsIndexPk = (
  instanceId: string,
  webhookId: string,
  outcome: AttemptOutcome,
  shard: number,
) => `${instanceId}#WA#${webhookId}#${outcome === 'succeeded' ? 'S' : 'F'}#${shard}`;
const jobKey = (instanceId: string, replayId: string) => ({
  pk: `${instanceId}#WR#${replayId}`,
  sk: 'R',
});
const lockKey = (instanceId: string, webhookId: string) => ({
  pk: `${instanceId}#WJ#${webhookId}`,
  sk: 'ACTIVE',
});

/** The shard of an event's items in both indexes. */
export function eventShard(eventId: string): number {
  return (createHash('sha256').update(eventId).digest()[0] ?? 0) % EVENT_SHARDS;
}

const expiresAt = (from: number) => Math.floor((from + RETENTION_MS) / 1000);
/** Bounds of every key of the time-ordered indexes (ISO times start with a digit). */
const LOWEST = '0000';
const HIGHEST = '9999';

const StoredAttempt = z.object({
  webhook_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  replay_id: z.string().nullable().optional(),
  attempt: z.number(),
  outcome: z.enum(ATTEMPT_OUTCOMES),
  status_code: z.number().nullable().optional(),
  latency_ms: z.number().nullable().optional(),
  response_body: z.string().nullable().optional(),
  response_truncated: z.boolean().optional(),
  error: z.string().nullable().optional(),
  attempted_at: z.string(),
});

function attemptOf(item: Item): DeliveryAttempt {
  const stored = StoredAttempt.parse(item);
  return {
    webhook_id: stored.webhook_id,
    event_id: stored.event_id,
    event_type: stored.event_type,
    replay_id: stored.replay_id ?? null,
    attempt: stored.attempt,
    status: stored.outcome,
    status_code: stored.status_code ?? null,
    latency_ms: stored.latency_ms ?? null,
    response_body: stored.response_body ?? null,
    response_truncated: stored.response_truncated ?? false,
    error: stored.error ?? null,
    attempted_at: stored.attempted_at,
  };
}

/** An attempt's item: its key says which attempt it is, so that writing it again is harmless. */
export function attemptItem(instanceId: string, attempt: DeliveryAttempt): Item {
  const round = attempt.replay_id ?? '0';
  const number = String(attempt.attempt).padStart(2, '0');
  const stored: Record<(typeof ATTEMPT_ATTRIBUTES)[number], unknown> = {
    webhook_id: attempt.webhook_id,
    event_id: attempt.event_id,
    event_type: attempt.event_type,
    replay_id: attempt.replay_id,
    attempt: attempt.attempt,
    outcome: attempt.status,
    status_code: attempt.status_code,
    latency_ms: attempt.latency_ms,
    response_body: attempt.response_body,
    response_truncated: attempt.response_truncated,
    error: attempt.error,
    attempted_at: attempt.attempted_at,
  };
  return {
    pk: eventPk(instanceId, attempt.webhook_id, attempt.event_id),
    sk: `A#${round}#${number}`,
    ...stored,
    apk: attemptsIndexPk(
      instanceId,
      attempt.webhook_id,
      attempt.status,
      eventShard(attempt.event_id),
    ),
    ask: `${attempt.attempted_at}#${attempt.event_id}#${round}#${number}`,
    expires_at: expiresAt(Date.parse(attempt.attempted_at)),
  };
}

const StoredEvent = z.object({
  event_id: z.string(),
  event_type: z.string(),
  event_json: z.string().optional(),
  payload_key: z.string().optional(),
});

function keptEventOf(item: Item): KeptEvent & { payloadKey?: string } {
  const stored = StoredEvent.parse(item);
  return {
    id: stored.event_id,
    type: stored.event_type,
    ...(stored.event_json !== undefined
      ? { event: WebhookEvent.parse(JSON.parse(stored.event_json)) }
      : {}),
    ...(stored.payload_key !== undefined ? { payloadKey: stored.payload_key } : {}),
  };
}

/** Kept events, the attempt log's reads and replays' delivered counts. */
export class DynamoDeliveryStore implements KeptEvents, AttemptReader, ReplayTally {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly s3?: S3Client,
    private readonly bucket?: string,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Keeps the events of these deliveries for their webhooks (the fan-out, before it queues
   * them): one item each, written again unchanged when a change is handled twice. A large
   * event's body goes to the payloads bucket first, once.
   */
  async keep(instanceId: string, deliveries: readonly DeliveryMessage[]): Promise<void> {
    const large = new Map<string, WebhookEvent>();
    for (const { event } of deliveries) if (isLargeEvent(event)) large.set(event.id, event);
    for (const event of large.values()) await this.putPayload(instanceId, event);
    const now = this.now();
    const expires = expiresAt(now);
    // Indexed by when it was kept (queued), which follows its change: a replay since a time
    // finds every event changed since then, whatever the precision of the change's time (the
    // stream's: a second on AWS, a minute on DynamoDB Local).
    const keptAt = new Date(now).toISOString();
    const writes: WriteRequest[] = [];
    const seen = new Set<string>();
    for (const { webhook_id: webhookId, event } of deliveries) {
      const pk = eventPk(instanceId, webhookId, event.id);
      if (seen.has(pk)) continue;
      seen.add(pk);
      writes.push({
        PutRequest: {
          Item: {
            pk,
            sk: EVENT_SK,
            webhook_id: webhookId,
            event_id: event.id,
            event_type: event.type,
            ...(large.has(event.id)
              ? { payload_key: payloadKey(instanceId, event.id) }
              : { event_json: JSON.stringify(event) }),
            vpk: eventsIndexPk(instanceId, webhookId, eventShard(event.id)),
            vsk: `${keptAt}#${event.id}`,
            expires_at: expires,
          },
        },
      });
      // The person it names can find it when erased (`forget`); `person.deleted` names only
      // the ID the erasure itself announces.
      const personId = event.data.person_id;
      if (typeof personId === 'string' && event.type !== 'person.deleted') {
        writes.push({
          PutRequest: {
            Item: {
              pk: referencePk(instanceId, personId),
              sk: eventRef(webhookId, event.id),
              ...(large.has(event.id) ? { large: true } : {}),
              expires_at: expires,
            },
          },
        });
      }
    }
    await batchWrite(this.db, this.table, writes);
  }

  /**
   * Erases what was kept of a person's events for every webhook (the events, their attempts
   * and delivery marks, a large event's body), found through the person's references, which
   * go last so that a repeat after a failure finds the rest. Returns how many events it
   * erased. The people table's fan-out calls it on the person's removal (erasure).
   */
  async forget(instanceId: string, personId: string): Promise<number> {
    const refs = await partitionKeys(this.db, this.table, referencePk(instanceId, personId), [
      'large',
    ]);
    const events = refs.flatMap((ref) => {
      const match = EVENT_REF.exec(String(ref.sk));
      return match?.[1] && match[2]
        ? [{ webhookId: match[1], eventId: match[2], large: ref.large === true }]
        : [];
    });
    const keys: Key[] = [];
    const { failure } = await runBounded(events, 8, async ({ webhookId, eventId }) => {
      const items = await partitionKeys(
        this.db,
        this.table,
        eventPk(instanceId, webhookId, eventId),
      );
      keys.push(...items.map((item) => ({ pk: item.pk, sk: item.sk })));
    });
    if (failure) throw failure.error;
    await batchWrite(this.db, this.table, deletes(keys));
    const bodies = events
      .filter((event) => event.large)
      .map((event) => payloadKey(instanceId, event.eventId));
    if (bodies.length > 0) {
      if (!this.s3 || !this.bucket) throw new Error('Large webhook events need PAYLOADS_BUCKET');
      await new S3PayloadEraser(this.s3, this.bucket).erase(bodies);
    }
    await batchWrite(this.db, this.table, deletes(refs.map((ref) => ({ pk: ref.pk, sk: ref.sk }))));
    return events.length;
  }

  async find(
    instanceId: string,
    webhookId: string,
    eventId: string,
  ): Promise<KeptEvent | undefined> {
    const item = await this.eventItem(instanceId, webhookId, eventId);
    if (!item) return undefined;
    const { payloadKey: _key, ...kept } = keptEventOf(item);
    return kept;
  }

  /** The whole event, a large one's body read from the bucket (the delivery worker). */
  async event(
    instanceId: string,
    webhookId: string,
    eventId: string,
  ): Promise<WebhookEvent | undefined> {
    const item = await this.eventItem(instanceId, webhookId, eventId);
    if (!item) return undefined;
    const kept = keptEventOf(item);
    if (kept.event) return kept.event;
    if (!kept.payloadKey || !this.s3 || !this.bucket) return undefined;
    const object = await this.s3.send(
      new GetObjectCommand({ Bucket: this.bucket, Key: kept.payloadKey }),
    );
    return WebhookEvent.parse(JSON.parse((await object.Body?.transformToString('utf8')) ?? ''));
  }

  /** An event kept for a webhook (read consistently: its message was queued after it). */
  private async eventItem(
    instanceId: string,
    webhookId: string,
    eventId: string,
  ): Promise<Item | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: eventPk(instanceId, webhookId, eventId), sk: EVENT_SK },
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  async page(
    instanceId: string,
    webhookId: string,
    query: { since: string; until: string; shard: number; after: string | null; limit: number },
  ): Promise<{ events: KeptEvent[]; last: string | null; hasMore: boolean }> {
    const { after } = query;
    const keys = await queryShard(
      this.db,
      {
        table: this.table,
        index: 'events',
        partitionKey: 'vpk',
        sortKey: 'vsk',
        partition: (shard) => eventsIndexPk(instanceId, webhookId, shard),
        order: 'asc',
        // `until` is exclusive: every key of that time sorts after the bare time.
        between: [after ?? query.since, query.until],
        count: query.limit + 1,
        ...(after !== null ? { keep: (item: Item) => item.vsk !== after } : {}),
      },
      query.shard,
    );
    const page = keys.slice(0, query.limit);
    const items = await batchGet(
      this.db,
      this.table,
      page.map((key) => ({ pk: key.pk, sk: key.sk })),
      true,
    );
    const byPk = new Map(items.map((item) => [String(item.pk), item]));
    const events: KeptEvent[] = [];
    // In the index's order; an event expired meanwhile is passed over.
    for (const key of page) {
      const item = byPk.get(String(key.pk));
      if (!item) continue;
      const { payloadKey: _key, ...kept } = keptEventOf(item);
      events.push(kept);
    }
    const last = page.at(-1);
    return {
      events,
      last: last ? String(last.vsk) : null,
      hasMore: keys.length > query.limit,
    };
  }

  async attempts(
    instanceId: string,
    webhookId: string,
    query: AttemptPageQuery,
  ): Promise<{ attempts: DeliveryAttempt[]; next?: string }> {
    const partitions = query.outcomes.flatMap((outcome) =>
      Array.from({ length: EVENT_SHARDS }, (_, shard) =>
        attemptsIndexPk(instanceId, webhookId, outcome, shard),
      ),
    );
    const to = query.to ?? HIGHEST;
    const upper = query.before !== undefined && query.before < to ? query.before : to;
    const { before } = query;
    const perPartition = await Promise.all(
      partitions.map((_, index) =>
        queryShard(
          this.db,
          {
            table: this.table,
            index: 'attempts',
            partitionKey: 'apk',
            sortKey: 'ask',
            partition: (n) => partitions[n] ?? '',
            order: 'desc',
            between: [query.from ?? LOWEST, upper],
            count: query.limit + 1,
            ...(before !== undefined ? { keep: (item: Item) => item.ask !== before } : {}),
          },
          index,
        ),
      ),
    );
    const merged = perPartition
      .flat()
      .sort((a, b) => (String(a.ask) < String(b.ask) ? 1 : String(a.ask) > String(b.ask) ? -1 : 0));
    const page = merged.slice(0, query.limit);
    const last = page.at(-1);
    return {
      attempts: page.map(attemptOf),
      ...(merged.length > query.limit && last ? { next: String(last.ask) } : {}),
    };
  }

  /** Writes attempts together (one `BatchWriteItem` per 25); one item per attempt. */
  async recordAttempts(
    entries: readonly { instanceId: string; attempt: DeliveryAttempt }[],
  ): Promise<void> {
    // A batch may not name an item twice: the latest record of an attempt is kept.
    const items = new Map<string, Item>();
    for (const { instanceId, attempt } of entries) {
      const item = attemptItem(instanceId, attempt);
      items.set(`${String(item.pk)}\u0000${String(item.sk)}`, item);
    }
    await batchWrite(
      this.db,
      this.table,
      [...items.values()].map((Item) => ({ PutRequest: { Item } })),
    );
  }

  async delivered(
    instanceId: string,
    replayId: string,
    webhookId: string,
    eventId: string,
  ): Promise<void> {
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            pk: eventPk(instanceId, webhookId, eventId),
            sk: `D#${replayId}`,
            expires_at: expiresAt(this.now()),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      // Counted already (a repeat of the delivery).
      if (isConditionFailure(error)) return;
      throw error;
    }
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: jobKey(instanceId, replayId),
        UpdateExpression: 'ADD events_delivered :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
  }

  private async putPayload(instanceId: string, event: WebhookEvent): Promise<void> {
    if (!this.s3 || !this.bucket) throw new Error('Large webhook events need PAYLOADS_BUCKET');
    const { s3, bucket } = this;
    await retried(
      'Keeping a large webhook event',
      () =>
        s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: payloadKey(instanceId, event.id),
            Body: JSON.stringify(event),
            ContentType: 'application/json',
          }),
        ),
      'The payloads bucket',
    );
  }
}

/** Where a large event's body is kept (the bucket's 30-day rule removes it, as its item goes). */
export function payloadKey(instanceId: string, eventId: string): string {
  return `webhooks/${instanceId}/events/${eventId}.json`;
}

/**
 * The attempt log of the delivery worker: records are kept in the process as attempts end
 * and written together when the worker's batch ends (`flush`, one `BatchWriteItem` per 25),
 * so that no message waits for its record. A flush that fails is reported (the error log) and
 * its records are lost: the log is for watching deliveries, not part of them.
 */
export class BatchedAttemptLog implements AttemptLog {
  private pending: { instanceId: string; attempt: DeliveryAttempt }[] = [];

  constructor(
    private readonly store: Pick<DynamoDeliveryStore, 'recordAttempts'>,
    private readonly onError: (error: unknown, lost: number) => void = () => undefined,
  ) {}

  record(instanceId: string, attempt: DeliveryAttempt): Promise<void> {
    this.pending.push({ instanceId, attempt });
    return Promise.resolve();
  }

  /** Writes what was recorded since the last flush (what is recorded meanwhile waits). */
  async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    try {
      await this.store.recordAttempts(batch);
    } catch (error) {
      this.onError(error, batch.length);
    }
  }
}

const StoredJob = z.object({
  id: z.string(),
  webhook_id: z.string(),
  event_id: z.string().optional(),
  since: z.string().optional(),
  until: z.string().optional(),
  status: z.enum(REPLAY_STATUSES),
  events_found: z.number(),
  events_queued: z.number(),
  events_skipped: z.number(),
  events_delivered: z.number().optional(),
  position: z.object({ shard: z.number().int(), after: z.string().nullable() }),
  created_at: z.string(),
  updated_at: z.string(),
  completed_at: z.string().optional(),
  error: z.string().optional(),
});

function jobOf(item: Item): ReplayJob {
  const { event_id, since, until, completed_at, error, events_delivered, ...rest } =
    StoredJob.parse(item);
  return {
    ...rest,
    events_delivered: events_delivered ?? 0,
    ...(event_id !== undefined ? { event_id } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
    ...(completed_at !== undefined ? { completed_at } : {}),
    ...(error !== undefined ? { error } : {}),
  };
}

/** A position as one comparable value: what a move of the job is conditioned on. */
const positionKey = (position: ReplayPosition) => `${position.shard}:${position.after ?? ''}`;

/** Replays and the webhooks their jobs hold. */
export class DynamoReplayStore implements ReplayStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async create(instanceId: string, job: ReplayJob, exclusive: boolean, now: number) {
    const put = {
      TableName: this.table,
      Item: {
        ...jobKey(instanceId, job.id),
        ...job,
        position_key: positionKey(job.position),
        expires_at: expiresAt(now),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    };
    if (!exclusive) {
      await this.db.send(new PutCommand(put));
      return;
    }
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: put },
            {
              Put: {
                TableName: this.table,
                Item: {
                  ...lockKey(instanceId, job.webhook_id),
                  replay_id: job.id,
                  stale_at: now + REPLAY_STALE_MS,
                  expires_at: expiresAt(now),
                },
                // A replay that stopped moving long ago (its worker gave up) holds nothing.
                ConditionExpression: 'attribute_not_exists(pk) OR stale_at < :now',
                ExpressionAttributeValues: { ':now': now },
              },
            },
          ],
        }),
      );
    } catch (error) {
      if (cancellationCodes(error)?.[1] !== 'ConditionalCheckFailed') throw error;
      const { Item } = await this.db.send(
        new GetCommand({
          TableName: this.table,
          Key: lockKey(instanceId, job.webhook_id),
          ConsistentRead: true,
        }),
      );
      throw new ReplayRunningError(
        job.webhook_id,
        typeof Item?.replay_id === 'string' ? Item.replay_id : undefined,
      );
    }
  }

  async get(instanceId: string, replayId: string): Promise<ReplayJob | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: jobKey(instanceId, replayId),
        ConsistentRead: true,
      }),
    );
    return Item ? jobOf(Item) : undefined;
  }

  async advance(
    instanceId: string,
    job: ReplayJob,
    step: { to: ReplayPosition; found: number; queued: number; skipped: number; done: boolean },
    now: number,
  ): Promise<boolean> {
    const at = new Date(now).toISOString();
    const moved = await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: jobKey(instanceId, job.id),
        UpdateExpression:
          'SET #position = :to, position_key = :toKey, #status = :status, updated_at = :at, expires_at = :expires' +
          (step.done ? ', completed_at = :at' : '') +
          ' ADD events_found :found, events_queued :queued, events_skipped :skipped',
        ConditionExpression: 'position_key = :seen AND #status IN (:queued_status, :running)',
        ExpressionAttributeNames: { '#position': 'position', '#status': 'status' },
        ExpressionAttributeValues: {
          ':to': step.to,
          ':toKey': positionKey(step.to),
          ':seen': positionKey(job.position),
          ':status': step.done ? 'complete' : 'running',
          ':queued_status': 'queued',
          ':running': 'running',
          ':at': at,
          ':expires': expiresAt(now),
          ':found': step.found,
          ':queued': step.queued,
          ':skipped': step.skipped,
        },
      }),
    );
    if (!moved) return false;
    if (step.done) await this.release(instanceId, job);
    else await this.renew(instanceId, job, now);
    return true;
  }

  async fail(instanceId: string, job: ReplayJob, error: string, now: number): Promise<void> {
    const at = new Date(now).toISOString();
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: jobKey(instanceId, job.id),
        UpdateExpression:
          'SET #status = :failed, #error = :error, updated_at = :at, completed_at = :at',
        ConditionExpression: '#status IN (:queued_status, :running)',
        ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
        ExpressionAttributeValues: {
          ':failed': 'failed',
          ':error': error,
          ':at': at,
          ':queued_status': 'queued',
          ':running': 'running',
        },
      }),
    );
    await this.release(instanceId, job);
  }

  async remove(instanceId: string, job: ReplayJob): Promise<void> {
    await this.db.send(
      new DeleteCommand({ TableName: this.table, Key: jobKey(instanceId, job.id) }),
    );
    await this.release(instanceId, job);
  }

  /** The webhook is free for another replay (if this one still held it). */
  private async release(instanceId: string, job: ReplayJob): Promise<void> {
    try {
      await this.db.send(
        new DeleteCommand({
          TableName: this.table,
          Key: lockKey(instanceId, job.webhook_id),
          ConditionExpression: 'replay_id = :id',
          ExpressionAttributeValues: { ':id': job.id },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  /** A replay that moves keeps holding its webhook. */
  private async renew(instanceId: string, job: ReplayJob, now: number): Promise<void> {
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: lockKey(instanceId, job.webhook_id),
        UpdateExpression: 'SET stale_at = :stale',
        ConditionExpression: 'replay_id = :id',
        ExpressionAttributeValues: { ':stale': now + REPLAY_STALE_MS, ':id': job.id },
      }),
    );
  }
}
