import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type {
  Context,
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
} from 'aws-lambda';
import { logger } from '../lib/logger.js';
import { withDeadline } from '../lib/time-budget.js';

/**
 * The one DynamoDB Streams worker stack. A stream delivers each change at least once, in
 * order per item, possibly late; a worker reacts to what an item *is now* (it reads it
 * again), so the records of one subject (a person, say) in a batch are handled together,
 * once, and a record seen twice changes nothing more. Subjects of a batch run at once
 * (bounded); a subject that fails makes the batch report its first record as failed, so the
 * event source retries from there (the subjects after it again too: handled twice, harmless).
 */
export interface StreamChange {
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  keys: Record<string, unknown>;
  /** The item after the change (absent for a removal). */
  newImage?: Record<string, unknown>;
  /** The item before the change, where the stream keeps old images. */
  oldImage?: Record<string, unknown>;
  sequenceNumber: string;
  /** When DynamoDB wrote the change (epoch ms, to the second). */
  at: number;
}

export interface StreamWorkerOptions {
  /** Which subject a change is about (its records are handled together), or none to skip it. */
  subjectOf(change: StreamChange): string | undefined;
  /** Handles a subject's changes of the batch, oldest first. */
  process(subject: string, changes: StreamChange[]): Promise<void>;
  /** Subjects handled at once. */
  concurrency?: number;
}

export type StreamWorkerHandler = (
  event: DynamoDBStreamEvent,
  context: Context,
) => Promise<DynamoDBBatchResponse>;

/** Lambda's attribute values are the SDK's, typed apart. */
function imageOf(image: object | undefined): Record<string, unknown> | undefined {
  return image === undefined ? undefined : unmarshall(image as Record<string, AttributeValue>);
}

export function toChange(record: DynamoDBRecord): StreamChange {
  const change = record.dynamodb ?? {};
  const newImage = imageOf(change.NewImage);
  const oldImage = imageOf(change.OldImage);
  return {
    eventName: record.eventName ?? 'MODIFY',
    keys: imageOf(change.Keys) ?? {},
    ...(newImage ? { newImage } : {}),
    ...(oldImage ? { oldImage } : {}),
    sequenceNumber: change.SequenceNumber ?? '',
    at: (change.ApproximateCreationDateTime ?? 0) * 1000,
  };
}

/** Time kept to answer the event source. */
const ANSWER_MARGIN_MS = 2_000;

export function streamWorker(options: StreamWorkerOptions): StreamWorkerHandler {
  return (event, context) =>
    withDeadline(
      Date.now() + Math.max(context.getRemainingTimeInMillis() - ANSWER_MARGIN_MS, 0),
      async () => {
        const subjects = new Map<string, StreamChange[]>();
        const firstRecord = new Map<string, number>();
        event.Records.forEach((record, index) => {
          const change = toChange(record);
          const subject = options.subjectOf(change);
          if (subject === undefined) return;
          const changes = subjects.get(subject);
          if (changes) changes.push(change);
          else {
            subjects.set(subject, [change]);
            firstRecord.set(subject, index);
          }
        });
        const failed: number[] = [];
        const queue = [...subjects];
        const run = async () => {
          for (let next = queue.shift(); next; next = queue.shift()) {
            const [subject, changes] = next;
            try {
              await options.process(subject, changes);
            } catch (error) {
              failed.push(firstRecord.get(subject) ?? 0);
              logger.warn('A stream subject failed; the batch is retried from it', {
                subject,
                error: error as Error,
              });
            }
          }
        };
        await Promise.all(Array.from({ length: options.concurrency ?? 8 }, run));
        if (failed.length === 0) return { batchItemFailures: [] };
        const first = event.Records[Math.min(...failed)];
        return { batchItemFailures: [{ itemIdentifier: first?.dynamodb?.SequenceNumber ?? '' }] };
      },
    );
}
