import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  QueryCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';

/** Shared DynamoDB mechanics: chunked batch reads and writes with retries of what is left. */
export type Key = Record<string, unknown>;
export type Item = Record<string, unknown>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function batchGet(
  db: DynamoDBDocumentClient,
  table: string,
  keys: Key[],
  consistent = false,
): Promise<Item[]> {
  const items: Item[] = [];
  for (let start = 0; start < keys.length; start += 100) {
    let pending = keys.slice(start, start + 100);
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt > 8) throw new Error('DynamoDB kept keys unprocessed');
      if (attempt > 0) await sleep(25 * 2 ** attempt);
      const result = await db.send(
        new BatchGetCommand({
          RequestItems: { [table]: { Keys: pending, ConsistentRead: consistent } },
        }),
      );
      items.push(...(result.Responses?.[table] ?? []));
      pending = result.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  }
  return items;
}

export type WriteRequest = { PutRequest: { Item: Item } } | { DeleteRequest: { Key: Key } };

export async function batchWrite(
  db: DynamoDBDocumentClient,
  table: string,
  writes: WriteRequest[],
): Promise<void> {
  for (let start = 0; start < writes.length; start += 25) {
    let pending: WriteRequest[] = writes.slice(start, start + 25);
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt > 8) throw new Error('DynamoDB kept items unprocessed');
      if (attempt > 0) await sleep(25 * 2 ** attempt);
      const result = await db.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (result.UnprocessedItems?.[table] ?? []) as WriteRequest[];
    }
  }
}

/** The cancellation reason codes of a failed transaction, by item position; else undefined. */
export function cancellationCodes(error: unknown): (string | undefined)[] | undefined {
  if (!(error instanceof TransactionCanceledException)) return undefined;
  return (error.CancellationReasons ?? []).map((reason) => reason.Code);
}

/** Builds `#n0`/`:v0` placeholders for expressions over arbitrary attribute names and values. */
export class ExpressionBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly nameIds = new Map<string, string>();
  private valueCount = 0;

  name(attribute: string): string {
    let id = this.nameIds.get(attribute);
    if (!id) {
      id = `#n${this.nameIds.size}`;
      this.nameIds.set(attribute, id);
      this.names[id] = attribute;
    }
    return id;
  }

  value(value: unknown): string {
    const id = `:v${this.valueCount++}`;
    this.values[id] = value;
    return id;
  }
}

/**
 * Totals of a sharded counter: every number attribute summed over the shard items of one
 * partition (`<inst>#C`, say). One strongly consistent query, never a scan.
 */
export async function sumCounters(
  db: DynamoDBDocumentClient,
  table: string,
  pk: string,
): Promise<Record<string, number>> {
  const { Items = [] } = await db.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    }),
  );
  const totals: Record<string, number> = {};
  for (const item of Items) {
    for (const [name, value] of Object.entries(item)) {
      if (typeof value === 'number') totals[name] = (totals[name] ?? 0) + value;
    }
  }
  return totals;
}
