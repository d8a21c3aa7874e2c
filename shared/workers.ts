import { AUDIENCE_HELD_MESSAGE } from './domain/audiences/audience.js';
import type { QueueName, TableName } from './resources.js';
import type { Access } from './routes.js';

/**
 * The queue workers: one Lambda per entry, fed by its queue through an SQS event source
 * with partial batch failure reporting (CDK), or by a local poller (`npm start`). Features
 * with queue work (asynchronous ingestion, transactional email, ...) add their workers here.
 */
export interface WorkerDefinition {
  /** Folder under `functions/` holding `handler.ts`. */
  readonly function: string;
  readonly queue: QueueName;
  readonly batchSize: number;
  /**
   * How many batches run at once at most: the SQS event source's maximum concurrency (not
   * reserved concurrency, which would throttle messages into the dead-letter queue). The
   * local pollers run as many.
   */
  readonly maxConcurrency: number;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  readonly access: readonly Access[];
}

/** An alarm on a message a function logs (docs/operations.md has the `runbook` section). */
export interface LogAlarm {
  readonly id: string;
  readonly message: string;
  readonly description: string;
  readonly runbook: string;
}

export const WORKERS: readonly WorkerDefinition[] = [
  {
    // A batch of 10 requests of up to 100 records each, applied 2 at a time
    // (INGEST_MESSAGES_AT_ONCE); at most 5 batches at once: ~16 writes in flight per request,
    // ~160 for async ingestion in all. maxConcurrency is the drain rate's knob (docs/api.md,
    // back-pressure).
    function: 'ingest-worker',
    queue: 'ingest',
    batchSize: 10,
    maxConcurrency: 5,
    memoryMb: 1024,
    timeoutSeconds: 60,
    access: [
      'config:read',
      'people',
      'organizations',
      'activities',
      'requests',
      'geo',
      'payloads:get',
      'queue:ingest:retry',
      // Background archive, restore and delete (`all_rows_selected`): erasing what names a
      // person, and queueing the rest of a long request again.
      'emails',
      'payloads:erase',
      'queue:ingest',
      // Audience subscriptions sent with `async: true`.
      'audiences',
    ],
  },
  {
    // One email per message; 5 sends at a time per batch, paced to the account's send rate
    // (SES_MAX_SEND_RATE, shared by the batches that run at once).
    function: 'email-worker',
    queue: 'email',
    batchSize: 10,
    maxConcurrency: 4,
    memoryMb: 1024,
    timeoutSeconds: 60,
    access: [
      'config:read',
      'emails',
      'activities',
      'email-payloads:get',
      'queue:email:retry',
      'queue:email-events:dead-letters',
      'ses:send',
    ],
  },
  {
    // Audience builds (pages of people asked to be evaluated), the daily re-evaluation and
    // deletions; each message is a slice of work that queues what follows.
    function: 'audience-jobs-worker',
    queue: 'audience-jobs',
    batchSize: 5,
    maxConcurrency: 4,
    memoryMb: 512,
    timeoutSeconds: 60,
    access: [
      'config:write',
      'audiences',
      'queue:audience-jobs',
      'queue:audience-jobs:retry',
      // Evaluation requests are `E` items of the people table; a first build reads its people.
      'people',
    ],
  },
  {
    // SES notifications (through SNS): each marks its email, once per event type.
    function: 'email-events-worker',
    queue: 'email-events',
    batchSize: 10,
    maxConcurrency: 2,
    memoryMb: 512,
    timeoutSeconds: 30,
    access: [
      'config:read',
      'emails',
      'people',
      'activities',
      'organizations:read',
      'queue:email-events:retry',
    ],
  },
  {
    // One attempt per message, the messages of a batch at once: a slow endpoint (15 s at
    // most) holds its own message only (docs/webhooks.md).
    function: 'webhook-delivery-worker',
    queue: 'webhooks',
    batchSize: 10,
    maxConcurrency: 4,
    memoryMb: 512,
    timeoutSeconds: 60,
    access: [
      'config:read',
      'webhook-secrets:unwrap',
      'queue:webhooks:retry',
      // A message for an endpoint known slow goes to the slow queue, not into an attempt.
      'queue:webhooks-slow',
      'webhooks:health',
      // The attempt log, events kept by reference (claim check), replays' delivered counts.
      'deliveries',
      'webhook-payloads:get',
      // An event naming an erased person is not sent, and what is kept of them is erased.
      'erasures:check',
      'webhook-events:forget',
    ],
  },
  {
    // The slow endpoints' deliveries (docs/webhooks.md, "Fair shares"): their own capacity,
    // so that an endpoint taking seconds to answer holds no other endpoint's messages.
    function: 'webhook-slow-delivery-worker',
    queue: 'webhooks-slow',
    batchSize: 5,
    maxConcurrency: 2,
    memoryMb: 512,
    timeoutSeconds: 60,
    access: [
      'config:read',
      'webhook-secrets:unwrap',
      'queue:webhooks-slow:retry',
      'webhooks:health',
      'deliveries',
      'webhook-payloads:get',
      'erasures:check',
      'webhook-events:forget',
    ],
  },
  {
    // Replays since a time (docs/webhooks.md): each message walks the endpoint's kept events
    // a page at a time, at a paced rate, queues their deliveries and queues what follows.
    function: 'webhook-replay-worker',
    queue: 'webhook-replays',
    batchSize: 1,
    maxConcurrency: 2,
    memoryMb: 512,
    timeoutSeconds: 60,
    access: [
      'config:read',
      'deliveries',
      'queue:webhooks',
      'queue:webhook-replays',
      'queue:webhook-replays:retry',
    ],
  },
];

