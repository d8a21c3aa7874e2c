import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { compareKeys } from '../domain/people/field-index.js';
import { ExpressionBuilder, type Item } from './dynamo-helpers.js';

/**
 * Queries on indexes whose partition key is split into shards (`<inst>#<tag>#<n>`), so that
 * no instance writes a hot partition. A page reads each shard from the position on and
 * merges them; sort keys end in the record ID, so one sort key is a complete position.
 */
export interface ShardQuery {
  table: string;
  index: string;
  partitionKey: string;
  sortKey: string;
  partition: (shard: number) => string;
  order: 'asc' | 'desc';
  /** Exclusive position (a sort key). */
  after?: string;
  /** Inclusive range of sort keys (a prefix search). */
  between?: [string, string];
  /** How many kept items each shard needs at most. */
  count: number;
  keep?: (item: Item) => boolean;
}

/** `pk = <shard's partition>`, and `sk BETWEEN from AND to` when a range is given. */
function keyCondition(
  x: ExpressionBuilder,
  query: Pick<ShardQuery, 'partitionKey' | 'sortKey' | 'partition'>,
  shard: number,
  between?: [string, string],
): string {
  const partition = `${x.name(query.partitionKey)} = ${x.value(query.partition(shard))}`;
  if (!between) return partition;
  return `${partition} AND ${x.name(query.sortKey)} BETWEEN ${x.value(between[0])} AND ${x.value(between[1])}`;
}

export async function queryShard(
  db: DynamoDBDocumentClient,
  query: ShardQuery,
  shard: number,
): Promise<Item[]> {
  // A range that ends before it starts (a position past its end) holds nothing.
  if (query.between && compareKeys(query.between[0], query.between[1]) > 0) return [];
  const x = new ExpressionBuilder();
  let condition = keyCondition(x, query, shard, query.between);
  if (!query.between && query.after !== undefined) {
    condition += ` AND ${x.name(query.sortKey)} ${query.order === 'desc' ? '<' : '>'} ${x.value(query.after)}`;
  }
  const kept: Item[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.send(
      new QueryCommand({
        TableName: query.table,
        IndexName: query.index,
        KeyConditionExpression: condition,
        ExpressionAttributeNames: x.names,
        ExpressionAttributeValues: x.values,
        ScanIndexForward: query.order === 'asc',
        Limit: Math.min(query.count - kept.length, 1000),
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) if (!query.keep || query.keep(item)) kept.push(item);
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey && kept.length < query.count);
  return kept;
}

/** The first `count` sort keys over all shards in order, and whether more follow. */
export async function shardedPage(db: DynamoDBDocumentClient, query: ShardQuery, shards: number) {
  const perShard = await Promise.all(
    Array.from({ length: shards }, (_, shard) =>
      queryShard(db, { ...query, count: query.count + 1 }, shard).then((items) =>
        items.map((item) => String(item[query.sortKey])),
      ),
    ),
  );
  const keys = [...new Set(perShard.flat())].sort();
  if (query.order === 'desc') keys.reverse();
  return { keys: keys.slice(0, query.count), hasMore: keys.length > query.count };
}

/**
 * Counts the entries of a sort-key range across shards (`Select: COUNT`, so only numbers come
 * back), optionally narrowed by a filter, and stops once `cap` is reached: each query reads a
 * shard's share of the cap at most, so a count reads about `cap` entries whatever the size of
 * the instance.
 */
export async function countRange(
  db: DynamoDBDocumentClient,
  query: Omit<ShardQuery, 'order' | 'after' | 'count' | 'keep'> & { between: [string, string] },
  shards: number,
  cap: number,
  filter?: (x: ExpressionBuilder) => string,
): Promise<number> {
  if (compareKeys(query.between[0], query.between[1]) > 0) return 0;
  let total = 0;
  await Promise.all(
    Array.from({ length: shards }, async (_, shard) => {
      const x = new ExpressionBuilder();
      const condition = keyCondition(x, query, shard, query.between);
      const filterExpression = filter?.(x);
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await db.send(
          new QueryCommand({
            TableName: query.table,
            IndexName: query.index,
            KeyConditionExpression: condition,
            ...(filterExpression ? { FilterExpression: filterExpression } : {}),
            ExpressionAttributeNames: x.names,
            ExpressionAttributeValues: x.values,
            Select: 'COUNT',
            // A page reads at most a shard's share of the cap (without it, up to 1 MB of keys).
            Limit: Math.ceil(cap / shards) + 1,
            ExclusiveStartKey,
          }),
        );
        total += page.Count ?? 0;
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey && total < cap);
    }),
  );
  return Math.min(total, cap);
}

/** One read of a shard: its next keys after a position, and whether more follow. */
export type ShardRead = (
  shard: number,
  after: string | undefined,
  count: number,
) => Promise<{ keys: string[]; more: boolean }>;

/**
 * The keys of every shard merged into one stream in order, read lazily: each shard is asked
 * for a few keys at first, and for more (twice as many each time, up to 1,000) only once its
 * keys are all taken. So reading the first n keys costs about n keys, not 16 × n.
 */
export async function* mergedKeys(
  read: ShardRead,
  shards: number,
  after: string | undefined,
  compare: (a: string, b: string) => number,
  first = 16,
): AsyncGenerator<string> {
  const state = Array.from({ length: shards }, () => ({
    keys: [] as string[],
    after,
    more: true,
    size: first,
  }));
  for (;;) {
    await Promise.all(
      state.map(async (shard, n) => {
        if (shard.keys.length > 0 || !shard.more) return;
        const page = await read(n, shard.after, shard.size);
        shard.keys = page.keys;
        shard.more = page.more && page.keys.length > 0;
        shard.after = page.keys.at(-1) ?? shard.after;
        shard.size = Math.min(shard.size * 2, 1_000);
      }),
    );
    let next: (typeof state)[number] | undefined;
    for (const shard of state) {
      const head = shard.keys[0];
      if (head === undefined) continue;
      if (!next || compare(head, next.keys[0] ?? head) < 0) next = shard;
    }
    const key = next?.keys.shift();
    if (key === undefined) return;
    yield key;
  }
}
