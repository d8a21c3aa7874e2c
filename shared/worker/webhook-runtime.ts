import { DynamoConfigStore } from '../adapters/config-store.js';
import type { SQSRecord } from 'aws-lambda';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createS3Client, createSqsClient } from '../adapters/aws-clients.js';
import { SqsDeliveryQueue, SqsReplayQueue } from '../adapters/delivery-queue.js';
import { DynamoErasureMarks } from '../adapters/erasure-marks.js';
import {
  BatchedAttemptLog,
  DynamoDeliveryStore,
  DynamoReplayStore,
} from '../adapters/delivery-store.js';
import { createKeyWrapper, WEBHOOK_SECRET_PURPOSE } from '../adapters/key-wrappers.js';
import { DynamoWebhookStore } from '../adapters/webhook-store.js';
import { httpWebhookTransport, resolveHost } from '../adapters/webhook-transport.js';
import { readEnv, WebhooksEnv } from '../config/env.js';
import {
  deliver,
  MAX_ATTEMPTS,
  QueuedDelivery,
  queuedDelivery,
  type DeliveryMessage,
  type WebhookEvent,
} from '../domain/webhooks/delivery.js';
import {
  abandonReplay,
  ReplayMessage,
  runReplay,
  type ReplayPorts,
} from '../domain/webhooks/replay.js';
import type { DeliveriesPorts } from '../domain/webhooks/attempts.js';
import type { CursorCodec } from '../domain/cursor.js';
import { sleep } from '../lib/time-budget.js';
import { KeyedLimiter } from '../lib/keyed-limiter.js';
import {
  activityEvents,
  audienceEvents,
  emailEvents,
  fanOut,
  organizationEvents,
  personEvents,
} from '../domain/webhooks/events.js';
import type { Webhook, WebhookServices } from '../domain/webhooks/webhook.js';
import { logger } from '../lib/logger.js';
import { sqsWorker } from './sqs-worker.js';
import { streamWorker, type StreamChange } from './stream-worker.js';

/**
 * The composition roots of webhooks (docs/webhooks.md): the API's services, the fan-out
 * workers (the people, organizations, activities, emails and audiences tables' streams → the
 * webhooks queue) and the
 * delivery worker (the webhooks queue → customers' URLs).
 */
function webhookBasics(db: DynamoDBDocumentClient) {
  const env = readEnv(WebhooksEnv);
  return {
    env,
    store: new DynamoWebhookStore(db, env.CONFIG_TABLE),
    secrets: createKeyWrapper(env.SIGNING_KMS_KEY_ID, WEBHOOK_SECRET_PURPOSE),
    addresses: { allowLoopback: env.CDP_WEBHOOKS_ALLOW_LOOPBACK },
  };
}

/** The services of the webhook endpoints (their handler modules build them once). */
export function createWebhookServices(
  db: DynamoDBDocumentClient = createDocumentClient(),
): WebhookServices {
  const { store, secrets, addresses } = webhookBasics(db);
  return { store, secrets, addresses, resolve: resolveHost };
}

/** The deliveries table (kept events, attempts, replays), from the function's environment. */
function deliveryStores(db: DynamoDBDocumentClient, env: ReturnType<typeof webhookBasics>['env']) {
  if (!env.DELIVERIES_TABLE) throw new Error('Invalid environment: DELIVERIES_TABLE is required');
  return {
    deliveries: new DynamoDeliveryStore(
      db,
      env.DELIVERIES_TABLE,
      env.PAYLOADS_BUCKET ? createS3Client() : undefined,
      env.PAYLOADS_BUCKET,
    ),
    jobs: new DynamoReplayStore(db, env.DELIVERIES_TABLE),
  };
}

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`Invalid environment: ${name} is required`);
  return value;
}

/** `webhooks/deliveries/get`: the attempt log (its cursors signed per instance). */
export function createAttemptServices(
  db: DynamoDBDocumentClient,
): (cursors: CursorCodec) => DeliveriesPorts {
  const { env, store } = webhookBasics(db);
  const { deliveries } = deliveryStores(db, env);
  return (cursors) => ({ webhooks: store, attempts: deliveries, cursors });
}

/** `webhooks/replay`: replays, what they queue, and their progress. */
export function createReplayServices(db: DynamoDBDocumentClient): ReplayPorts {
  const { env, store } = webhookBasics(db);
  const { deliveries, jobs } = deliveryStores(db, env);
  const sqs = createSqsClient();
  return {
    webhooks: store,
    events: deliveries,
    jobs,
    // The read-only route has neither queue: it never queues.
    deliveries: env.WEBHOOKS_QUEUE_URL
      ? new SqsDeliveryQueue(sqs, env.WEBHOOKS_QUEUE_URL)
      : { queue: () => Promise.reject(new Error('WEBHOOKS_QUEUE_URL is required')) },
    replays: env.WEBHOOK_REPLAYS_QUEUE_URL
      ? new SqsReplayQueue(sqs, env.WEBHOOK_REPLAYS_QUEUE_URL)
      : { send: () => Promise.reject(new Error('WEBHOOK_REPLAYS_QUEUE_URL is required')) },
  };
}