/**
 * The stream workers: one Lambda per entry, fed by a table's DynamoDB Stream (CDK: an event
 * source mapping that reports partial batch failures, bisects a failing batch and retries it
 * `maxRetryAttempts` times before describing it to the region's stream-failures queue), or by
 * a local poller of DynamoDB Local's stream (`npm start`). A stream delivers each change at
 * least once, in order per item (and per partition key), possibly late: a stream worker reacts
 * to what its subject is now (`shared/worker/stream-worker.ts`).
 */
export interface StreamWorkerDefinition {
  /** Folder under `functions/` holding `handler.ts`. */
  readonly function: string;
  /** The table whose stream feeds it. */
  readonly table: TableName;
  /**
   * Only changes of items with one of these sort keys reach the function (Lambda's event
   * filter, which drops the others before they are billed; the local poller does the same).
   */
  readonly sortKeys?: readonly string[];
  /**
   * Instead of `sortKeys`: only new items (INSERT) holding this attribute `true` reach it
   * (an item whose sort key varies, as an activity's time and ID).
   */
  readonly insertedWith?: string;
  /** Instead: only changes of items whose sort key starts with this (`A#`, memberships). */
  readonly sortKeyPrefix?: string;
  /** Instead: every new item (INSERT), whatever it is (the worker tells them apart). */
  readonly insertsOnly?: true;
  readonly batchSize: number;
  /**
   * Batches of one shard processed at once (Lambda's parallelization factor, 1-10); changes
   * of one partition key stay in order whatever it is.
   */
  readonly parallelization: number;
  /** Attempts of a failing batch before it is described to the stream-failures queue. */
  readonly maxRetryAttempts: number;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  readonly access: readonly Access[];
  /**
   * Messages of its log that alarm (a metric filter of its log group on the message, an
   * alarm `cdp-<region>-<id>` when it is logged at all in 5 minutes).
   */
  readonly logAlarms?: readonly LogAlarm[];
}

/** A webhook fan-out worker of one table (they differ only in what they are fed). */
function webhookFanout(
  name: string,
  table: TableName,
  filter: Pick<StreamWorkerDefinition, 'sortKeys' | 'sortKeyPrefix' | 'insertsOnly'>,
  more: readonly Access[] = [],
): StreamWorkerDefinition {
  return {
    function: name,
    table,
    ...filter,
    batchSize: 100,
    parallelization: 2,
    maxRetryAttempts: 10,
    memoryMb: 512,
    timeoutSeconds: 60,
    // Each event queued is kept first (30 days, for replays): the deliveries table, and the
    // payloads bucket for an event too large for a message.
    access: ['config:read', 'queue:webhooks', 'webhook-events:keep', ...more],
  };
}

