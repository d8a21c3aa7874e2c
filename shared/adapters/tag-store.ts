import { createHash, randomInt, randomUUID } from 'node:crypto';
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { TagCountDelta } from '../domain/people/tag-counts.js';
import type { TagListing, TagPage } from '../domain/people/tags.js';
import { compareKeys } from '../domain/people/field-index.js';
import { logger } from '../lib/logger.js';
import {
  batchGet,
  cancellationCodes,
  ExpressionBuilder,
  queryPartition,
  type Item,
} from './dynamo-helpers.js';
import type { TransactItem } from './record-writes.js';
import { TtlCache } from '../lib/ttl-cache.js';
import { mergedKeys, type ShardRead } from './sharded-index.js';
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
/** Up to this many tags, their counts are read by key (16 a tag); more, by range. */
const FEW_TAGS = 25;

/**
 * Whose tags: people's (the people table, `T…` keys) or organizations' (the organizations
 * table, the same items under `OT…`: numbered apart, as the real API numbers them).
 */
export type TagPrefix = 'T' | 'OT';

const tagKey = (instanceId: string, name: string, p: TagPrefix = 'T') => ({
  pk: `${instanceId}#${p}#${name}`,
  sk: p,
});
const tagIdKey = (instanceId: string, id: number, p: TagPrefix = 'T') => ({
  pk: `${instanceId}#${p}ID#${id}`,
  sk: `${p}ID`,
});
const sequenceKey = (instanceId: string, shard: number, p: TagPrefix = 'T') => ({
  pk: `${instanceId}#${p}SEQ`,
  sk: String(shard),
});
const listPk = (instanceId: string, shard: number, p: TagPrefix = 'T') =>
  `${instanceId}#${p}L#${shard}`;
const countPk = (instanceId: string, shard: number, p: TagPrefix = 'T') =>
  `${instanceId}#${p}C#${shard}`;
const outboxPk = (instanceId: string, shard: number, p: TagPrefix = 'T') =>
  `${instanceId}#${p}O#${shard}`;
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
  prefix: TagPrefix = 'T',
): CounterAdd[] {
  return [...deltas].map(([name, delta]) => ({
    table,
    pk: `${instanceId}#${prefix}C#${name}`,
    add: { ...delta },
    shardKey: (shard) => ({ pk: countPk(instanceId, shard % TAG_SHARDS, prefix), sk: name }),
    ...(delta.count > 0 ? { latest: { last_used: at } } : {}),
  }));
}

