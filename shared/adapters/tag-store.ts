import { createHash, randomInt, randomUUID } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { TagCountDelta } from '../domain/people/tag-counts.js';
import type { TagListing, TagView } from '../domain/people/tags.js';
import { logger } from '../lib/logger.js';
import { batchGet, cancellationCodes, queryPartition, type Item } from './dynamo-helpers.js';
import type { TransactItem } from './record-writes.js';
import { TtlCache } from '../lib/ttl-cache.js';
import { queryShard } from './sharded-index.js';
import type { CounterAdd, TransactionBatcher } from './transaction-batcher.js';

/**
 * The tags of an instance (people table; docs/data-model.md):
 * - tag `<inst>#T#<name>` / `T`: its stable ID (`tag_id`), when it was made, and the keys
 *   `lpk` = `<inst>#TL#<n>`, `lsk` = the name that list it in the `list` index;
 * - `<inst>#TID#<id>` / `TID`: the name of the tag with that ID (filters take either);
 * - `<inst>#TSEQ` / `<n>`: 16 sequences the IDs are drawn from (`(next - 1) × 16 + n + 1`);
 * - counts `<inst>#TC#<n>` / `<name>`: 16 shards of each tag's `count`, `subscribers`,
 *   `sms_opted_in` and `last_used`, summed on read (no hot key however popular the tag);
 * - outbox `<inst>#TO#<n>` / `<time>#<uuid>`: count changes of a write that changed more tags
 *   than its transaction has room for, put in that transaction and applied right after
 *   (each at most once: the application deletes it, conditioned on its being there).
 */
export const TAG_SHARDS = 16;
/** A write changing more tags' counts than this keeps them in the outbox (100 items a transaction). */
export const MAX_TAGS_IN_TRANSACTION = 25;
/** Tags per outbox item (its application is one transaction: the item and a count per tag). */
const OUTBOX_CHUNK = 90;

const tagKey = (instanceId: string, name: string) => ({ pk: `${instanceId}#T#${name}`, sk: 'T' });
const tagIdKey = (instanceId: string, id: number) => ({
  pk: `${instanceId}#TID#${id}`,
  sk: 'TID',
});
const sequenceKey = (instanceId: string, shard: number) => ({
  pk: `${instanceId}#TSEQ`,
  sk: String(shard),
});
const listPk = (instanceId: string, shard: number) => `${instanceId}#TL#${shard}`;
const countPk = (instanceId: string, shard: number) => `${instanceId}#TC#${shard}`;
const outboxPk = (instanceId: string, shard: number) => `${instanceId}#TO#${shard}`;
const shardOfName = (name: string) =>
  (createHash('sha256').update(name).digest()[0] ?? 0) % TAG_SHARDS;

const TagItem = z.object({
  name: z.string(),
  tag_id: z.number().optional(),
  created_at: z.string(),
});
const TagIdItem = z.object({ name: z.string() });
const CountItem = z.object({
  sk: z.string(),
  count: z.number().optional(),
  subscribers: z.number().optional(),
  sms_opted_in: z.number().optional(),
  last_used: z.string().optional(),
});
const OutboxItem = z.object({
  pk: z.string(),
  sk: z.string(),
  at: z.string(),
  deltas: z.record(z.string(), z.tuple([z.number(), z.number(), z.number()])),
});
type OutboxItem = z.infer<typeof OutboxItem>;

/** The counters of tag count changes, for a transaction (the batcher picks the shards). */
export function tagCounters(
  table: string,
  instanceId: string,
  deltas: Map<string, TagCountDelta>,
  at: string,
): CounterAdd[] {
  return [...deltas].map(([name, delta]) => ({
    table,
    pk: `${instanceId}#TC#${name}`,
    add: { ...delta },
    shardKey: (shard) => ({ pk: countPk(instanceId, shard % TAG_SHARDS), sk: name }),
    ...(delta.count > 0 ? { latest: { last_used: at } } : {}),
  }));
}

/** The same as items of a transaction without the batcher (random shards). */
export function tagCountItems(
  table: string,
  instanceId: string,
  deltas: Map<string, TagCountDelta>,
  at: string,
): TransactItem[] {
  return tagCounters(table, instanceId, deltas, at).map((counter) => ({
    Update: {
      TableName: table,
      Key: counter.shardKey?.(randomInt(TAG_SHARDS)),
      UpdateExpression: 'ADD #c :c, #s :s, #m :m' + (counter.latest ? ' SET #last = :last' : ''),
      ExpressionAttributeNames: {
        '#c': 'count',
        '#s': 'subscribers',
        '#m': 'sms_opted_in',
        ...(counter.latest ? { '#last': 'last_used' } : {}),
      },
      ExpressionAttributeValues: {
        ':c': counter.add.count,
        ':s': counter.add.subscribers,
        ':m': counter.add.sms_opted_in,
        ...(counter.latest ? { ':last': counter.latest.last_used } : {}),
      },
    },
  }));
}

/**
 * How a write carries its tag count changes: as counters of its own transaction when few,
 * else as outbox items put in it (`outbox`) to apply once it is written (`pending`).
 */
