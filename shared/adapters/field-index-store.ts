import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  compareKeys,
  entrySortKey,
  holdsEntry,
  indexEntriesOf,
  parseEntrySortKey,
  wholeField,
  type EntryRange,
  type IndexEntry,
} from '../domain/people/field-index.js';
import type { FieldIndexReader } from '../domain/people/person-get.js';
import { batchWrite, ExpressionBuilder, type WriteRequest } from './dynamo-helpers.js';
import { mergedKeys, type ShardRead } from './sharded-index.js';
import { runBounded } from '../lib/bounded.js';
import { LIST_SHARDS, listShard, type DynamoPeopleStore } from './people-store.js';

/**
 * The field index in the indexes table (docs/data-model.md): an entry is the item
 * `<inst>#F#<field>#<shard>` / `<value>\u0001<person>` (keys only), the shard from the
 * person's ID. Entries are written by the people table's stream (the audience worker), one
 * `BatchWriteItem` entry per value that changed, and read by listings, one query per shard,
 * merged.
 */
export const entryPk = (instanceId: string, field: string, shard: number) =>
  `${instanceId}#F#${field}#${shard}`;

const maxKey = (a: string, b: string) => (compareKeys(a, b) >= 0 ? a : b);
const minKey = (a: string, b: string) => (compareKeys(a, b) <= 0 ? a : b);

export class DynamoFieldIndex implements FieldIndexReader {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Deletes the entries a person lost and puts those they gained (idempotent). */
  async apply(
    instanceId: string,
    personId: string,
    removed: readonly IndexEntry[],
    added: readonly IndexEntry[],
  ): Promise<void> {
    const shard = listShard(personId);
    const key = (entry: IndexEntry) => ({
      pk: entryPk(instanceId, entry.field, shard),
      sk: entrySortKey(entry.value, personId),
    });
    const writes: WriteRequest[] = [
      ...removed.map((entry) => ({ DeleteRequest: { Key: key(entry) } })),
      ...added.map((entry) => ({ PutRequest: { Item: key(entry) } })),
    ];
    if (writes.length > 0) await batchWrite(this.db, this.table, writes, undefined, 4);
  }

  /**
   * The next `count` entries of a range after `after`, in order: the 16 shards' entries from
   * the position on, merged as they are read (a few from each shard at first, more from those
   * that run out: mergedKeys), so a page reads about its own entries whatever the instance's
   * size.
   */
  async fieldPage(
    instanceId: string,
    range: EntryRange,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ) {
    const compare = order === 'asc' ? compareKeys : (a: string, b: string) => compareKeys(b, a);
    const read: ShardRead = async (shard, position, size) => {
      const keys = await this.queryShard(
        entryPk(instanceId, range.field, shard),
        range,
        order,
        position,
        size + 1,
      );
      return { keys: keys.slice(0, size), more: keys.length > size };
    };
    const keys: string[] = [];
    let hasMore = false;
    // Twice a shard's even share at first: few shards need a second read.
    const first = Math.ceil((2 * count) / LIST_SHARDS) + 1;
    for await (const key of mergedKeys(read, LIST_SHARDS, after, compare, first)) {
      if (keys.length === count) {
        hasMore = true;
        break;
      }
      keys.push(key);
    }
    return { keys, hasMore };
  }

