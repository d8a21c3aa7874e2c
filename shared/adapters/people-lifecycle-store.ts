import { markErased } from './erasure-marks.js';
import { randomInt, randomUUID } from 'node:crypto';
import {
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { ServiceUnavailableError } from '../domain/errors.js';
import type {
  AuditEntry,
  JobPosition,
  LifecycleStore,
  RecordState,
} from '../domain/lifecycle/lifecycle.js';
import { claimsOf } from '../domain/merge/field-changes.js';
import { MAX_MEMBERS } from '../domain/organizations/memberships.js';
import { indexSortKey, SEARCH_INDEXES, searchTokens } from '../domain/people/person-index.js';
import { EMAIL_PERMISSION, type Person } from '../domain/people/person.js';
import { runBounded } from '../lib/bounded.js';
import { backoffMs, canWait, sleep } from '../lib/time-budget.js';
import {
  batchGet,
  batchWrite,
  cancellationCodes,
  deletes,
  ExpressionBuilder,
  partitionKeys,
  sumCounters,
  type Key,
} from './dynamo-helpers.js';
import { idempotencyKey } from './idempotency-store.js';
import { messageKey, messageLogKey, messagePreviewKey } from './email-store.js';
import { organizationKey } from './organization-store.js';
import {
  archivedListPk,
  COUNTER_SHARDS,
  counterPk,
  INDEX_ATTRIBUTES,
  indexPk,
  LIST_SHARDS,
  listPk,
  listShard,
  personFromItem,
  personKey,
} from './people-store.js';
import { referencePk, referencesOf } from './person-references.js';
import { directTagCountWrites, DynamoTagStore } from './tag-store.js';
import { TransactionBatcher } from './transaction-batcher.js';
import { holderOf, tagCountDeltas, withCounted } from '../domain/people/tag-counts.js';
import { claimWrites, type TransactItem } from './record-writes.js';
import { requestPk } from './request-store.js';
import { queryShard } from './sharded-index.js';

/**
 * Archive, restore and erasure of people (docs/data-model.md, "Archived and erased"):
 * - archiving is one transaction: the person gets `archived_at`, moves to the archived
 *   partitions of the `list` index (`<inst>#X#<shard>`) and leaves the search indexes, the
 *   counters lose it (`contacts`, `subscribers`; `archived` gains it) and so does its
 *   organization's member count; conditioned on the values it relied on (not archived, the
 *   email permission, the organization), so a concurrent merge or move makes it read again;
 * - restoring reverses it; the organization takes the person back only if it still exists
 *   and has room (3000), else the link is dropped;
 * - erasing deletes what names the person (the records its references point to, payloads,
 *   then activities and their keys), then the person, its claims and its count together.
 */
export interface PayloadEraser {
  /** Deletes objects of the payloads bucket; absent ones are no error. */
  erase(keys: string[]): Promise<void>;
}

export interface LifecycleTables {
  people: string;
  organizations: string;
  activities?: string;
  requests: string;
  emails?: string;
}

const MAX_ATTEMPTS = 10;
const CONCURRENCY = 8;

/** Runs `attempt` until it settles (a value), re-reading after each lost race. */
export async function untilSettled<T>(
  what: string,
  attempt: () => Promise<T | 'again'>,
): Promise<T> {
  for (let round = 0; round < MAX_ATTEMPTS; round += 1) {
    if (round > 0) {
      const wait = backoffMs(round, 10, 500);
      if (!canWait(wait)) break;
      await sleep(wait);
    }
    const result = await attempt();
    if (result !== 'again') return result;
  }
  throw new ServiceUnavailableError(`${what} kept changing concurrently; try again shortly`);
}

/** The condition that a map entry still holds what was read (or is still absent). */
function holds(x: ExpressionBuilder, path: string, value: unknown): string {
  return value === undefined ? `attribute_not_exists(${path})` : `${path} = ${x.value(value)}`;
}

export async function auditPut(
  db: DynamoDBDocumentClient,
  table: string,
  instanceId: string,
  entry: AuditEntry,
): Promise<void> {
  await db.send(
    new PutCommand({
      TableName: table,
      Item: { pk: `${instanceId}#AUDIT`, sk: `${entry.at}#${randomUUID()}`, ...entry },
    }),
  );
}

export class DynamoPeopleLifecycleStore implements LifecycleStore {
  /** Where tag count changes too many for a transaction are applied from (`tag-store.ts`). */
  private readonly tags: DynamoTagStore;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: LifecycleTables,
    private readonly payloads?: PayloadEraser,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.tags = new DynamoTagStore(db, tables.people, new TransactionBatcher(db));
  }

  async states(instanceId: string, ids: string[]) {
    const items = await batchGet(
      this.db,
      this.tables.people,
      ids.map((id) => personKey(instanceId, id)),
      true,
    );
    return new Map<string, RecordState>(
      items.map((item) => [String(item.id), item.archived_at ? 'archived' : 'active']),
    );
  }

  private async read(instanceId: string, id: string): Promise<Person | undefined> {
    const item = await this.readItem(instanceId, id);
    return item ? personFromItem(item) : undefined;
  }

  private async readItem(instanceId: string, id: string) {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tables.people,
        Key: personKey(instanceId, id),
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  /** The person's update: its index keys, conditioned on the state and values it relied on. */
  private personUpdate(
    instanceId: string,
    person: Person,
    archived: boolean,
    set: (x: ExpressionBuilder) => string[],
    remove: string[],
    organization: string | undefined,
  ): TransactItem {
    const x = new ExpressionBuilder();
    const permission = `${x.name('fields')}.${x.name(EMAIL_PERMISSION)}`;
    const sets = set(x);
    const conditions = [
      `attribute_exists(${x.name('pk')})`,
      // The tag counts it moves are those of the person as read (`tag-counts.ts`).
      person.version === undefined
        ? `attribute_not_exists(${x.name('version')})`
        : `${x.name('version')} = ${x.value(person.version)}`,
      archived
        ? `attribute_exists(${x.name('archived_at')})`
        : `attribute_not_exists(${x.name('archived_at')})`,
      holds(x, permission, person.fields[EMAIL_PERMISSION]),
      holds(x, x.name('organization_id'), organization),
    ];
    return {
      Update: {
        TableName: this.tables.people,
        Key: personKey(instanceId, person.id),
        UpdateExpression:
          `SET ${sets.join(', ')} ADD ${x.name('version')} ${x.value(1)}` +
          (remove.length > 0 ? ` REMOVE ${remove.map((name) => x.name(name)).join(', ')}` : ''),
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: x.names,
        ExpressionAttributeValues: x.values,
      },
    };
  }

  /** The tag counts a person archived (`counted` false) or restored (true) moves. */
  private tagCounts(instanceId: string, person: Person, counted: boolean) {
    const before = holderOf(person);
    return directTagCountWrites(
      this.tables.people,
      instanceId,
      tagCountDeltas(before, withCounted(before, counted)),
      this.now().toISOString(),
    );
  }

  private counterUpdate(instanceId: string, deltas: Record<string, number>): TransactItem {
    const x = new ExpressionBuilder();
    const adds = Object.entries(deltas).map(([name, delta]) => `${x.name(name)} ${x.value(delta)}`);
    return {
      Update: {
        TableName: this.tables.people,
        Key: { pk: counterPk(instanceId), sk: String(randomInt(COUNTER_SHARDS)) },
        UpdateExpression: `ADD ${adds.join(', ')}`,
        ExpressionAttributeNames: x.names,
        ExpressionAttributeValues: x.values,
      },
    };
  }

  archive(instanceId: string, id: string): Promise<boolean> {
    let organizationGone = false;
    return untilSettled(`person ${id}`, async () => {
      const person = await this.read(instanceId, id);
      if (!person || person.archived_at) return false;
      const organization = person.organization_id;
      const subscribed = person.fields[EMAIL_PERMISSION] === true ? 1 : 0;
      const items: TransactItem[] = [
        this.personUpdate(
          instanceId,
          person,
          false,
          (x) => [
            `${x.name('archived_at')} = ${x.value(this.now().toISOString())}`,
            `${x.name('lpk')} = ${x.value(archivedListPk(instanceId, listShard(id)))}`,
          ],
          // Out of the search indexes (their partition keys); the sort keys stay.
          [
            ...SEARCH_INDEXES.map((index) => INDEX_ATTRIBUTES[index].partitionKey),
            ...(organizationGone ? ['organization_id'] : []),
          ],
          organization,
        ),
        this.counterUpdate(instanceId, { contacts: -1, subscribers: -subscribed, archived: 1 }),
      ];
      if (organization && !organizationGone) {
        items.push({
          Update: {
            TableName: this.tables.organizations,
            Key: organizationKey(instanceId, organization),
            UpdateExpression: 'ADD members :minus',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':minus': -1 },
          },
        });
      }
      const tagged = this.tagCounts(instanceId, person, false);
      items.push(...tagged.items);
      const codes = await this.transact(items);
      if (codes === undefined) {
        await this.tags.applyOutbox(instanceId, tagged.pending);
        return true;
      }
      // The organization no longer exists: the person leaves it as it is archived.
      if (codes[2] === 'ConditionalCheckFailed') organizationGone = true;
      return 'again';
    });
  }

  restore(instanceId: string, id: string): Promise<boolean> {
    let dropOrganization = false;
    return untilSettled(`person ${id}`, async () => {
      const person = await this.read(instanceId, id);
      if (!person?.archived_at) return false;
      const organization = person.organization_id;
      const keep = organization !== undefined && !dropOrganization;
      const subscribed = person.fields[EMAIL_PERMISSION] === true ? 1 : 0;
      const shard = listShard(id);
      const tokens = searchTokens(person.fields);
      const items: TransactItem[] = [
        this.personUpdate(
          instanceId,
          person,
          true,
          (x) => [
            `${x.name('lpk')} = ${x.value(listPk(instanceId, shard))}`,
            ...SEARCH_INDEXES.flatMap((index) => {
              const { partitionKey, sortKey } = INDEX_ATTRIBUTES[index];
              return [
                `${x.name(partitionKey)} = ${x.value(indexPk(instanceId, index, shard))}`,
                `${x.name(sortKey)} = ${x.value(indexSortKey(tokens[index], id))}`,
              ];
            }),
          ],
          ['archived_at', ...(organization !== undefined && !keep ? ['organization_id'] : [])],
          organization,
        ),
        this.counterUpdate(instanceId, { contacts: 1, subscribers: subscribed, archived: -1 }),
      ];
      if (keep) {
        // Back into its organization while it has room; else the link is dropped.
        items.push({
          Update: {
            TableName: this.tables.organizations,
            Key: organizationKey(instanceId, organization),
            UpdateExpression: 'ADD members :one',
            ConditionExpression:
              'attribute_exists(pk) AND (attribute_not_exists(members) OR members <= :room)',
            ExpressionAttributeValues: { ':one': 1, ':room': MAX_MEMBERS - 1 },
          },
        });
      }
      const tagged = this.tagCounts(instanceId, person, true);
      items.push(...tagged.items);
      const codes = await this.transact(items);
      if (codes === undefined) {
        await this.tags.applyOutbox(instanceId, tagged.pending);
        return true;
      }
      if (codes[2] === 'ConditionalCheckFailed') dropOrganization = true;
      return 'again';
    });
  }

  async erase(instanceId: string, id: string, keyFields: readonly string[]): Promise<boolean> {
    const item = await this.readItem(instanceId, id);
    const person = item ? personFromItem(item) : undefined;
    if (!person?.archived_at) return false;
    // The mark first: from now on no webhook delivery or replay sends an event naming them.
    await markErased(this.db, this.tables.requests, instanceId, id);
    // What names the person goes first: if this stops part-way, the person is still there
    // (archived) and a repeat finds the rest.
    await this.eraseNamedBy(instanceId, id, item?.origin_request);
    const released = [...claimsOf(person.fields, keyFields)];
    return untilSettled(`person ${id}`, async () => {
      const items: TransactItem[] = [
        {
          Delete: {
            TableName: this.tables.people,
            Key: personKey(instanceId, id),
            ConditionExpression: 'attribute_exists(archived_at)',
          },
        },
        ...claimWrites(this.tables.people, instanceId, id, [], released).released,
        this.counterUpdate(instanceId, { archived: -1 }),
      ];
      const codes = await this.transact(items);
      if (codes === undefined) return true;
      if (codes[0] === 'ConditionalCheckFailed') return false; // restored or erased meanwhile
      // A claim someone else holds (two people shared the value before it became a key).
      const taken = new Set(released.filter((_, i) => codes[1 + i] === 'ConditionalCheckFailed'));
      for (const claim of taken) released.splice(released.indexOf(claim), 1);
      return 'again';
    });
  }

  /**
   * Everything that names the person but the person: sent emails (with their previews, their
   * places in the instance's log and their rendered payloads), then the timeline and the dedup items of its activities' keys, and the
   * idempotency answers and asynchronous requests (with their ledgers and payloads) that
   * name them. Kept records are found through the person's references, and the queued
   * requests that created the person (`origin`, from its item) or recorded its activities
   * (from theirs) name it without one. The emails before the timeline is read: an email
   * event (SES, a click or an open) records an activity only while its email exists, so one
   * handled during the erasure cannot add to a timeline already read. The references last:
   * a repeat after a failure still finds what they name.
   */
  private async eraseNamedBy(instanceId: string, id: string, origin: unknown) {
    const { requests, emails, activities } = this.tables;
    if (!emails) throw new Error('erasing people needs the emails table');
    if (!activities) throw new Error('erasing people needs the activities table');
    const emailRefs = await referencesOf(this.db, emails, instanceId, id);
    const messages = emailRefs.flatMap((ref) => {
      const [kind, name = ''] = ref.split(/#(.*)/s);
      return kind === 'M' ? [name] : [];
    });
    await this.erasePayloads(messages.map((name) => `email/${instanceId}/messages/${name}.json`));
    await batchWrite(
      this.db,
      emails,
      deletes(
        messages.flatMap((name) => [
          messageKey(instanceId, name),
          messagePreviewKey(instanceId, name),
          messageLogKey(instanceId, name),
        ]),
      ),
    );

    const timeline = await partitionKeys(this.db, activities, personKey(instanceId, id).pk, [
      'key',
      'origin_request',
    ]);
    const requestRefs = await referencesOf(this.db, requests, instanceId, id);
    const origins = [origin, ...timeline.map((item) => item.origin_request)].flatMap((name) =>
      typeof name === 'string' ? [`REQ#${name}`] : [],
    );
    const requestKeys: Key[] = [];
    const payloads: string[] = [];
    await runBounded([...new Set([...requestRefs, ...origins])], CONCURRENCY, async (ref) => {
      const [kind, name = ''] = ref.split(/#(.*)/s);
      if (kind === 'IDEM') requestKeys.push(idempotencyKey(instanceId, name));
      else if (kind === 'REQ') {
        const items = await partitionKeys(this.db, requests, requestPk(instanceId, name));
        requestKeys.push(...items.map((item) => ({ pk: item.pk, sk: item.sk })));
        payloads.push(`ingest/${instanceId}/${name}.json`);
      }
    }).then(({ failure }) => {
      if (failure) throw failure.error;
    });
    await this.erasePayloads(payloads);
    await batchWrite(this.db, requests, deletes(requestKeys));

    const keyItems = timeline
      .filter((item) => typeof item.key === 'string')
      .map((item) => ({ pk: `${instanceId}#KEY#${String(item.key)}`, sk: 'KEY' }));
    await batchWrite(
      this.db,
      activities,
      deletes([...timeline.map((item) => ({ pk: item.pk, sk: item.sk })), ...keyItems]),
    );

    const pk = referencePk(instanceId, id);
    await batchWrite(this.db, requests, deletes(requestRefs.map((sk) => ({ pk, sk }))));
    await batchWrite(this.db, emails, deletes(emailRefs.map((sk) => ({ pk, sk }))));
  }

  private async erasePayloads(keys: string[]) {
    if (keys.length === 0) return;
    if (!this.payloads) throw new Error('erasing people needs the payloads bucket');
    await this.payloads.erase(keys);
  }

  /** Undefined when the transaction went through, else its cancellation codes. */
  private async transact(items: TransactItem[]): Promise<(string | undefined)[] | undefined> {
    try {
      await this.db.send(new TransactWriteCommand({ TransactItems: items }));
      return undefined;
    } catch (error) {
      const codes = cancellationCodes(error);
      if (!codes?.includes('ConditionalCheckFailed')) throw error;
      return codes;
    }
  }

  async totals(instanceId: string) {
    const counters = await sumCounters(this.db, this.tables.people, counterPk(instanceId));
    return { active: counters.contacts ?? 0, archived: counters.archived ?? 0 };
  }

  page(instanceId: string, state: RecordState, position: JobPosition, count: number) {
    return listingPage(
      this.db,
      this.tables.people,
      (shard) =>
        state === 'active' ? listPk(instanceId, shard) : archivedListPk(instanceId, shard),
      LIST_SHARDS,
      position,
      count,
    );
  }

  audit(instanceId: string, entry: AuditEntry) {
    return auditPut(this.db, this.tables.requests, instanceId, entry);
  }
}

/** The next IDs of a sharded `list` index after a position: one shard after the other. */
export async function listingPage(
  db: DynamoDBDocumentClient,
  table: string,
  partition: (shard: number) => string,
  shards: number,
  position: JobPosition,
  count: number,
): Promise<{ ids: string[]; next?: JobPosition }> {
  for (let shard = position.shard; shard < shards; shard += 1) {
    const after = shard === position.shard ? position.after : undefined;
    const items = await queryShard(
      db,
      {
        table,
        index: 'list',
        partitionKey: 'lpk',
        sortKey: 'lsk',
        partition,
        order: 'asc',
        ...(after === undefined ? {} : { after }),
        count,
      },
      shard,
    );
    const ids = items.map((item) => String(item.lsk));
    const last = ids.at(-1);
    if (ids.length === count && last !== undefined) return { ids, next: { shard, after: last } };
    if (ids.length > 0) {
      return { ids, ...(shard + 1 < shards ? { next: { shard: shard + 1 } } : {}) };
    }
  }
  return { ids: [] };
}