/** What a fan-out worker reads of a table's changes. */
interface FanoutSource {
  /**
   * The instance a change is about, and the subject its changes are handled in order with
   * (its item's partition); none to skip it.
   */
  subjectOf(change: StreamChange): { instanceId: string; subject: string } | undefined;
  /** `hidden`: fields the instance deleted, left out of the events' `fields`. */
  eventsOf(subject: string, change: StreamChange, hidden: ReadonlySet<string>): WebhookEvent[];
  /** Whether its events carry fields (the instance's deleted fields are then read). */
  carriesFields?: boolean;
  /**
   * Whether a change erases its subject, whose kept events then go too (after its own events
   * are queued: the subject's earlier changes come first in its stream, so none is kept after).
   */
  erases?: (change: StreamChange) => boolean;
}

const ID = '[0-9a-f]{24}';
const PERSON_PK = new RegExp(`^(.+)#P#(${ID})$`);

/** The instance and the record of a partition key `<inst>#<kind>#<id>`. */
function partitionOf(pk: unknown, kind: string): { instanceId: string; id: string } | undefined {
  const match = new RegExp(`^(.+)#${kind}#([0-9a-zA-Z_-]+)$`).exec(String(pk));
  return match?.[1] && match[2] ? { instanceId: match[1], id: match[2] } : undefined;
}

/** A source whose subjects are one partition kind (`P` people, `O` organizations, …). */
function partitionSource(
  kind: string,
  keep: (change: StreamChange) => boolean,
  eventsOf: (id: string, change: StreamChange, hidden: ReadonlySet<string>) => WebhookEvent[],
  erases?: (change: StreamChange) => boolean,
  carriesFields = false,
): FanoutSource {
  return {
    subjectOf: (change) => {
      if (!keep(change)) return undefined;
      const partition = partitionOf(change.keys.pk, kind);
      return partition ? { instanceId: partition.instanceId, subject: partition.id } : undefined;
    },
    eventsOf,
    carriesFields,
    ...(erases ? { erases } : {}),
  };
}

/**
 * A fan-out worker: each change of a record makes its events (events.ts), queued once per
 * enabled webhook of the record's instance subscribed to them. Webhooks are read afresh for
 * each batch (consistently): a webhook made before a change gets it.
 */
function createFanoutWorker(source: FanoutSource) {
  const db = createDocumentClient();
  const { env, store } = webhookBasics(db);
  const queue = new SqsDeliveryQueue(
    createSqsClient(),
    required(env.WEBHOOKS_QUEUE_URL, 'WEBHOOKS_QUEUE_URL'),
  );
  const { deliveries } = deliveryStores(db, env);
  const config = new DynamoConfigStore(db, env.CONFIG_TABLE);
  return async (...args: Parameters<ReturnType<typeof streamWorker>>) => {
    const perInstance = new Map<string, Promise<Webhook[]>>();
    const webhooksOf = (instanceId: string) => {
      let webhooks = perInstance.get(instanceId);
      if (!webhooks) {
        webhooks = store.list(instanceId);
        perInstance.set(instanceId, webhooks);
      }
      return webhooks;
    };
    const hiddenPerInstance = new Map<string, Promise<ReadonlySet<string>>>();
    const hiddenOf = (instanceId: string) => {
      let hidden = hiddenPerInstance.get(instanceId);
      if (!hidden) {
        hidden = config.deletedFields(instanceId);
        hiddenPerInstance.set(instanceId, hidden);
      }
      return hidden;
    };
    const handle = streamWorker({
      subjectOf: (change) => {
        const found = source.subjectOf(change);
        return found ? `${found.instanceId}\u0000${found.subject}` : undefined;
      },
      process: async (key, changes) => {
        const [instanceId = '', subject = ''] = key.split('\u0000');
        const webhooks = await webhooksOf(instanceId);
        const hidden =
          webhooks.length > 0 && source.carriesFields
            ? await hiddenOf(instanceId)
            : new Set<string>();
        const events =
          webhooks.length > 0
            ? changes.flatMap((change) => source.eventsOf(subject, change, hidden))
            : [];
        const messages = fanOut(instanceId, events, webhooks);
        if (messages.length > 0) {
          // Kept before queued: a replay finds every event queued, and a large event's
          // message (its ID only) finds its event.
          await deliveries.keep(instanceId, messages);
          await queue.queue(messages.map(queuedDelivery));
        }
        // Also with no webhook left: what earlier ones were sent is kept 30 days.
        if (source.erases && changes.some(source.erases)) {
          await deliveries.forget(instanceId, subject);
        }
      },
    });
    return handle(...args);
  };
}

