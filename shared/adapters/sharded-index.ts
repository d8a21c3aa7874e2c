import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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
  if (query.between && query.between[0] > query.between[1]) return [];
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
 * back), optionally narrowed by a filter, and stops once `cap` is reached: the cost of a
 * count is bounded whatever the size of the instance.
 */
export async function countRange(
  db: DynamoDBDocumentClient,
  query: Omit<ShardQuery, 'order' | 'after' | 'count' | 'keep'> & { between: [string, string] },
  shards: number,
  cap: number,
  filter?: (x: ExpressionBuilder) => string,
): Promise<number> {
  if (query.between[0] > query.between[1]) return 0;
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
