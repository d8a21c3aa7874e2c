import type { Region } from './domain/regions.js';

/**
 * What the `attempts` index of the deliveries table carries of an attempt beside its keys:
 * everything `webhooks/deliveries/get` answers, so that a page is its queries alone.
 */
export const ATTEMPT_ATTRIBUTES = [
  'webhook_id',
  'event_id',
  'event_type',
  'replay_id',
  'attempt',
  'outcome',
  'status_code',
  'latency_ms',
  'response_body',
  'response_truncated',
  'error',
  'attempted_at',
] as const;

/**
 * The stateful resources of one regional deployment: tables, queues and buckets. The CDK
 * stacks create them from this list, and so does the local stack at start (idempotently).
 * Names are `cdp-<region>-<name>`, so that one DynamoDB Local can hold all three regions.
 */
export interface IndexDefinition {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  /** Non-key attributes copied into the index; `undefined` projects keys only. */
  readonly include?: readonly string[];
}

export interface TableDefinition {
  readonly name: TableName;
  readonly purpose: string;
  readonly indexes: readonly IndexDefinition[];
  /** Attribute holding an epoch-seconds expiry, where items expire. */
  readonly ttlAttribute?: string;
  /**
   * The DynamoDB Stream of the table's changes, where the platform reacts to them (stream
   * workers, `shared/workers.ts`): what each record carries.
   */
  readonly stream?: StreamView;
}

/** What a stream record holds of the item: its image after the change, or before and after. */
export type StreamView = 'NEW_IMAGE' | 'NEW_AND_OLD_IMAGES';

export type TableName =
  | 'config'
  | 'people'
  | 'organizations'
  | 'activities'
  | 'requests'
  | 'emails'
  | 'audiences'
  | 'deliveries'
  | 'indexes';

/** Every table is keyed by the strings `pk` and `sk`; the instance ID leads every `pk`. */
export const TABLES: readonly TableDefinition[] = [
  {
    name: 'config',
    purpose:
      'instances, data sources, API key hashes, custom fields, activity definitions, templates',
    indexes: [],
  },
  {
    name: 'people',
    purpose: 'people, merge-key claims, tags and counters',
    stream: 'NEW_AND_OLD_IMAGES',
    indexes: [
      { name: 'list', partitionKey: 'lpk', sortKey: 'lsk' },
      // Search and sort by email and name; each carries the other tokens for de-duplication.
      { name: 'email', partitionKey: 'epk', sortKey: 'esk', include: ['fsk', 'gsk'] },
      { name: 'first', partitionKey: 'fpk', sortKey: 'fsk', include: ['esk', 'gsk'] },
      { name: 'last', partitionKey: 'gpk', sortKey: 'gsk', include: ['esk', 'fsk'] },
    ],
  },
  {
    name: 'indexes',
    purpose:
      "the field index: people's values, tags and organizations, for filters and sorts (docs/data-model.md)",
    // Kept from the people table's stream (the audience worker); keys only, no stream.
    indexes: [],
  },
  {
    name: 'organizations',
    purpose: 'organizations, merge-key claims, memberships and counters',
    stream: 'NEW_AND_OLD_IMAGES',
    indexes: [
      { name: 'list', partitionKey: 'lpk', sortKey: 'lsk' },
      { name: 'name', partitionKey: 'npk', sortKey: 'nsk' },
    ],
  },
  {
    name: 'activities',
    purpose: 'activities by person and time, idempotency keys',
    indexes: [],
    stream: 'NEW_IMAGE',
    ttlAttribute: 'expires_at',
  },
  {
    name: 'requests',
    purpose:
      'idempotency records (24 hours), asynchronous requests and their ledgers (21 days), rate-limit buckets, listing positions (a day)',
    indexes: [],
    ttlAttribute: 'expires_at',
  },
  {
    name: 'emails',
    purpose: 'transactional emails (state, link destinations, events) and suppressed addresses',
    indexes: [],
    stream: 'NEW_AND_OLD_IMAGES',
    ttlAttribute: 'expires_at',
  },
  {
    name: 'audiences',
    purpose:
      'audience memberships of people, audience counters, daily re-evaluation markers (docs/audiences.md)',
    indexes: [
      // The members of an audience, 16 shards, in person ID order (`person/get` by audience).
      { name: 'members', partitionKey: 'apk', sortKey: 'ask' },
    ],
    ttlAttribute: 'expires_at',
    stream: 'NEW_AND_OLD_IMAGES',
  },
  {
    name: 'deliveries',
    purpose:
      'webhook events kept for replay, delivery attempts and replay jobs, 30 days (docs/webhooks.md)',
    indexes: [
      // One endpoint's attempts by time, 8 shards per outcome (`webhooks/deliveries/get`).
      {
        name: 'attempts',
        partitionKey: 'apk',
        sortKey: 'ask',
        include: [...ATTEMPT_ATTRIBUTES],
      },
      // One endpoint's events by time, 8 shards (replays since a time).
      { name: 'events', partitionKey: 'vpk', sortKey: 'vsk' },
    ],
    ttlAttribute: 'expires_at',
  },
];