/** The people table's fan-out worker (`person.*` events). */
export function createWebhookFanoutWorker() {
  return createFanoutWorker(
    partitionSource(
      'P',
      (change) => change.keys.sk === 'P',
      personEvents,
      // A person item is removed only by erasure (people/delete).
      (change) => change.eventName === 'REMOVE',
      true,
    ),
  );
}

/** The organizations table's fan-out worker (`organization.*` events). */
export function createOrganizationWebhookWorker() {
  return createFanoutWorker(
    partitionSource('O', (change) => change.keys.sk === 'O', organizationEvents, undefined, true),
  );
}

/** The activities table's fan-out worker (`activity.created`). */
export function createActivityWebhookWorker() {
  return createFanoutWorker(
    partitionSource(
      'P',
      (change) => change.eventName === 'INSERT' && PERSON_PK.test(String(change.keys.pk)),
      (_person, change) => activityEvents(change),
    ),
  );
}

/** The emails table's fan-out worker (`email.*`). */
export function createEmailWebhookWorker() {
  return createFanoutWorker(
    partitionSource(
      'M',
      (change) => change.keys.sk === 'M',
      (_message, change) => emailEvents(change),
    ),
  );
}

/** The audiences table's fan-out worker (`audience.*`, from memberships). */
export function createAudienceWebhookWorker() {
  return createFanoutWorker(
    partitionSource('P', (change) => String(change.keys.sk).startsWith('A#'), audienceEvents),
  );
}

/** The delivery worker: one attempt per message, retried on the schedule (delivery.ts). */
export function createWebhookDeliveryWorker(lane: 'prompt' | 'slow' = 'prompt') {
  const db = createDocumentClient();
  const { env, store, secrets, addresses } = webhookBasics(db);
  const queueUrl =
    lane === 'prompt'
      ? required(env.WEBHOOKS_QUEUE_URL, 'WEBHOOKS_QUEUE_URL')
      : required(env.WEBHOOKS_SLOW_QUEUE_URL, 'WEBHOOKS_SLOW_QUEUE_URL');
  const { deliveries } = deliveryStores(db, env);
  const sqs = createSqsClient();
  // The prompt queue's workers move a slow endpoint's messages to the slow queue.
  const slowQueue =
    lane === 'prompt'
      ? new SqsDeliveryQueue(sqs, required(env.WEBHOOKS_SLOW_QUEUE_URL, 'WEBHOOKS_SLOW_QUEUE_URL'))
      : undefined;
  const ports = {
    store,
    secrets,
    addresses,
    resolve: resolveHost,
    transport: httpWebhookTransport(addresses),
    log: new BatchedAttemptLog(deliveries, (error, lost) => {
      logger.error('Could not record webhook delivery attempts', {
        attempts: lost,
        error: error as Error,
      });
    }),
    replays: deliveries,
  };
  // The whole attempt waits for a slot, the webhook's read included: an attempt let in after
  // the endpoint's first failure reads it paused.
  const marks = new DynamoErasureMarks(
    db,
    required(env.REQUESTS_TABLE, 'REQUESTS_TABLE (erased people’s marks)'),
  );
  const erasures = {
    isErased: (instanceId: string, personId: string) => marks.isErased(instanceId, personId),
    forget: (instanceId: string, personId: string) => deliveries.forget(instanceId, personId),
  };
  const endpoints = new KeyedLimiter(env.CDP_WEBHOOK_MAX_IN_FLIGHT);
  // An instance's share of the prompt workers' attempts (its messages beyond go slow too).
  const instances = new KeyedLimiter(env.CDP_WEBHOOK_INSTANCE_MAX_IN_FLIGHT);
  const attemptsBefore = (record: SQSRecord) =>
    lane === 'slow'
      ? (QueuedDelivery.safeParse(JSON.parse(record.body)).data?.attempts_before ?? 0)
      : 0;
  const worker = sqsWorker({
    sqs,
    queueUrl,
    maxReceiveCount: MAX_ATTEMPTS,
    receivedBefore: attemptsBefore,
    // The schedule's waits (DeliveryFailedError) are the backoff.
    backoffBaseSeconds: 1,
    maxBackoffSeconds: 43_200,
    // One slow endpoint holds only its own message, not the rest of the batch.
    parallel: true,
    process: async (record) => {
      const queued = QueuedDelivery.parse(JSON.parse(record.body));
      const receives = Number(record.attributes.ApproximateReceiveCount) || 1;
      const attempt = (queued.attempts_before ?? 0) + receives;
      const message = await openDelivery(queued, deliveries);
      const context = {
        instanceId: queued.instance_id,
        webhookId: queued.webhook_id,
        eventId: queued.event?.id ?? queued.event_id,
        attempt,
        ...(queued.replay_id !== undefined ? { replayId: queued.replay_id } : {}),
      };
      if (!message) {
        logger.warn('Webhook event dropped: it is no longer kept', context);
        return;
      }
      const divert = slowQueue
        ? async () => {
            // That receive made no attempt: the slow queue's first receive is attempt `attempt`.
            await slowQueue.queue([{ ...queued, attempts_before: attempt - 1 }]);
          }
        : undefined;
      const key = `${message.instance_id}/${message.webhook_id}`;
      const run = () =>
        deliver(message, attempt, { ...ports, erasures, ...(divert ? { divert } : {}) });
      // On the prompt queue a message waits a moment at most for its endpoint's slot: an
      // endpoint whose attempts all hang holds no batch, its messages go to the slow queue.
      const ran = divert
        ? (
            await instances.tryRun(
              message.instance_id,
              () => endpoints.tryRun(key, run, PROMPT_SLOT_WAIT_MS),
              PROMPT_SLOT_WAIT_MS,
            )
          )?.value
        : { value: await endpoints.run(key, run) };
      if (!ran) await divert?.();
      const outcome = ran?.value ?? { kind: 'diverted' as const };
      logger.info(OUTCOME_MESSAGES[outcome.kind], {
        ...context,
        type: message.event.type,
        ...outcome,
      });
    },
    // The prompt queue's last failures go to its dead-letter queue. A moved message's last
    // attempt is made on the slow queue, whose own receive count is lower than the attempts
    // made: it is given up there, its attempts in the log and its event kept for a replay.
    onLastFailure: () => Promise.resolve(lane === 'prompt' ? 'dead-letter' : 'settled'),
  });
  // The batch's attempts are written together as it ends, before the function returns (a
  // Lambda container may be frozen after that).
  return async (...args: Parameters<typeof worker>) => {
    try {
      return await worker(...args);
    } finally {
      await ports.log.flush();
    }
  };
}

