import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createSqsClient } from '../adapters/aws-clients.js';
import { createKeyWrapper, WEBHOOK_SECRET_PURPOSE } from '../adapters/key-wrappers.js';
import { DynamoWebhookStore } from '../adapters/webhook-store.js';
import { httpWebhookTransport, resolveHost } from '../adapters/webhook-transport.js';
import { readEnv, WebhooksEnv } from '../config/env.js';
import {
  DeliveryMessage,
  deliver,
  MAX_ATTEMPTS,
  type WebhookEvent,
} from '../domain/webhooks/delivery.js';
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

/** SQS takes at most 10 messages, and 256 KB in all, a batch (some room kept for the envelope). */
const SQS_BATCH = 10;
const SQS_BATCH_BYTES = 240 * 1024;

/** The messages' bodies in batches SQS takes. */
export function deliveryBatches(messages: readonly DeliveryMessage[]): string[][] {
  const batches: string[][] = [];
  let batch: string[] = [];
  let bytes = 0;
  for (const message of messages) {
    const body = JSON.stringify(message);
    const size = Buffer.byteLength(body);
    if (batch.length > 0 && (batch.length === SQS_BATCH || bytes + size > SQS_BATCH_BYTES)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(body);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

async function queueDeliveries(
  sqs: SQSClient,
  queueUrl: string,
  messages: readonly DeliveryMessage[],
): Promise<void> {
  for (const batch of deliveryBatches(messages)) {
    const { Failed } = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: batch.map((body, index) => ({ Id: String(index), MessageBody: body })),
      }),
    );
    // The stream batch is retried from this subject: messages queued twice reach receivers
    // with the same `webhook-id`, which they deduplicate.
    if (Failed && Failed.length > 0) {
      throw new Error(`${Failed.length} deliveries could not be queued: ${Failed[0]?.Message}`);
    }
  }
}

/** What a fan-out worker reads of a table's changes. */
interface FanoutSource {
  /**
   * The instance a change is about, and the subject its changes are handled in order with
   * (its item's partition); none to skip it.
   */
  subjectOf(change: StreamChange): { instanceId: string; subject: string } | undefined;
  eventsOf(subject: string, change: StreamChange): WebhookEvent[];
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
  eventsOf: (id: string, change: StreamChange) => WebhookEvent[],
): FanoutSource {
  return {
    subjectOf: (change) => {
      if (!keep(change)) return undefined;
      const partition = partitionOf(change.keys.pk, kind);
      return partition ? { instanceId: partition.instanceId, subject: partition.id } : undefined;
    },
    eventsOf,
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
  const sqs = createSqsClient();
  const queueUrl = env.WEBHOOKS_QUEUE_URL;
  if (!queueUrl) throw new Error('Invalid environment: WEBHOOKS_QUEUE_URL is required');
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
    const handle = streamWorker({
      subjectOf: (change) => {
        const found = source.subjectOf(change);
        return found ? `${found.instanceId}\u0000${found.subject}` : undefined;
      },
      process: async (key, changes) => {
        const [instanceId = '', subject = ''] = key.split('\u0000');
        const webhooks = await webhooksOf(instanceId);
        if (webhooks.length === 0) return;
        const events = changes.flatMap((change) => source.eventsOf(subject, change));
        await queueDeliveries(sqs, queueUrl, fanOut(instanceId, events, webhooks));
      },
    });
    return handle(...args);
  };
}

/** The people table's fan-out worker (`person.*` events). */
export function createWebhookFanoutWorker() {
  return createFanoutWorker(partitionSource('P', (change) => change.keys.sk === 'P', personEvents));
}

/** The organizations table's fan-out worker (`organization.*` events). */
export function createOrganizationWebhookWorker() {
  return createFanoutWorker(
    partitionSource('O', (change) => change.keys.sk === 'O', organizationEvents),
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
export function createWebhookDeliveryWorker() {
  const db = createDocumentClient();
  const { env, store, secrets, addresses } = webhookBasics(db);
  const queueUrl = env.WEBHOOKS_QUEUE_URL;
  if (!queueUrl) throw new Error('Invalid environment: WEBHOOKS_QUEUE_URL is required');
  const ports = {
    store,
    secrets,
    addresses,
    resolve: resolveHost,
    transport: httpWebhookTransport(addresses),
  };
  return sqsWorker({
    sqs: createSqsClient(),
    queueUrl,
    maxReceiveCount: MAX_ATTEMPTS,
    // The schedule's waits (DeliveryFailedError) are the backoff.
    backoffBaseSeconds: 1,
    maxBackoffSeconds: 43_200,
    // One slow endpoint holds only its own message, not the rest of the batch.
    parallel: true,
    process: async (record) => {
      const message = DeliveryMessage.parse(JSON.parse(record.body));
      const attempt = Number(record.attributes.ApproximateReceiveCount) || 1;
      const outcome = await deliver(message, attempt, ports);
      logger.info(outcome.kind === 'delivered' ? 'Webhook delivered' : 'Webhook event dropped', {
        instanceId: message.instance_id,
        webhookId: message.webhook_id,
        eventId: message.event.id,
        type: message.event.type,
        attempt,
        ...outcome,
      });
    },
    onLastFailure: () => Promise.resolve('dead-letter'),
  });
}