export const STREAM_WORKERS: readonly StreamWorkerDefinition[] = [
  {
    // Every change of a person moves the person's entries of the field index, and every change
    // and every request to evaluate one (`E` items) re-evaluates that person against the
    // instance's audiences (docs/audiences.md).
    function: 'audience-worker',
    table: 'people',
    sortKeys: ['P', 'E'],
    batchSize: 100,
    parallelization: 4,
    maxRetryAttempts: 10,
    memoryMb: 1024,
    timeoutSeconds: 60,
    // People: reads them, and removes an erased person's evaluation item (`E`). Indexes:
    // it keeps the field index from the same changes (the stream's second reader is the
    // webhook fan-out; AWS advises at most two a shard).
    access: ['config:read', 'people', 'audiences', 'activities', 'indexes'],
    logAlarms: [
      {
        id: 'audiences-held',
        message: AUDIENCE_HELD_MESSAGE,
        description:
          'An audience is held: its filter names a field its instance no longer has, so its members are not evaluated (they keep their memberships).',
        runbook: 'audiences-held',
      },
    ],
  },
  // The webhook fan-out workers (docs/webhooks.md): every change of a table's records makes
  // its events, queued once per subscribed webhook of its instance. They read webhooks and
  // write nothing but messages.
  // A person's removal (erasure) also erases the events kept of them.
  webhookFanout('webhook-fanout-worker', 'people', { sortKeys: ['P'] }, ['webhook-events:forget']),
  webhookFanout('organization-webhook-worker', 'organizations', { sortKeys: ['O'] }),
  // The activities stream's second consumer, beside the last-seen worker (AWS advises at
  // most two per shard): every new activity makes `activity.created`.
  webhookFanout('activity-webhook-worker', 'activities', { insertsOnly: true }),
  // Emails sent, bounced or complained about.
  webhookFanout('email-webhook-worker', 'emails', { sortKeys: ['M'] }),
  // People entering and leaving audiences (their memberships, `A#<audience>`).
  webhookFanout('audience-webhook-worker', 'audiences', { sortKeyPrefix: 'A#' }),
  {
    // Every new activity that tracks a touch moves its person's last seen forward
    // (docs/data-model.md, "Last seen"): off the request path, a second or so behind it.
    function: 'last-seen-worker',
    table: 'activities',
    insertedWith: 'touch',
    batchSize: 100,
    parallelization: 4,
    maxRetryAttempts: 10,
    memoryMb: 512,
    timeoutSeconds: 30,
    access: ['people'],
  },
];

/**
 * A stream worker's event filter, as Lambda's filter criteria pattern (infra) and as the
 * local poller applies it (`keepsStreamRecord`).
 */
export function streamFilterPattern(worker: StreamWorkerDefinition): Record<string, unknown> {
  if (worker.insertedWith !== undefined) {
    return {
      eventName: ['INSERT'],
      dynamodb: { NewImage: { [worker.insertedWith]: { BOOL: [true] } } },
    };
  }
  if (worker.sortKeyPrefix !== undefined) {
    return { dynamodb: { Keys: { sk: { S: [{ prefix: worker.sortKeyPrefix }] } } } };
  }
  if (worker.insertsOnly) return { eventName: ['INSERT'] };
  return { dynamodb: { Keys: { sk: { S: [...(worker.sortKeys ?? [])] } } } };
}

/** Whether a stream record passes the worker's event filter (`streamFilterPattern`). */
export function keepsStreamRecord(
  worker: StreamWorkerDefinition,
  record: {
    eventName?: string;
    dynamodb?: {
      Keys?: Record<string, { S?: string }>;
      NewImage?: Record<string, { BOOL?: boolean }>;
    };
  },
): boolean {
  if (worker.insertedWith !== undefined) {
    return (
      record.eventName === 'INSERT' &&
      record.dynamodb?.NewImage?.[worker.insertedWith]?.BOOL === true
    );
  }
  if (worker.sortKeyPrefix !== undefined) {
    return (record.dynamodb?.Keys?.sk?.S ?? '').startsWith(worker.sortKeyPrefix);
  }
  if (worker.insertsOnly) return record.eventName === 'INSERT';
  return (worker.sortKeys ?? []).includes(record.dynamodb?.Keys?.sk?.S ?? '');
}