  /**
   * Removes a field's entries whose person does not hold them (gone, archived, or changed
   * since), shard by shard, 100 people read a time. How many it removed.
   */
  async sweep(
    people: Pick<DynamoPeopleStore, 'getPeople'>,
    instanceId: string,
    field: string,
  ): Promise<number> {
    let removed = 0;
    for (let shard = 0; shard < LIST_SHARDS; shard += 1) {
      const pk = entryPk(instanceId, field, shard);
      let after: string | undefined;
      for (;;) {
        const keys = await this.queryShard(pk, wholeField(field), 'asc', after, 100);
        if (keys.length === 0) break;
        const held = await people.getPeople(
          instanceId,
          keys.map((key) => parseEntrySortKey(key).personId),
        );
        const stale = keys.filter((key) => {
          const { value, personId } = parseEntrySortKey(key);
          const person = held.get(personId);
          return !person || !holdsEntry(person, field, value);
        });
        if (stale.length > 0) {
          await batchWrite(
            this.db,
            this.table,
            stale.map((sk) => ({ DeleteRequest: { Key: { pk, sk } } })),
          );
        }
        removed += stale.length;
        after = keys.at(-1);
      }
    }
    return removed;
  }

  /**
   * One shard's entries of a range after `after` (exclusive), at most `count`: the key
   * condition's range starts (or, descending, ends) at the position, which is dropped.
   */
  private async queryShard(
    pk: string,
    range: EntryRange,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ): Promise<string[]> {
    let { from, to } = range;
    if (after !== undefined) {
      if (order === 'asc') from = maxKey(from, after);
      else to = minKey(to, after);
    }
    if (compareKeys(from, to) > 0) return [];
    const x = new ExpressionBuilder();
    // A key condition cannot hold the empty string: a range from '' has no lower bound.
    const sortKey =
      from === ''
        ? `${x.name('sk')} <= ${x.value(to)}`
        : `${x.name('sk')} BETWEEN ${x.value(from)} AND ${x.value(to)}`;
    const keys: string[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: `${x.name('pk')} = ${x.value(pk)} AND ${sortKey}`,
          ExpressionAttributeNames: x.names,
          ExpressionAttributeValues: x.values,
          ScanIndexForward: order === 'asc',
          Limit: Math.min(count - keys.length + 1, 1000),
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const key = String(item.sk);
        if (key !== after) keys.push(key);
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey && keys.length < count);
    return keys.slice(0, count);
  }
}

/** What rebuilding an instance's field index did. */
export interface IndexRebuild {
  people: number;
  entries: number;
  /** Entries removed: their person no longer held them (or was gone). */
  removed: number;
}

type RebuildPeople = Pick<DynamoPeopleStore, 'indexPage' | 'getPeople'>;

/**
 * Rebuilds an instance's field index: puts the entries of every person (not archived), a page
 * of the listing index at a time, then reads each person written again and removes what they
 * no longer hold (a change or an erasure meanwhile, which the stream may have applied before
 * these puts); then sweeps every entry of `fields` and removes those whose person does not
 * hold them (a stream batch given up, an erased person's values). Idempotent: run it again
 * after an interruption. For a deployment whose people were written before the field index.
 */
export async function rebuildFieldIndex(
  people: RebuildPeople,
  index: DynamoFieldIndex,
  instanceId: string,
  fields: readonly string[],
  pageSize = 500,
): Promise<IndexRebuild> {
  const done: IndexRebuild = { people: 0, entries: 0, removed: 0 };
  let after: string | undefined;
  for (;;) {
    const page = await people.indexPage(instanceId, 'list', 'asc', after, pageSize);
    const read = await people.getPeople(instanceId, page.keys);
    await runBounded([...read.values()], 8, async (person) => {
      const entries = indexEntriesOf(person);
      await index.apply(instanceId, person.id, [], entries);
      done.people += 1;
      done.entries += entries.length;
    });
    const again = await people.getPeople(instanceId, [...read.keys()]);
    for (const [id, person] of read) {
      const now = again.get(id);
      const stale = indexEntriesOf(person).filter(
        (entry) => !now || !holdsEntry(now, entry.field, entry.value),
      );
      if (stale.length > 0) await index.apply(instanceId, id, stale, []);
      done.removed += stale.length;
    }
    after = page.keys.at(-1);
    if (!page.hasMore || after === undefined) break;
  }
  for (const field of fields) done.removed += await index.sweep(people, instanceId, field);
  return done;
}
