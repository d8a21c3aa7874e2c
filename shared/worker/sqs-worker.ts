import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { logger } from '../lib/logger.js';
import { retryAfterMs } from '../lib/retry-later.js';
import { canWait, withDeadline } from '../lib/time-budget.js';
import { KeyedLimiter } from '../lib/keyed-limiter.js';

/**
 * The one SQS worker stack: Powertools' batch processor reports partial batch failures, so
 * a failed message comes back alone. A failed message is retried with backoff: its
 * visibility is set to `backoffBaseSeconds · 2^(receives − 1)`, or longer where the failure
 * asks for it (`RetryLaterError`), capped at 15 minutes; on its last receive
 * (`maxReceiveCount`) `onLastFailure` records why it is going to the dead-letter queue, and
 * the reason is logged, unless it answers `settled`: the message's work reached a final
 * state another way (recorded there), and the message is done. Nothing is dropped silently. Messages of a
 * batch are processed one after the other unless `parallel` (the event source's maximum
 * concurrency bounds how many batches run at once). Each batch runs within the function's time budget.
 * `batch` makes what the messages of one batch share (built once per invocation, before its
 * first message; a failure of one message is still that message's alone).
 */
export interface WorkerOptions<Batch = undefined> {
  sqs: SQSClient;
  /** The queue the function reads (to change a failed message's visibility). */
  queueUrl: string;
  maxReceiveCount: number;
  /**
   * Receives a message has had elsewhere before this queue (a message moved from another
   * queue carries them): they count towards `maxReceiveCount`.
   */
  receivedBefore?: (record: SQSRecord) => number;
  backoffBaseSeconds: number;
  /** The longest wait before a retry (15 minutes unless given; SQS allows 12 hours). */
  maxBackoffSeconds?: number;
  /**
   * Messages of a batch at once: all of them (`true`), at most this many (a number), or one
   * after the other (`false`, the default).
   */
  parallel?: boolean | number;
  /**
   * With a number for `parallel`: the messages it does not bound, started at once whatever
   * else runs (work sliced in time, which must start early in the invocation to end in it).
   */
  unbounded?: (record: SQSRecord) => boolean;
  /**
   * With `parallel`: messages of a batch with the same key are still processed one after the
   * other, in the batch's order (an SQS FIFO queue's message groups, within a batch).
   */
  orderKey?: (record: SQSRecord) => string | undefined;
  /** What the messages of one batch share, made anew for each batch. */
  batch?: () => Batch;
  process(record: SQSRecord, batch: Batch): Promise<void>;
  /** `settled`: the message needs no dead-letter queue (its outcome is recorded). */
  onLastFailure(record: SQSRecord, error: unknown): Promise<'settled' | 'dead-letter' | undefined>;
}

const ANSWER_MARGIN_MS = 5_000;
/** A message is not started with less time than this left (it comes back instead). */
const MIN_START_MS = 15_000;
const MAX_VISIBILITY_SECONDS = 900;

export type SqsWorkerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

export function sqsWorker<Batch = undefined>(options: WorkerOptions<Batch>): SqsWorkerHandler {
  const handleRecord = async (record: SQSRecord, batch: Batch) => {
    try {
      if (!canWait(MIN_START_MS)) {
        throw new Error('not started: too little of the invocation was left');
      }
      await options.process(record, batch);
    } catch (error) {
      const receives =
        (Number(record.attributes.ApproximateReceiveCount) || 1) +
        (options.receivedBefore?.(record) ?? 0);
      const last = receives >= options.maxReceiveCount;
      if (last) {
        const outcome = await options.onLastFailure(record, error).catch((cause: unknown) => {
          logger.error('Could not record the failure', { error: cause as Error });
        });
        if (outcome === 'settled') {
          logger.error('Message failed for the last time; its outcome is recorded', {
            messageId: record.messageId,
            receives,
            error: error as Error,
          });
          return;
        }
        logger.error('Message failed for the last time: it goes to the dead-letter queue', {
          messageId: record.messageId,
          receives,
          error: error as Error,
        });
      } else {
        logger.warn('Message failed; it will be retried', {
          messageId: record.messageId,
          receives,
          error: error as Error,
        });
      }
      // Back off before the next receive; after the last one, at once: that receive moves
      // the message to the dead-letter queue.
      const seconds = last
        ? 0
        : Math.min(
            options.maxBackoffSeconds ?? MAX_VISIBILITY_SECONDS,
            Math.max(
              options.backoffBaseSeconds * 2 ** (receives - 1),
              Math.ceil(retryAfterMs(error) / 1000),
            ),
          );
      await options.sqs
        .send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: options.queueUrl,
            ReceiptHandle: record.receiptHandle,
            VisibilityTimeout: Math.round(seconds),
          }),
        )
        .catch(() => {
          // Then it comes back after the queue's own visibility timeout.
        });
      throw error;
    }
  };
  return (event, context) => {
    // Every log line of the batch carries the invocation's request ID.
    logger.addContext(context);
    const remaining =
      typeof context.getRemainingTimeInMillis === 'function'
        ? context.getRemainingTimeInMillis()
        : 60_000;
    const batch = options.batch ? options.batch() : (undefined as Batch);
    const inOrder = inOrderOf(options.orderKey);
    const atOnce =
      typeof options.parallel === 'number' ? new KeyedLimiter(options.parallel) : undefined;
    const run = (record: SQSRecord) => handleRecord(record, batch);
    return withDeadline(Date.now() + Math.max(remaining - ANSWER_MARGIN_MS, 0), () =>
      processPartialResponse(
        event,
        (record: SQSRecord) =>
          inOrder(record, () =>
            atOnce && !options.unbounded?.(record)
              ? atOnce.run('', () => run(record))
              : run(record),
          ),
        new BatchProcessor(EventType.SQS),
        {
          context,
          processInParallel: options.parallel !== undefined && options.parallel !== false,
          throwOnFullBatchFailure: false,
        },
      ),
    );
  };
}

/**
 * Runs the messages of one batch that share a key one after the other (each after the one
 * before it ends, whether it failed or not); messages without a key, or without `key`, at once.
 */
function inOrderOf(key: ((record: SQSRecord) => string | undefined) | undefined) {
  const last = new Map<string, Promise<unknown>>();
  return <T>(record: SQSRecord, run: () => Promise<T>): Promise<T> => {
    const group = key?.(record);
    if (group === undefined) return run();
    const before = last.get(group) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(run);
    last.set(group, mine);
    return mine;
  };
}