/** How long a message of the prompt queue waits for its endpoint's slot before it moves. */
const PROMPT_SLOT_WAIT_MS = 2_000;

const OUTCOME_MESSAGES = {
  delivered: 'Webhook delivered',
  dropped: 'Webhook event dropped',
  diverted: 'Webhook delivery moved to the slow queue',
} as const;

/** A queued delivery with its event: carried, or read where it is kept (a large one). */
async function openDelivery(
  queued: QueuedDelivery,
  deliveries: Pick<DynamoDeliveryStore, 'event'>,
): Promise<DeliveryMessage | undefined> {
  const { event, event_id: eventId, ...rest } = queued;
  if (event) return { ...rest, event };
  const kept = await deliveries.event(queued.instance_id, queued.webhook_id, eventId ?? '');
  return kept ? { ...rest, event: kept } : undefined;
}

/**
 * The replay worker: carries replays since a time on, a slice per message (replay.ts). A
 * replay whose message fails for the last time stops, saying why, and frees its webhook.
 */
export function createWebhookReplayWorker() {
  const db = createDocumentClient();
  const { env, store } = webhookBasics(db);
  const { deliveries, jobs } = deliveryStores(db, env);
  const sqs = createSqsClient();
  const queueUrl = required(env.WEBHOOK_REPLAYS_QUEUE_URL, 'WEBHOOK_REPLAYS_QUEUE_URL');
  const ports = {
    webhooks: store,
    events: deliveries,
    jobs,
    deliveries: new SqsDeliveryQueue(sqs, required(env.WEBHOOKS_QUEUE_URL, 'WEBHOOKS_QUEUE_URL')),
    replays: new SqsReplayQueue(sqs, queueUrl),
    sliceMs: env.WEBHOOK_REPLAY_SLICE_MS,
    eventsPerSecond: env.CDP_WEBHOOK_REPLAY_RATE,
    sleep,
  };
  return sqsWorker({
    sqs,
    queueUrl,
    maxReceiveCount: 5,
    backoffBaseSeconds: 5,
    process: (record) => runReplay(ReplayMessage.parse(JSON.parse(record.body)), ports),
    onLastFailure: async (record, error) => {
      await abandonReplay(
        ReplayMessage.parse(JSON.parse(record.body)),
        `the replay stopped after repeated failures: ${error instanceof Error ? error.message : 'unknown'}`,
        ports,
      );
      return 'settled';
    },
  });
}