export function tagCountWrites(
  table: string,
  instanceId: string,
  deltas: Map<string, TagCountDelta>,
  at: string,
): { counters: CounterAdd[]; outbox: TransactItem[]; pending: OutboxItem[] } {
  if (deltas.size <= MAX_TAGS_IN_TRANSACTION) {
    return { counters: tagCounters(table, instanceId, deltas, at), outbox: [], pending: [] };
  }
  const entries = [...deltas];
  const pending: OutboxItem[] = [];
  for (let start = 0; start < entries.length; start += OUTBOX_CHUNK) {
    pending.push({
      pk: outboxPk(instanceId, randomInt(TAG_SHARDS)),
      sk: `${at}#${randomUUID()}`,
      at,
      deltas: Object.fromEntries(
        entries
          .slice(start, start + OUTBOX_CHUNK)
          .map(([name, d]) => [name, [d.count, d.subscribers, d.sms_opted_in]]),
      ),
    });
  }
  return {
    counters: [],
    outbox: pending.map((item) => ({ Put: { TableName: table, Item: item } })),
    pending,
  };
}

/** The same for a transaction written without the batcher (counts on random shards). */
export function directTagCountWrites(
  table: string,
  instanceId: string,
  deltas: Map<string, TagCountDelta>,
  at: string,
): { items: TransactItem[]; pending: OutboxItem[] } {
  if (deltas.size <= MAX_TAGS_IN_TRANSACTION) {
    return { items: tagCountItems(table, instanceId, deltas, at), pending: [] };
  }
  const { outbox, pending } = tagCountWrites(table, instanceId, deltas, at);
  return { items: outbox, pending };
}

/** How long a container knows a tag to have its ID (tags are never deleted nor renumbered). */
const REGISTERED_TTL_MS = 60 * 60_000;

