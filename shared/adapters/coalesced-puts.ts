import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { slicesOf } from '../lib/bounded.js';
import { batchWrite } from './dynamo-helpers.js';

interface Waiting {
  item: Record<string, unknown>;
  settle: (error?: Error) => void;
}

/**
 * Unconditional puts of independent items into one table, made at about the same moment
 * (the same turn of the event loop: the records of a shared transaction, as it commits), go
 * to DynamoDB together, 25 a call. Each caller's promise settles with the call that carried
 * its item, so a caller knows its item is written when its put resolves.
 */
export class CoalescedPuts {
  private waiting: Waiting[] = [];

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  put(item: Record<string, unknown>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => void this.flush());
      this.waiting.push({
        item,
        settle: (error) => {
          if (error === undefined) resolve();
          else reject(error);
        },
      });
    });
  }

  private async flush() {
    const taken = this.waiting;
    this.waiting = [];
    await Promise.all(
      slicesOf(taken, 25).map(async (slice) => {
        try {
          await batchWrite(
            this.db,
            this.table,
            slice.map(({ item }) => ({ PutRequest: { Item: item } })),
          );
          for (const waiting of slice) waiting.settle();
        } catch (error) {
          const failure = error instanceof Error ? error : new Error(String(error));
          for (const waiting of slice) waiting.settle(failure);
        }
      }),
    );
  }
}
