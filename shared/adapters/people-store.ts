import { randomInt } from 'node:crypto';
import {
  DeleteCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { ServiceUnavailableError } from '../domain/errors.js';
import type { FieldValue } from '../domain/fields/field-values.js';
import type { KeyClaimStore } from '../domain/key-fields.js';
import { claimId, type RecordMarker } from '../domain/merge/merge-engine.js';
import { ClaimHintCache } from '../domain/merge/claim-hints.js';
import { BUILT_IN_MERGE_KEYS } from '../domain/instance-config.js';
import { z } from 'zod';
import { newId } from '../domain/ids.js';
import type { CreatePlan, UpdatePlan } from '../domain/people/merge-plan.js';
import type { ClaimKey, PeopleStore } from '../domain/people/people-store.js';
import type { GeocodingMeter } from '../domain/location.js';
import type { ActivityQuery, ActivityReader } from '../domain/people/person-activities.js';
import { ActivityTimeline } from './activity-timeline.js';
import type { ListIndex, PersonListing } from '../domain/people/person-get.js';
import {
  indexSortKey,
  isPrimaryMatch,
  searchRange,
  searchTokens,
  SEARCH_INDEXES,
  type SearchIndex,
  type SearchTokens,
} from '../domain/people/person-index.js';
import type { Person, RecordedActivity } from '../domain/people/person.js';
import { compareKeys } from '../domain/people/field-index.js';
import {
  batchGet,
  cancellationCodes,
  ExpressionBuilder,
  isConditionFailure,
  sumCounters,
  type Item,
} from './dynamo-helpers.js';
import {
  countRange,
  mergedKeys,
  queryShard,
  type ShardQuery,
  type ShardRead,
} from './sharded-index.js';
import { DynamoTagStore, tagCountWrites } from './tag-store.js';
import { holderOf, tagCountDeltas } from '../domain/people/tag-counts.js';
import { EMAIL_PERMISSION, SMS_PERMISSION } from '../domain/people/person.js';
import { TransactionBatcher, type BatcherLimits } from './transaction-batcher.js';
import {
  claimKey,
  claimWrites,
  findClaimOwners,
  fieldLevelExpressions,
  fieldUpdate,
  markerPuts,
  writeMergedPart,
  wholeStateExpressions,
  type TransactItem,
} from './record-writes.js';
import { MarkerGroups } from './marker-groups.js';

/**
 * The people table (see docs/data-model.md):
 * - person `<inst>#P#<id>` / `P`: fields (map), tags (map tag → true), organization,
 *   timestamps, and the listing index keys `lpk` = `<inst>#L#<shard>`, `lsk` = the ID;
 * - key claim `<inst>#K#<field>#<value>` / `K`: the person holding that key value;
 * - counter shard `<inst>#C` / `<n>`: contacts and subscribers, summed on read;
 * - tag `<inst>#T#<tag>` / `T`: the instance's tags.
 * Activities recorded with a change go to the activities table in the same transaction.
 */

export const COUNTER_SHARDS = 16;

/**
 * An instance's counters (contacts, subscribers, organizations), summed over their shards:
 * one query in each table, whatever the instance's size.
 */
export async function instanceCounters(
  db: DynamoDBDocumentClient,
  tables: { people: string; organizations: string },
  instanceId: string,
) {
  const [people, organizations] = await Promise.all([
    sumCounters(db, tables.people, counterPk(instanceId)),
    sumCounters(db, tables.organizations, counterPk(instanceId)),
  ]);
  return {
    contacts: people.contacts ?? 0,
    subscribers: people.subscribers ?? 0,
    organizations: organizations.organizations ?? 0,
  };
}
export const LIST_SHARDS = 16;

export const personKey = (instanceId: string, id: string) => ({
  pk: `${instanceId}#P#${id}`,
  sk: 'P',
});
export const counterPk = (instanceId: string) => `${instanceId}#C`;
const usagePk = (instanceId: string, at: Date) =>
  `${instanceId}#U#geocoding#${at.toISOString().slice(0, 7)}`;
export const listPk = (instanceId: string, shard: number) => indexPk(instanceId, 'list', shard);
/** Archived people stay in the `list` index under partitions of their own (`<inst>#X#<n>`). */
export const archivedListPk = (instanceId: string, shard: number) => `${instanceId}#X#${shard}`;

/** Key attributes of the search and sort indexes, one pair per index. */
export const INDEX_ATTRIBUTES: Record<
  SearchIndex | 'list',
  { partitionKey: string; sortKey: string; tag: string }
> = {
  list: { partitionKey: 'lpk', sortKey: 'lsk', tag: 'L' },
  email: { partitionKey: 'epk', sortKey: 'esk', tag: 'E' },
  first: { partitionKey: 'fpk', sortKey: 'fsk', tag: 'F' },
  last: { partitionKey: 'gpk', sortKey: 'gsk', tag: 'G' },
};

export const indexPk = (instanceId: string, index: SearchIndex | 'list', shard: number) =>
  `${instanceId}#${INDEX_ATTRIBUTES[index].tag}#${shard}`;

/** Every index key of a person: its shard comes from its ID, its sort keys from its tokens. */
function indexKeys(instanceId: string, id: string, tokens: SearchTokens) {
  const shard = listShard(id);
  const keys: Record<string, string> = { lpk: indexPk(instanceId, 'list', shard), lsk: id };
  for (const index of SEARCH_INDEXES) {
    const { partitionKey, sortKey } = INDEX_ATTRIBUTES[index];
    keys[partitionKey] = indexPk(instanceId, index, shard);
    keys[sortKey] = indexSortKey(tokens[index], id);
  }
  return keys;
}

/** The sort keys of the search indexes an index entry carries (projected into each). */
function searchKeysOf(item: Item): Partial<Record<SearchIndex, string>> {
  const keys: Partial<Record<SearchIndex, string>> = {};
  for (const index of SEARCH_INDEXES) {
    const value = item[INDEX_ATTRIBUTES[index].sortKey];
    if (typeof value === 'string') keys[index] = value;
  }
  return keys;
}

/** The listing shard of a person: from the random tail of its ID, so writes spread evenly. */
export function listShard(id: string): number {
  return parseInt(id.slice(-4), 16) % LIST_SHARDS;
}

/** The item of a new person: its fields, tags, timestamps and every index key. */
export function personItem(instanceId: string, person: Person): Item {
  return {
    ...personKey(instanceId, person.id),
    id: person.id,
    fields: person.fields,
    tags: Object.fromEntries(person.tags.map((tag) => [tag, true])),
    created_at: person.created_at,
    updated_at: person.updated_at,
    version: 1,
    ...indexKeys(instanceId, person.id, searchTokens(person.fields)),
  };
}

const PersonItem = z.object({
  id: z.string(),
  fields: z.record(z.string(), z.unknown()),
  tags: z.record(z.string(), z.unknown()).optional(),
  organization_id: z.string().optional(),
  created_at: z.string(),
  updated_at: z.string(),
  version: z.number().optional(),
  archived_at: z.string().optional(),
  origin_request: z.string().optional(),
  origin_index: z.number().optional(),
});

export function personFromItem(item: Item): Person {
  const parsed = PersonItem.parse(item);
  return {
    id: parsed.id,
    // Field values are only ever written by this service, after validation.
    fields: parsed.fields as Person['fields'],
    tags: Object.keys(parsed.tags ?? {}).sort(),
    ...(parsed.organization_id ? { organization_id: parsed.organization_id } : {}),
    created_at: parsed.created_at,
    updated_at: parsed.updated_at,
    ...(parsed.version !== undefined ? { version: parsed.version } : {}),
    ...(parsed.archived_at !== undefined ? { archived_at: parsed.archived_at } : {}),
    ...(parsed.origin_request !== undefined && parsed.origin_index !== undefined
      ? { origin: { requestId: parsed.origin_request, index: parsed.origin_index } }
      : {}),
  };
}

export interface PeopleTables {
  people: string;
  activities: string;
  organizations: string;
  /** Where queued requests record their records' outcomes (the ingest worker's). */
  requests?: string;
}

export class DynamoPeopleStore
  implements PeopleStore, PersonListing, ActivityReader, GeocodingMeter, KeyClaimStore
{
  /** People written at once by a request share transactions (each person's items stay atomic). */
  private readonly transactions: TransactionBatcher;
  /** A whole request's people at once: the batcher turns them into a few transactions. */
  readonly writeConcurrency = 100;
  /** A person created for a queued request names it (`origin_request`; erasure reads it). */
  readonly namesCreatingRequest = true;
  readonly claimHints = new ClaimHintCache(new Set(BUILT_IN_MERGE_KEYS));

  /** Markers of the people queued requests create, put right after their transactions. */
  private readonly markers: MarkerGroups | undefined;

  /** The instance's tags, and their counts (written with the people). */
  readonly tags: DynamoTagStore;
  private readonly timeline: ActivityTimeline;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: PeopleTables,
    /** How people share transactions (DynamoDB's limits unless told otherwise). */
    batching: Partial<BatcherLimits> = {},
  ) {
    this.transactions = new TransactionBatcher(db, batching);
    this.tags = new DynamoTagStore(db, tables.people, this.transactions);
    this.timeline = new ActivityTimeline(db, tables.activities);
    this.markers = tables.requests ? new MarkerGroups(db, tables.requests) : undefined;
  }

  findClaimOwners(instanceId: string, keys: ClaimKey[], consistent = true) {
    return findClaimOwners(this.db, this.tables.people, instanceId, keys, consistent);
  }

  async claimOwner(instanceId: string, field: string, value: string) {
    const owners = await this.findClaimOwners(instanceId, [{ field, value }]);
    return owners.get(claimId(field, value));
  }

  /** People by ID; strongly consistent unless asked otherwise (a client reads its own writes). */
  async getPeople(instanceId: string, ids: string[], consistent = true) {
    const items = await batchGet(
      this.db,
      this.tables.people,
      ids.map((id) => personKey(instanceId, id)),
      consistent,
    );
    return new Map(items.map((item) => [String(item.id), personFromItem(item)]));
  }

  async createPerson(
    instanceId: string,
    plan: CreatePlan,
    dataSource: string,
    marker?: RecordMarker,
  ) {
    const { person } = plan;
    const claims = [...plan.claims];
    // A queued request's new person names its record (`origin_request`, `origin_index`): its
    // claims keep another delivery from creating it again, and that delivery knows the person
    // as this record's by them (the merge engine). So its marker is not in the transaction
    // (a quarter of its items) but held, and put with the request's other new people's once
    // its merge is over (`releaseMarkers`). A person without claims keeps it in the
    // transaction.
    const deferred = marker !== undefined && claims.length > 0 ? marker : undefined;
    const inline = deferred ? undefined : marker;
    if (deferred && !this.markers) throw new Error('recording outcomes needs the requests table');
    const items = [
      {
        Put: {
          TableName: this.tables.people,
          Item: {
            ...personItem(instanceId, person),
            ...(marker ? { origin_request: marker.requestId, origin_index: marker.index } : {}),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      ...claimWrites(this.tables.people, instanceId, person.id, claims, []).added,
      ...this.activityPuts(instanceId, person.id, plan.activities, person.created_at, dataSource),
      ...markerPuts(this.tables.requests, instanceId, inline),
    ];
    const counters = {
      table: this.tables.people,
      pk: counterPk(instanceId),
      add: { contacts: 1, subscribers: plan.subscribed ? 1 : 0 },
    };
    const tagged = tagCountWrites(
      this.tables.people,
      instanceId,
      tagCountDeltas(undefined, holderOf(person)),
      person.created_at,
    );
    // Outbox items go before the marker (which must stay last).
    items.splice(items.length - (inline ? 1 : 0), 0, ...tagged.outbox);
    await writeMergedPart(
      this.transactions,
      { items, counters: [counters, ...tagged.counters] },
      { released: [], added: claims },
      inline !== undefined,
    );
    if (deferred) this.markers?.hold(instanceId, deferred);
    if (tagged.pending.length > 0) await this.tags.applyOutbox(instanceId, tagged.pending);
  }

  /** Puts the markers held for the request's new people (`MarkerGroups`). */
  async releaseMarkers(instanceId: string, requestId: string): Promise<void> {
    await this.markers?.release(instanceId, requestId);
  }

  async updatePerson(
    instanceId: string,
    plan: UpdatePlan,
    dataSource: string,
    marker?: RecordMarker,
  ) {
    const personId = plan.before.id;
    const deltas = tagCountDeltas(holderOf(plan.before), holderOf(plan.after));
    const update = this.fieldLevelUpdate(plan) ?? this.wholeStateUpdate(plan);
    const tagged = tagCountWrites(this.tables.people, instanceId, deltas, plan.after.updated_at);
    const added = [...plan.claimsAdded];
    const released = [...plan.claimsReleased];
    const claims = claimWrites(this.tables.people, instanceId, personId, added, released);
    const transactItems: TransactItem[] = [
      {
        Update: {
          TableName: this.tables.people,
          Key: personKey(instanceId, personId),
          ...update,
        },
      },
      ...claims.released,
      ...claims.added,
      ...this.activityPuts(
        instanceId,
        personId,
        plan.activities,
        plan.after.updated_at,
        dataSource,
      ),
      ...tagged.outbox,
      ...markerPuts(this.tables.requests, instanceId, marker),
    ];
    const counters =
      plan.subscriberDelta !== 0
        ? [
            {
              table: this.tables.people,
              pk: counterPk(instanceId),
              add: { subscribers: plan.subscriberDelta },
            },
          ]
        : [];
    await writeMergedPart(
      this.transactions,
      { items: transactItems, counters: [...counters, ...tagged.counters] },
      { released, added },
      marker !== undefined,
    );
    if (tagged.pending.length > 0) await this.tags.applyOutbox(instanceId, tagged.pending);
  }

  /**
   * The update as field-level expressions: `SET`/`REMOVE` of the fields and tags that change
   * (concurrent writes to other fields or tags are kept), conditioned only on the values the
   * plan relied on. `undefined` when the expressions would pass DynamoDB's 4 KB limit.
   *
   * Tag counts (`tag-counts.ts`) are computed from the read, so the write is also
   * conditioned on what they depend on: each tag it adds or unsets still absent or present
   * as read (an unset tag read absent too: removing one set meanwhile would leave its count
   * behind), the permissions as read when tags change, and, when a permission changes, the
   * whole person as read (its `version`: the counts of every tag it holds move). A
   * concurrent change makes it be planned again from a fresh read: unsets still win, and the
   * counts are exact.
   */
  private fieldLevelUpdate(plan: UpdatePlan) {
    const counted = plan.addTags.length > 0 || plan.unsetTags.length > 0;
    const personId = plan.before.id;
    const x = new ExpressionBuilder();
    const permissionChanged = [EMAIL_PERMISSION, SMS_PERMISSION].some(
      (field) => plan.before.fields[field] !== plan.after.fields[field],
    );
    const { set, remove, conditions } = fieldUpdate(x, {
      ...plan,
      expected: counted
        ? {
            [EMAIL_PERMISSION]: plan.before.fields[EMAIL_PERMISSION],
            [SMS_PERMISSION]: plan.before.fields[SMS_PERMISSION],
            ...plan.expected,
          }
        : plan.expected,
      updatedAt: plan.after.updated_at,
    });
    const tag = (name: string) => `${x.name('tags')}.${x.name(name)}`;
    for (const name of plan.addTags) set.push(`${tag(name)} = ${x.value(true)}`);
    // Every unset tag is removed (each conditioned below on being as the read saw it).
    for (const name of plan.unsetTags) remove.push(tag(name));
    for (const name of plan.addTags) conditions.push(`attribute_not_exists(${tag(name)})`);
    for (const name of plan.unsetTags) {
      conditions.push(
        plan.before.tags.includes(name)
          ? `attribute_exists(${tag(name)})`
          : `attribute_not_exists(${tag(name)})`,
      );
    }
    if (permissionChanged) {
      conditions.push(
        plan.before.version === undefined
          ? `attribute_not_exists(${x.name('version')})`
          : `${x.name('version')} = ${x.value(plan.before.version)}`,
      );
    }
    if (plan.tagRoom !== undefined) {
      conditions.push(`size(${x.name('tags')}) <= ${x.value(plan.tagRoom)}`);
    }
    // Never into an archived person (archived since it was read: it is read again).
    conditions.push(`attribute_not_exists(${x.name('archived_at')})`);
    // Only the index keys whose tokens change: the others' sources are not conditioned on (a
    // concurrent change of the email sets the email index's key, which this must not undo).
    for (const index of SEARCH_INDEXES) {
      const token = plan.tokens?.[index];
      if (token === undefined) continue;
      const { sortKey } = INDEX_ATTRIBUTES[index];
      set.push(`${x.name(sortKey)} = ${x.value(indexSortKey(token, personId))}`);
    }
    return fieldLevelExpressions(x, set, remove, conditions);
  }

  /**
   * The update as the person's whole new state (fields, tags, index keys), conditioned on
   * the version it was planned from: for updates too large for field-level expressions.
   * A concurrent write makes it fail, and the engine plans it again from a fresh read.
   */
  private wholeStateUpdate(plan: UpdatePlan) {
    const personId = plan.before.id;
    const x = new ExpressionBuilder();
    const tokens = searchTokens(plan.after.fields);
    const set = [
      `${x.name('fields')} = ${x.value(plan.after.fields)}`,
      `${x.name('tags')} = ${x.value(Object.fromEntries(plan.after.tags.map((tag) => [tag, true])))}`,
      `${x.name('updated_at')} = ${x.value(plan.after.updated_at)}`,
    ];
    for (const index of SEARCH_INDEXES) {
      const { sortKey } = INDEX_ATTRIBUTES[index];
      set.push(`${x.name(sortKey)} = ${x.value(indexSortKey(tokens[index], personId))}`);
    }
    return wholeStateExpressions(x, set, plan.before.version);
  }

  /** Gives every named tag its item and stable ID (`tag-store.ts`). */
  ensureTags(instanceId: string, tags: string[]) {
    return this.tags.ensureTags(instanceId, tags);
  }

  tagNames(instanceId: string, ids: number[]) {
    return this.tags.tagNames(instanceId, ids);
  }

  /** Counter totals of an instance, summed over the shards of both tables. */
  counters(instanceId: string) {
    return instanceCounters(this.db, this.tables, instanceId);
  }

  /**
   * The next `count` sort keys of an index after `after`: the shards read from the position
   * on and merged as they are read (a few keys from each at first, more from those that run
   * out: `mergedKeys`), so a page reads about its own keys whatever the instance's size. Sort
   * keys are unique (they end in the ID), so one key is a complete cursor.
   */
  async indexPage(
    instanceId: string,
    index: ListIndex,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ) {
    const { sortKey } = INDEX_ATTRIBUTES[index];
    const read: ShardRead = async (shard, position, size) => {
      const items = await this.queryShard(instanceId, index, shard, {
        order,
        ...(position === undefined ? {} : { after: position }),
        count: size + 1,
      });
      const keys = items.map((item) => String(item[sortKey]));
      return { keys: keys.slice(0, size), more: keys.length > size };
    };
    const compare = order === 'asc' ? compareKeys : (a: string, b: string) => compareKeys(b, a);
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
   * Search: people whose email, "first last" or "last first" starts with `q`, in token
   * order. Each person is reported once, under its smallest matching token (every index
   * entry carries the person's three tokens), so a person matching by email and by name is
   * neither repeated nor skipped across pages.
   */
  async searchPage(instanceId: string, q: string, after: string | undefined, count: number) {
    const range = searchRange(q);
    // The 48 streams (3 indexes × 16 shards) merged as they are read: see `indexPage`.
    const read: ShardRead = async (stream, position, size) => {
      const index = SEARCH_INDEXES[Math.floor(stream / LIST_SHARDS)] ?? 'email';
      const from = position === undefined ? range.from : `${position} `;
      // A position at (or past) the end of the matches: nothing follows.
      if (compareKeys(from, range.to) > 0) return { keys: [], more: false };
      const items = await this.queryShard(instanceId, index, stream % LIST_SHARDS, {
        order: 'asc',
        between: [from, range.to],
        count: size + 1,
        keep: (item) => isPrimaryMatch(index, searchKeysOf(item), range.from),
      });
      const keys = items.map((item) => String(item[INDEX_ATTRIBUTES[index].sortKey]));
      return { keys: keys.slice(0, size), more: keys.length > size };
    };
    const keys: string[] = [];
    let hasMore = false;
    const streams = SEARCH_INDEXES.length * LIST_SHARDS;
    // As `indexPage` reads a shard at first, each stream: the matches may all be one index's.
    const first = Math.ceil((2 * count) / LIST_SHARDS) + 1;
    for await (const key of mergedKeys(read, streams, after, compareKeys, first)) {
      // A person whose tokens are equal in two indexes is found in both: once.
      if (key === keys.at(-1)) continue;
      if (keys.length === count) {
        hasMore = true;
        break;
      }
      keys.push(key);
    }
    return { keys, hasMore };
  }

  /**
   * How many people match a search, up to `cap`: |E ∪ F ∪ G| counted as |E| + |F \ E| +
   * |G \ (E ∪ F)|, where E, F and G are the people whose email, "first last" and "last
   * first" match: each index counts its range, filtered on the other indexes' sort keys
   * (projected into it), so a person matching several ways counts once. Only counts travel.
   */
  async countSearch(instanceId: string, q: string, cap: number) {
    const range = searchRange(q);
    const counts = await Promise.all(
      SEARCH_INDEXES.map((index, position) => {
        const earlier = SEARCH_INDEXES.slice(0, position);
        return countRange(
          this.db,
          { ...this.indexOf(instanceId, index), between: [range.from, range.to] },
          LIST_SHARDS,
          cap,
          earlier.length === 0
            ? undefined
            : (x) => {
                const prefix = x.value(range.from);
                return earlier
                  .map(
                    (other) =>
                      `NOT begins_with(${x.name(INDEX_ATTRIBUTES[other].sortKey)}, ${prefix})`,
                  )
                  .join(' AND ');
              },
        );
      }),
    );
    return Math.min(
      cap,
      counts.reduce((sum, count) => sum + count, 0),
    );
  }

  async allIds(instanceId: string) {
    const perShard = await Promise.all(
      Array.from({ length: LIST_SHARDS }, (_, shard) =>
        this.queryShard(instanceId, 'list', shard, {
          order: 'asc',
          count: Number.POSITIVE_INFINITY,
        }),
      ),
    );
    return perShard.flat().map((item) => String(item.lsk));
  }

  /** Where an index of an instance lives: its table, key attributes and shard partitions. */
  private indexOf(instanceId: string, index: ListIndex) {
    const { partitionKey, sortKey } = INDEX_ATTRIBUTES[index];
    return {
      table: this.tables.people,
      index,
      partitionKey,
      sortKey,
      partition: (n: number) => indexPk(instanceId, index, n),
    };
  }

  private queryShard(
    instanceId: string,
    index: ListIndex,
    shard: number,
    options: Pick<ShardQuery, 'order' | 'after' | 'between' | 'count' | 'keep'>,
  ): Promise<Item[]> {
    return queryShard(this.db, { ...this.indexOf(instanceId, index), ...options }, shard);
  }

  /**
   * Every person holding a value for `field`, 100 at a time (strongly consistent reads):
   * archived people too, since they keep their claims.
   */
  async *peopleWithValues(instanceId: string, field: string) {
    const archived = await Promise.all(
      Array.from({ length: LIST_SHARDS }, (_, shard) =>
        queryShard(
          this.db,
          {
            ...this.indexOf(instanceId, 'list'),
            partition: (n) => archivedListPk(instanceId, n),
            order: 'asc',
            count: Number.POSITIVE_INFINITY,
          },
          shard,
        ),
      ),
    );
    const ids = [
      ...(await this.allIds(instanceId)),
      ...archived.flat().map((item) => String(item.lsk)),
    ];
    for (let start = 0; start < ids.length; start += 100) {
      const people = await this.getPeople(instanceId, ids.slice(start, start + 100), true);
      const page: { id: string; value: FieldValue }[] = [];
      for (const person of people.values()) {
        const value = person.fields[field];
        if (value !== undefined) page.push({ id: person.id, value });
      }
      yield page;
    }
  }

  async claimValue(
    instanceId: string,
    field: string,
    value: string,
    personId: string,
    held: FieldValue,
  ) {
    const key = claimKey(instanceId, field, value);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      try {
        // One transaction: the claim, and a check that the person still holds the value.
        await this.db.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: this.tables.people,
                  Item: { ...key, field, value, owner_id: personId },
                  ConditionExpression: 'attribute_not_exists(pk) OR owner_id = :me',
                  ExpressionAttributeValues: { ':me': personId },
                },
              },
              {
                ConditionCheck: {
                  TableName: this.tables.people,
                  Key: personKey(instanceId, personId),
                  ConditionExpression: '#fields.#field = :held',
                  ExpressionAttributeNames: { '#fields': 'fields', '#field': field },
                  ExpressionAttributeValues: { ':held': held },
                },
              },
            ],
          }),
        );
        return { kind: 'claimed' as const };
      } catch (error) {
        const codes = cancellationCodes(error);
        if (!codes) throw error;
        if (codes[1] === 'ConditionalCheckFailed') return { kind: 'moved' as const };
        if (codes[0] !== 'ConditionalCheckFailed') throw error;
      }
      const owner = (await this.findClaimOwners(instanceId, [{ field, value }], true)).get(
        claimId(field, value),
      );
      if (owner !== undefined) return { kind: 'held-by' as const, owner };
    }
    throw new ServiceUnavailableError(`the claim of ${field} "${value}" kept changing; try again`);
  }

  async takeOverClaim(instanceId: string, field: string, value: string, from: string, to: string) {
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.tables.people,
          Item: { ...claimKey(instanceId, field, value), field, value, owner_id: to },
          ConditionExpression: 'owner_id = :from',
          ExpressionAttributeValues: { ':from': from },
        }),
      );
      return true;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return false;
    }
  }

  async valuesOf(instanceId: string, field: string, personIds: string[]) {
    const people = await this.getPeople(instanceId, [...new Set(personIds)], true);
    return new Map([...people].map(([id, person]) => [id, person.fields[field]]));
  }

  async releaseValue(instanceId: string, field: string, value: string, personId: string) {
    try {
      await this.db.send(
        new DeleteCommand({
          TableName: this.tables.people,
          Key: claimKey(instanceId, field, value),
          ConditionExpression: 'owner_id = :me',
          ExpressionAttributeValues: { ':me': personId },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  /** Address lookups, counted per instance and month on sharded counters. */
  async record(instanceId: string, lookups: number, at: Date) {
    await this.db.send(
      new UpdateCommand({
        TableName: this.tables.people,
        Key: { pk: usagePk(instanceId, at), sk: String(randomInt(COUNTER_SHARDS)) },
        UpdateExpression: 'ADD lookups :n',
        ExpressionAttributeValues: { ':n': lookups },
      }),
    );
  }

  async geocodingLookups(instanceId: string, month: Date): Promise<number> {
    const { Items = [] } = await this.db.send(
      new QueryCommand({
        TableName: this.tables.people,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': usagePk(instanceId, month) },
        ConsistentRead: true,
      }),
    );
    return Items.reduce((sum, item) => sum + Number(item.lookups ?? 0), 0);
  }

  async personExists(instanceId: string, personId: string) {
    return (await this.getPeople(instanceId, [personId])).has(personId);
  }

  /** A person's timeline, newest first (activity-timeline.ts). */
  activities(
    instanceId: string,
    personId: string,
    options: ActivityQuery & { limit: number; before?: string; skip?: number },
  ) {
    return this.timeline.page(`${instanceId}#P#${personId}`, options);
  }

  countActivities(instanceId: string, personId: string, query: ActivityQuery, max: number) {
    return this.timeline.count(`${instanceId}#P#${personId}`, query, max);
  }

  private activityPuts(
    instanceId: string,
    personId: string,
    activities: RecordedActivity[],
    createdAt: string,
    source: string,
  ) {
    return activities.map((activity) => {
      const id = newId(Date.parse(createdAt));
      return {
        Put: {
          TableName: this.tables.activities,
          Item: {
            pk: `${instanceId}#P#${personId}`,
            sk: `${createdAt}#${id}`,
            id,
            person_id: personId,
            field_id: activity.field_id,
            attr: activity.attr,
            ...(activity.display !== undefined ? { display: activity.display } : {}),
            created_at: createdAt,
            source,
          },
        },
      };
    });
  }
}
