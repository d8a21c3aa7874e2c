import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { QueuedDelivery } from '../domain/webhooks/delivery.js';
import type { DeliveryQueue, ReplayMessage, ReplayQueue } from '../domain/webhooks/replay.js';
import { retried, watchAttempts } from './ingest-queue.js';

/** SQS takes at most 10 messages, and 256 KB in all, a batch (some room kept for the envelope). */
const SQS_BATCH = 10;
const SQS_BATCH_BYTES = 240 * 1024;

/** The messages' bodies in batches SQS takes. */
export function deliveryBatches(messages: readonly QueuedDelivery[]): string[][] {
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

/**
 * The webhooks queue: deliveries in batches of 10 (`SendMessageBatch`). A batch that fails
 * in part is an error (the caller's work is retried: a message queued twice reaches the
 * receiver with the same `webhook-id`, which it deduplicates). Large events travel by
 * reference (`queuedDelivery`, delivery.ts): callers queue what that makes.
 */
export class SqsDeliveryQueue implements DeliveryQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {
    watchAttempts(sqs);
  }

  async queue(messages: readonly QueuedDelivery[]): Promise<void> {
    for (const batch of deliveryBatches(messages)) {
      const { Failed } = await retried(
        'Queueing webhook deliveries',
        () =>
          this.sqs.send(
            new SendMessageBatchCommand({
              QueueUrl: this.queueUrl,
              Entries: batch.map((body, index) => ({ Id: String(index), MessageBody: body })),
            }),
          ),
        'The webhooks queue',
      );
      if (Failed && Failed.length > 0) {
        throw new Error(`${Failed.length} deliveries could not be queued: ${Failed[0]?.Message}`);
      }
    }
  }
}

/** The replays queue: each message carries a replay on from where it is. */
export class SqsReplayQueue implements ReplayQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {
    watchAttempts(sqs);
  }

  async send(message: ReplayMessage): Promise<void> {
    await retried(
      'Queueing a replay',
      () =>
        this.sqs.send(
          new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(message) }),
        ),
      'The replays queue',
    );
  }
}