/** The same as items of a transaction without the batcher (random shards). */
export function tagCountItems(
  table: string,
  instanceId: string,
  deltas: Map<string, TagCountDelta>,
  at: string,
  prefix: TagPrefix = 'T',
): TransactItem[] {
  return tagCounters(table, instanceId, deltas, at, prefix).map((counter) => ({
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
  prefix: TagPrefix = 'T',
): { counters: CounterAdd[]; outbox: TransactItem[]; pending: OutboxItem[] } {
  if (deltas.size <= MAX_TAGS_IN_TRANSACTION) {
    return {
      counters: tagCounters(table, instanceId, deltas, at, prefix),
      outbox: [],
      pending: [],
    };
  }
  const entries = [...deltas];
  const pending: OutboxItem[] = [];
  for (let start = 0; start < entries.length; start += OUTBOX_CHUNK) {
    pending.push({
      pk: outboxPk(instanceId, randomInt(TAG_SHARDS), prefix),
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
  prefix: TagPrefix = 'T',
): { items: TransactItem[]; pending: OutboxItem[] } {
  if (deltas.size <= MAX_TAGS_IN_TRANSACTION) {
    return { items: tagCountItems(table, instanceId, deltas, at, prefix), pending: [] };
  }
  const { outbox, pending } = tagCountWrites(table, instanceId, deltas, at, prefix);
  return { items: outbox, pending };
}

/** How long a container knows a tag to have its ID (tags are never deleted nor renumbered). */
const REGISTERED_TTL_MS = 60 * 60_000;

export class DynamoTagStore implements TagListing {
  /** Tags this container has seen with their IDs (`<inst>#<name>`): not read again. */
  private readonly registered = new TtlCache<true>(10_000);
  /** Tags' IDs and creation times, as `tags/get` shows them (they never change). */
  private readonly kept = new TtlCache<{ id: number; created_at: string }>(20_000);

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly batcher: TransactionBatcher,
    /** `T` people's tags (the people table), `OT` organizations' (their table). */
    readonly prefix: TagPrefix = 'T',
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
            counters: tagCounters(this.table, instanceId, deltas, item.at, this.prefix),
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
        const items = await queryPartition(
          this.db,
          this.table,
          outboxPk(instanceId, shard, this.prefix),
        );
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
          unknown.map((name) => tagKey(instanceId, name, this.prefix)),
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
        const listing = { lpk: listPk(instanceId, shardOfName(name), this.prefix), lsk: name };
        const tagWrite: TransactItem = existing
          ? {
              Update: {
                TableName: this.table,
                Key: tagKey(instanceId, name, this.prefix),
                UpdateExpression: 'SET tag_id = :id, lpk = :lpk, lsk = :lsk',
                ConditionExpression: 'attribute_not_exists(tag_id)',
                ExpressionAttributeValues: { ':id': id, ':lpk': listing.lpk, ':lsk': listing.lsk },
              },
            }
          : {
              Put: {
                TableName: this.table,
                Item: {
                  ...tagKey(instanceId, name, this.prefix),
                  name,
                  tag_id: id,
                  created_at,
                  ...listing,
                },
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
                  Item: { ...tagIdKey(instanceId, id, this.prefix), name, created_at },
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

  /** Whether any tag was ever made (its ID drawn from a sequence): one query of one item. */
  async hasTags(instanceId: string): Promise<boolean> {
    const { Items = [] } = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': sequenceKey(instanceId, 0, this.prefix).pk },
        Limit: 1,
        ProjectionExpression: 'pk',
        // A tag made a moment ago (its sequence first taken) is listed at once.
        ConsistentRead: true,
      }),
    );
    return Items.length > 0;
  }

  /** `count` new tag IDs: the next ones of a random sequence (of 16), taken in one addition. */
  private async nextIds(instanceId: string, count: number): Promise<number[]> {
    const shard = randomInt(TAG_SHARDS);
    const { Attributes } = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: sequenceKey(instanceId, shard, this.prefix),
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
      unique.map((id) => tagIdKey(instanceId, id, this.prefix)),
      true,
    );
    return new Map(
      items.map((item) => [
        Number(String(item.pk).split(`#${this.prefix}ID#`)[1]),
        TagIdItem.parse(item).name,
      ]),
    );
  }

  /**
   * A page of the instance's tags in name order, pending count changes applied first: the
   * names after `after` from the 16 shards of the `list` index, merged and read lazily,
   * `keep` tried on each until `limit` are kept or `scan` were read; then those tags' items
   * (kept in the container: a tag's ID and creation never change) and their counts. The cost
   * is bounded by `scan` and `limit`, whatever the number of tags.
   */
  async tagsPage(
    instanceId: string,
    options: { after?: string; limit: number; scan: number; keep: (name: string) => boolean },
  ): Promise<TagPage> {
    await this.sweep(instanceId);
    const names: string[] = [];
    let scanned = 0;
    let last: string | undefined;
    let more = false;
    const read: ShardRead = async (shard, after, count) => {
      const x = new ExpressionBuilder();
      let condition = `${x.name('lpk')} = ${x.value(listPk(instanceId, shard, this.prefix))}`;
      if (after !== undefined) condition += ` AND ${x.name('lsk')} > ${x.value(after)}`;
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'list',
          KeyConditionExpression: condition,
          ExpressionAttributeNames: x.names,
          ExpressionAttributeValues: x.values,
          Limit: count,
        }),
      );
      return {
        keys: (page.Items ?? []).map((item) => String(item.lsk)),
        more: page.LastEvaluatedKey !== undefined,
      };
    };
    for await (const name of mergedKeys(read, TAG_SHARDS, options.after, compareKeys)) {
      if (names.length >= options.limit || scanned >= options.scan) {
        more = true;
        break;
      }
      scanned += 1;
      last = name;
      if (options.keep(name)) names.push(name);
    }
    const [details, counts] = await Promise.all([
      this.details(instanceId, names),
      this.countsOf(instanceId, names),
    ]);
    const tags = names.flatMap((name) => {
      const tag = details.get(name);
      if (!tag) return [];
      const count = counts.get(name);
      return [
        {
          id: tag.id,
          name,
          created_at: tag.created_at,
          last_used: count?.last_used ?? tag.created_at,
          count: count?.count ?? 0,
          subscribers: count?.subscribers ?? 0,
          sms_opted_in: count?.sms_opted_in ?? 0,
        },
      ];
    });
    return more && last !== undefined ? { tags, after: last } : { tags };
  }

  /** Tags' IDs and creation times: from the container, or read (strongly consistent). */
  private async details(instanceId: string, names: string[]) {
    const found = new Map<string, { id: number; created_at: string }>();
    const unknown: string[] = [];
    for (const name of names) {
      const kept = this.kept.get(`${instanceId}#${name}`);
      if (kept) found.set(name, kept);
      else unknown.push(name);
    }
    if (unknown.length > 0) {
      const items = await batchGet(
        this.db,
        this.table,
        unknown.map((name) => tagKey(instanceId, name, this.prefix)),
        true,
      );
      for (const item of items) {
        const tag = TagItem.parse(item);
        if (tag.tag_id === undefined) continue;
        const view = { id: tag.tag_id, created_at: tag.created_at };
        found.set(tag.name, view);
        this.kept.set(`${instanceId}#${tag.name}`, view, REGISTERED_TTL_MS);
      }
    }
    return found;
  }

  /**
   * The counts of some tags, summed over their shards (strongly consistent): a few tags'
   * count items by key; more, the range of the 16 count partitions from the first to the
   * last name.
   */
  private async countsOf(instanceId: string, names: string[]) {
    const totals = new Map<string, TagCountDelta & { last_used?: string }>();
    const [first, last] = [names[0], names.at(-1)];
    if (first === undefined || last === undefined) return totals;
    const wanted = new Set(names);
    const add = (raw: Item) => {
      const item = CountItem.parse(raw);
      if (!wanted.has(item.sk)) return;
      const total = totals.get(item.sk) ?? { count: 0, subscribers: 0, sms_opted_in: 0 };
      total.count += item.count ?? 0;
      total.subscribers += item.subscribers ?? 0;
      total.sms_opted_in += item.sms_opted_in ?? 0;
      if (item.last_used && (!total.last_used || item.last_used > total.last_used)) {
        total.last_used = item.last_used;
      }
      totals.set(item.sk, total);
    };
    if (names.length <= FEW_TAGS) {
      const keys = names.flatMap((name) =>
        Array.from({ length: TAG_SHARDS }, (_, shard) => ({
          pk: countPk(instanceId, shard, this.prefix),
          sk: name,
        })),
      );
      for (const item of await batchGet(this.db, this.table, keys, true)) add(item);
      return totals;
    }
    await Promise.all(
      Array.from({ length: TAG_SHARDS }, async (_, shard) => {
        let ExclusiveStartKey: Record<string, unknown> | undefined;
        do {
          const page = await this.db.send(
            new QueryCommand({
              TableName: this.table,
              KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
              ExpressionAttributeValues: {
                ':pk': countPk(instanceId, shard, this.prefix),
                ':first': first,
                ':last': last,
              },
              ConsistentRead: true,
              ExclusiveStartKey,
            }),
          );
          for (const item of page.Items ?? []) add(item);
          ExclusiveStartKey = page.LastEvaluatedKey;
        } while (ExclusiveStartKey);
      }),
    );
    return totals;
  }
}