export type QueueName =
  | 'ingest'
  | 'email'
  | 'email-events'
  | 'audience-jobs'
  | 'webhooks'
  | 'webhooks-slow'
  | 'webhook-replays';

export interface QueueDefinition {
  readonly name: QueueName;
  readonly purpose: string;
  readonly visibilityTimeoutSeconds: number;
  /** Receives after which a message goes to the queue's dead-letter queue. */
  readonly maxReceiveCount: number;
  /** How long a message waits at most (default 4 days; SQS allows 14). */
  readonly retentionDays?: number;
}

export const QUEUES: readonly QueueDefinition[] = [
  {
    name: 'ingest',
    purpose: 'async person merges, organization merges and activities',
    // Six times the worker's timeout, as AWS advises for an event source.
    visibilityTimeoutSeconds: 360,
    maxReceiveCount: 5,
  },
  {
    name: 'email',
    purpose: 'rendered transactional emails to send',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
  },
  {
    name: 'email-events',
    purpose: 'SES delivery, bounce and complaint notifications',
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 5,
  },
  {
    name: 'audience-jobs',
    purpose: 'audience builds, daily re-evaluations and deletions (docs/audiences.md)',
    visibilityTimeoutSeconds: 360,
    maxReceiveCount: 5,
  },
  {
    name: 'webhooks',
    purpose:
      'webhook deliveries, one event for one webhook, retried on their schedule (docs/webhooks.md)',
    // Six times the delivery worker's timeout.
    visibilityTimeoutSeconds: 360,
    // Every attempt of the retry schedule (MAX_ATTEMPTS of delivery.ts), then the DLQ.
    maxReceiveCount: 15,
    // The schedule spans about 3.3 days: a backlog's late retries must not expire unseen.
    retentionDays: 14,
  },
  {
    name: 'webhooks-slow',
    purpose:
      'deliveries to endpoints that answer slowly, apart from the others (docs/webhooks.md, "Fair shares")',
    visibilityTimeoutSeconds: 360,
    maxReceiveCount: 15,
    retentionDays: 14,
  },
  {
    name: 'webhook-replays',
    purpose:
      'webhook replays since a time: each message walks a slice of the job (docs/webhooks.md)',
    // Six times the replay worker's timeout.
    visibilityTimeoutSeconds: 360,
    maxReceiveCount: 5,
  },
];

/**
 * Where a stream worker's batch goes when it kept failing (its description: stream, shard,
 * sequence numbers, as Lambda's on-failure destination writes it); nothing consumes it, an
 * alarm watches it (docs/operations.md, stream failures).
 */
export const STREAM_FAILURES_QUEUE = 'stream-failures';

export function streamFailuresQueueName(region: Region): string {
  return `cdp-${region}-${STREAM_FAILURES_QUEUE}`;
}

export type BucketName = 'payloads';

export const BUCKETS: readonly { name: BucketName; purpose: string }[] = [
  {
    name: 'payloads',
    purpose:
      'claim-check payloads: large async requests, rendered emails and attachments, large webhook events',
  },
];

export function tableName(region: Region, table: TableName): string {
  return `cdp-${region}-${table}`;
}

export function queueName(region: Region, queue: QueueName, deadLetter = false): string {
  return `cdp-${region}-${queue}${deadLetter ? '-dlq' : ''}`;
}

/** The environment variable that carries a table's name to the functions (`PEOPLE_TABLE`). */
export function tableVariable(table: TableName): string {
  return `${table.toUpperCase()}_TABLE`;
}

/** The environment variable that carries a bucket's name to the functions (`PAYLOADS_BUCKET`). */
export function bucketVariable(bucket: BucketName): string {
  return `${bucket.toUpperCase()}_BUCKET`;
}

/** The environment variable that carries a queue's URL to the functions (`INGEST_QUEUE_URL`). */
export function queueUrlVariable(queue: QueueName): string {
  return `${queue.toUpperCase().replace(/-/g, '_')}_QUEUE_URL`;
}

/** Local bucket names; in AWS the stack lets CloudFormation name buckets (they are global). */
export function localBucketName(region: Region, bucket: BucketName): string {
  return `cdp-${region}-${bucket}`;
}

/**
 * The SES configuration set a region's emails are sent with; its event destination publishes
 * sends, deliveries, bounces and complaints to the region's SES event topic.
 */
export function sesConfigurationSet(region: Region): string {
  return `cdp-${region}`;
}

/**
 * The environment variable that carries a dead-letter queue's URL (`INGEST_DLQ_URL`): the
 * functions that read their depths (the email worker's SES events, the console's overview).
 */
export function deadLetterUrlVariable(queue: QueueName): string {
  return `${queue.toUpperCase().replace(/-/g, '_')}_DLQ_URL`;
}
