import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';

import { ServiceUnavailableError } from '../domain/errors.js';
import { runBounded, slicesOf } from '../lib/bounded.js';
import { backoffMs, canWait, currentDeadline, sleep } from '../lib/time-budget.js';

/**
 * Shared DynamoDB mechanics: chunked batch reads and writes that ask again for what the
 * store left unprocessed (throttling), with backoff, within the request's time budget.
 */
export type Key = Record<string, unknown>;
export type Item = Record<string, unknown>;

/** Waits before asking again for what was left unprocessed; 503 once the budget is spent. */
async function waitForUnprocessed(attempt: number, deadline: number): Promise<void> {
  const wait = backoffMs(attempt, 25, 1_000);
  if (!canWait(wait, deadline)) {
    throw new ServiceUnavailableError(
      'The data store is overloaded: it kept part of a batch unprocessed; try again shortly',
    );
  }
  await sleep(wait);
}

/**
 * Reads items by key, 100 at a time, asking again for what the store left unprocessed. A key
 * asked twice is read once (DynamoDB refuses a batch that names a key twice: callers such as
 * a record whose two merge keys are held by one person may well name it twice).
 */
export async function batchGet(
  db: DynamoDBDocumentClient,
  table: string,
  requested: Key[],
  consistent = false,
): Promise<Item[]> {
  const keys = [
    ...new Map(
      requested.map((key) => [
        JSON.stringify(Object.entries(key).sort(([a], [b]) => a.localeCompare(b))),
        key,
      ]),
    ).values(),
  ];
  const items: Item[] = [];
  const deadline = currentDeadline();
  for (let start = 0; start < keys.length; start += 100) {
    let pending = keys.slice(start, start + 100);
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt > 0) await waitForUnprocessed(attempt, deadline);
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

/**
 * Writes in batches of 25, asking again for what the store left unprocessed. `written`
 * hears of every write as soon as it is known to have happened, so that a caller whose
 * batch write fails part-way knows exactly what was written. `atOnce` batches are in flight
 * together (one by default, in order); when one fails, no further batch starts, those in
 * flight finish, and the first failure is thrown.
 */
export async function batchWrite(
  db: DynamoDBDocumentClient,
  table: string,
  writes: WriteRequest[],
  written?: (done: WriteRequest[]) => void,
  atOnce = 1,
): Promise<void> {
  const deadline = currentDeadline();
  const { failure } = await runBounded(slicesOf(writes, 25), atOnce, async (slice) => {
    let pending = slice;
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt > 0) await waitForUnprocessed(attempt, deadline);
      const result = await db.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      const left = (result.UnprocessedItems?.[table] ?? []) as WriteRequest[];
      written?.(pending.filter((request) => !left.some((l) => sameRequest(l, request))));
      pending = left;
    }
  });
  if (failure) throw failure.error;
}

function sameRequest(a: WriteRequest, b: WriteRequest): boolean {
  const keyOf = (r: WriteRequest) =>
    'PutRequest' in r
      ? { pk: r.PutRequest.Item.pk, sk: r.PutRequest.Item.sk }
      : r.DeleteRequest.Key;
  const [x, y] = [keyOf(a), keyOf(b)];
  return x.pk === y.pk && x.sk === y.sk;
}

/** Whether a single-item write failed its condition (and so changed nothing). */
export function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/**
 * Sends a conditional single-item update: true when it was applied, false when its
 * condition failed (it changed nothing); any other failure is thrown.
 */
export async function conditionally(
  db: DynamoDBDocumentClient,
  command: UpdateCommand,
): Promise<boolean> {
  try {
    await db.send(command);
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** The cancellation reasons of a failed transaction, by item position; else undefined. */
export function cancellationReasons(
  error: unknown,
): { Code?: string; Message?: string }[] | undefined {
  if (!(error instanceof TransactionCanceledException)) return undefined;
  return error.CancellationReasons ?? [];
}

/** The cancellation reason codes of a failed transaction, by item position; else undefined. */
export function cancellationCodes(error: unknown): (string | undefined)[] | undefined {
  return cancellationReasons(error)?.map((reason) => reason.Code);
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
 * Every item of one partition, page after page (strongly consistent): whole, or only the
 * attributes named.
 */
export async function queryPartition(
  db: DynamoDBDocumentClient,
  table: string,
  pk: string,
  attributes?: readonly string[],
): Promise<Record<string, unknown>[]> {
  const projection = attributes && {
    ExpressionAttributeNames: Object.fromEntries(attributes.map((name, i) => [`#a${i}`, name])),
    ProjectionExpression: attributes.map((_, i) => `#a${i}`).join(', '),
  };
  const items: Record<string, unknown>[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ...projection,
        ConsistentRead: true,
        ExclusiveStartKey,
      }),
    );
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
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

/** Every key of a partition (strongly consistent), for deleting it whole, with `extra`. */
export function partitionKeys(
  db: DynamoDBDocumentClient,
  table: string,
  pk: string,
  extra: string[] = [],
): Promise<Record<string, unknown>[]> {
  return queryPartition(db, table, pk, ['pk', 'sk', ...extra]);
}

/** Delete requests of these keys, for `batchWrite`. */
export const deletes = (keys: Key[]): WriteRequest[] =>
  keys.map((Key) => ({ DeleteRequest: { Key } }));
