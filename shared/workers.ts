import type { QueueName } from './resources.js';
import type { Access } from './routes.js';

/**
 * The queue workers: one Lambda per entry, fed by its queue through an SQS event source
 * with partial batch failure reporting (CDK), or by a local poller (`npm start`). The
 * asynchronous ingestion and transactional email issues add their workers here.
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

export const WORKERS: readonly WorkerDefinition[] = [
  {
    // A batch of 10 requests of up to 100 records each, one request after the other; at most
    // 5 batches at once: ~16 writes in flight per batch, ~80 for async ingestion in all,
    // which leaves the tables and the account's Lambda concurrency to synchronous traffic.
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
];