export class DynamoTagStore implements TagListing {
  /** Tags this container has seen with their IDs (`<inst>#<name>`): not read again. */
  private readonly registered = new TtlCache<true>(10_000);

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly batcher: TransactionBatcher,
  ) {}

  /**
   * Applies outbox items written by a transaction: each item's counts and its deletion in
   * one part (the deletion conditioned on the item being there, so that an item applied by
   * someone else meanwhile is not applied twice). A failure is logged, not thrown: the write
   * stands, and the next `tags/get` applies what is left.
   */
  async applyOutbox(instanceId: string, items: OutboxItem[]): Promise<void> {
    await Promise.all(
      items.map(async (item) => {
        const deltas = new Map(
          Object.entries(item.deltas).map(([name, [count, subscribers, sms]]) => [
            name,
            { count, subscribers, sms_opted_in: sms },
          ]),
        );
        try {
          await this.batcher.write({
            items: [
              {
                Delete: {
                  TableName: this.table,
                  Key: { pk: item.pk, sk: item.sk },
                  ConditionExpression: 'attribute_exists(pk)',
                },
              },
            ],
            counters: tagCounters(this.table, instanceId, deltas, item.at),
          });
        } catch (error) {
          if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return;
          logger.warn('Tag counts left in the outbox; tags/get applies them', {
            instanceId,
            error: error as Error,
          });
        }
      }),
    );
  }

  /** Applies every outbox item of the instance (what writes that stopped part-way left). */
  private async sweep(instanceId: string): Promise<void> {
    const found = await Promise.all(
      Array.from({ length: TAG_SHARDS }, async (_, shard) => {
        const items = await queryPartition(this.db, this.table, outboxPk(instanceId, shard));
        return items.map((item) => OutboxItem.parse(item));
      }),
    );
    const items = found.flat();
    if (items.length > 0) await this.applyOutbox(instanceId, items);
  }

  /**
   * Makes sure every named tag has its item and a stable ID: the new tags of a call take
   * their IDs from one random sequence in one addition, and each is written with its ID item
   * atomically, conditioned on the tag having none yet (a concurrent request that made it
   * first wins; its ID is kept, the one taken here goes unused). The tags' transactions go
   * through the transaction batcher, so a request naming 100 new tags costs a few calls, not
   * 200. A tag the container has seen with its ID is not read again for an hour (a tag keeps
   * its item and ID for good), so a request naming known tags costs no call at all.
   */
  async ensureTags(instanceId: string, names: string[]): Promise<void> {
    const known = (name: string) => `${instanceId}#${name}`;
    const unknown = [...new Set(names)].filter((name) => !this.registered.get(known(name)));
    if (unknown.length === 0) return;
    const found = new Map(
      (
        await batchGet(
          this.db,
          this.table,
          unknown.map((name) => tagKey(instanceId, name)),
          true,
        )
      )
        .map((item) => TagItem.parse(item))
        .map((tag) => [tag.name, tag]),
    );
    const register = (name: string) => {
      this.registered.set(known(name), true, REGISTERED_TTL_MS);
    };
    for (const [name, tag] of found) if (tag.tag_id !== undefined) register(name);
    const missing = unknown.filter((name) => found.get(name)?.tag_id === undefined);
    if (missing.length === 0) return;
    const ids = await this.nextIds(instanceId, missing.length);
    await Promise.all(
      missing.map(async (name, i) => {
        const id = ids[i] as number;
        const existing = found.get(name);
        const created_at = existing?.created_at ?? new Date().toISOString();
        const listing = { lpk: listPk(instanceId, shardOfName(name)), lsk: name };
        const tagWrite: TransactItem = existing
          ? {
              Update: {
                TableName: this.table,
                Key: tagKey(instanceId, name),
                UpdateExpression: 'SET tag_id = :id, lpk = :lpk, lsk = :lsk',
                ConditionExpression: 'attribute_not_exists(tag_id)',
                ExpressionAttributeValues: { ':id': id, ':lpk': listing.lpk, ':lsk': listing.lsk },
              },
            }
          : {
              Put: {
                TableName: this.table,
                Item: { ...tagKey(instanceId, name), name, tag_id: id, created_at, ...listing },
                ConditionExpression: 'attribute_not_exists(tag_id)',
              },
            };
        try {
          await this.batcher.write({
            items: [
              tagWrite,
              {
                Put: {
                  TableName: this.table,
                  Item: { ...tagIdKey(instanceId, id), name, created_at },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
            ],
          });
        } catch (error) {
          // Another request gave the tag its ID first: that one stands (this ID goes unused).
          if (cancellationCodes(error)?.[0] !== 'ConditionalCheckFailed') throw error;
        }
        register(name);
      }),
    );
  }

  /** `count` new tag IDs: the next ones of a random sequence (of 16), taken in one addition. */
  private async nextIds(instanceId: string, count: number): Promise<number[]> {
    const shard = randomInt(TAG_SHARDS);
    const { Attributes } = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: sequenceKey(instanceId, shard),
        UpdateExpression: 'ADD #next :count',
        ExpressionAttributeNames: { '#next': 'next' },
        ExpressionAttributeValues: { ':count': count },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    const last = Number(Attributes?.next);
    return Array.from({ length: count }, (_, i) => (last - count + i) * TAG_SHARDS + shard + 1);
  }

  async tagNames(instanceId: string, ids: number[]): Promise<Map<number, string>> {
    const unique = [...new Set(ids)].filter((id) => Number.isSafeInteger(id) && id > 0);
    const items = await batchGet(
      this.db,
      this.table,
      unique.map((id) => tagIdKey(instanceId, id)),
      true,
    );
    return new Map(
      items.map((item) => [Number(String(item.pk).split('#TID#')[1]), TagIdItem.parse(item).name]),
    );
  }

  /** Every tag of the instance with its counts, pending count changes applied first. */
  async listTags(instanceId: string): Promise<TagView[]> {
    await this.sweep(instanceId);
    const listed = await Promise.all(
      Array.from({ length: TAG_SHARDS }, (_, shard) =>
        queryShard(
          this.db,
          {
            table: this.table,
            index: 'list',
            partitionKey: 'lpk',
            sortKey: 'lsk',
            partition: (n) => listPk(instanceId, n),
            order: 'asc',
            count: Number.POSITIVE_INFINITY,
          },
          shard,
        ),
      ),
    );
    const names = listed.flat().map((item) => String(item.lsk));
    const [tags, counts] = await Promise.all([
      batchGet(
        this.db,
        this.table,
        names.map((name) => tagKey(instanceId, name)),
        true,
      ),
      this.counts(instanceId),
    ]);
    return tags
      .map((item: Item) => TagItem.parse(item))
      .filter(
        (tag): tag is z.infer<typeof TagItem> & { tag_id: number } => tag.tag_id !== undefined,
      )
      .map((tag) => {
        const count = counts.get(tag.name);
        return {
          id: tag.tag_id,
          name: tag.name,
          created_at: tag.created_at,
          last_used: count?.last_used ?? tag.created_at,
          count: count?.count ?? 0,
          subscribers: count?.subscribers ?? 0,
          sms_opted_in: count?.sms_opted_in ?? 0,
        };
      })
      .sort((a, b) => a.id - b.id);
  }

  /** Each tag's counts, summed over their shards (16 strongly consistent queries). */
  private async counts(instanceId: string) {
    const totals = new Map<string, TagCountDelta & { last_used?: string }>();
    await Promise.all(
      Array.from({ length: TAG_SHARDS }, async (_, shard) => {
        for (const raw of await queryPartition(this.db, this.table, countPk(instanceId, shard))) {
          const item = CountItem.parse(raw);
          const total = totals.get(item.sk) ?? { count: 0, subscribers: 0, sms_opted_in: 0 };
          total.count += item.count ?? 0;
          total.subscribers += item.subscribers ?? 0;
          total.sms_opted_in += item.sms_opted_in ?? 0;
          if (item.last_used && (!total.last_used || item.last_used > total.last_used)) {
            total.last_used = item.last_used;
          }
          totals.set(item.sk, total);
        }
      }),
    );
    return totals;
  }
}
