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
import { fanOut, organizationEvents, personEvents } from '../domain/webhooks/events.js';
import type { Webhook, WebhookServices } from '../domain/webhooks/webhook.js';
import { logger } from '../lib/logger.js';
import { sqsWorker } from './sqs-worker.js';
import { streamWorker, type StreamChange } from './stream-worker.js';

/**
 * The composition roots of webhooks (docs/webhooks.md): the API's services, the fan-out
 * workers (the people and organizations tables' streams → the webhooks queue) and the
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

/** `<inst>#P#<person>` or `<inst>#O#<organization>` → its instance and record. */
function subjectOf(pk: string, kind: 'P' | 'O'): { instanceId: string; id: string } | undefined {
  const match = new RegExp(`^(.+)#${kind}#([0-9a-f]{24})$`).exec(pk);
  return match?.[1] && match[2] ? { instanceId: match[1], id: match[2] } : undefined;
}

/**
 * A fan-out worker: each change of a record (a person, an organization) makes its events
 * (events.ts), queued once per enabled webhook of the record's instance subscribed to them.
 * Webhooks are read afresh for each batch (consistently): a webhook made before a change
 * gets it.
 */
function createFanoutWorker(
  sortKey: 'P' | 'O',
  eventsOf: (id: string, change: StreamChange) => WebhookEvent[],
) {
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
      subjectOf: (change) => (change.keys.sk === sortKey ? String(change.keys.pk) : undefined),
      process: async (subject, changes) => {
        const record = subjectOf(subject, sortKey);
        if (!record) return;
        const webhooks = await webhooksOf(record.instanceId);
        if (webhooks.length === 0) return;
        const events = changes.flatMap((change) => eventsOf(record.id, change));
        await queueDeliveries(sqs, queueUrl, fanOut(record.instanceId, events, webhooks));
      },
    });
    return handle(...args);
  };
}

/** The people table's fan-out worker (`person.*` events). */
export function createWebhookFanoutWorker() {
  return createFanoutWorker('P', personEvents);
}

/** The organizations table's fan-out worker (`organization.*` events). */
export function createOrganizationWebhookWorker() {
  return createFanoutWorker('O', organizationEvents);
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
