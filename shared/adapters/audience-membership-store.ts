import { randomInt } from 'node:crypto';
import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import {
  MembershipConflictError,
  type Decision,
  type Membership,
  type MembershipChange,
} from '../domain/audiences/membership.js';
import type { ActivityToWrite } from '../domain/activities/record-activities.js';
import type { Person } from '../domain/people/person.js';
import { slicesOf } from '../lib/bounded.js';
import { activityItem } from './activity-store.js';
import {
  AUDIENCE_COUNTER_SHARDS,
  counterShard,
  countersPk,
  dayOf,
  entryShard,
  evaluatedAttribute,
} from './audience-store.js';
import {
  batchGet,
  batchWrite,
  cancellationCodes,
  queryPartition,
  type Item,
} from './dynamo-helpers.js';
import { LIST_SHARDS, listShard, personFromItem } from './people-store.js';
import { shardedPage } from './sharded-index.js';
import type { TransactItem } from './record-writes.js';
import { TransactionBatcher, type TransactionPart } from './transaction-batcher.js';

/**
 * Who belongs to which audience (the audiences table, docs/data-model.md):
 * - `<inst>#P#<person>` / `A#<audience>`: a membership (`membership.ts`), with the members
 *   index keys `apk` = `<inst>#AM#<audience>#<shard>`, `ask` = the person while a member;
 * - `<inst>#P#<person>` / `S`: the person's audience state: the day of its next time-driven
 *   re-evaluation (`recheck_day`), and the builds it was counted in (`b_<audience>`);
 * - `<inst>#RC#<day>#<shard>` / `<person>`: re-evaluate the person on that day (the daily job).
 * And, in the people table, `<inst>#P#<person>` / `E`: a request to evaluate the person
 * (its change reaches the audience worker through the people table's stream, in order with
 * the person's own changes): `b_<audience>` the build that asks, `recheck` the daily job.
 *
 * Only the audience worker decides memberships; the subscribe endpoint changes a member's
 * preferences. Both write a membership on condition of the revision they read.
 */
const CountedSchema = z.object({
  members: z.union([z.literal(0), z.literal(1)]),
  subscribers: z.union([z.literal(0), z.literal(1)]),
  sms_opted_in: z.union([z.literal(0), z.literal(1)]),
});

const MembershipItem = z.object({
  audience_id: z.string(),
  member: z.boolean(),
  member_from: z.string().optional(),
  left_at: z.string().optional(),
  subscribed: z.boolean(),
  subscribed_from: z.string().optional(),
  sms_opted_in: z.boolean(),
  sms_opted_in_from: z.string().optional(),
  counted: CountedSchema,
  rev: z.number(),
});

function membershipOf(item: Item): Membership {
  const parsed = MembershipItem.parse(item);
  const membership: Membership = {
    audience_id: parsed.audience_id,
    member: parsed.member,
    subscribed: parsed.subscribed,
    sms_opted_in: parsed.sms_opted_in,
    counted: parsed.counted,
    rev: parsed.rev,
  };
  for (const key of ['member_from', 'left_at', 'subscribed_from', 'sms_opted_in_from'] as const) {
    const value = parsed[key];
    if (value !== undefined) membership[key] = value;
  }
  return membership;
}

/** The person's audience state (`S`). */
export interface AudienceState {
  recheck_day?: string;
  /** The build version of each audience the person was counted in. */
  built: Record<string, number>;
  exists: boolean;
}

const personPk = (instanceId: string, personId: string) => `${instanceId}#P#${personId}`;
/** The person of a `<inst>#P#<person>` key. */
const personOf = (pk: string) => pk.slice(pk.lastIndexOf('#') + 1);
const membersPk = (instanceId: string, audienceId: string, shard: number) =>
  `${instanceId}#AM#${audienceId}#${shard}`;
const recheckPk = (instanceId: string, day: string, shard: number) =>
  `${instanceId}#RC#${day}#${shard}`;

/** Entry counts and recheck markers outlive their use by a little, then expire. */
const DAY_S = 86_400;
const expiresAfterDays = (day: string, days: number) =>
  Math.floor(Date.parse(`${day}T00:00:00Z`) / 1000) + days * DAY_S;

export interface AudienceTables {
  audiences: string;
  /** Absent in functions without a grant on them (they only read memberships). */
  people?: string | undefined;
  activities?: string | undefined;
}

function granted(table: string | undefined, name: string): string {
  if (table === undefined) throw new Error(`This function has no grant on the ${name} table`);
  return table;
}

export class DynamoMembershipStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: AudienceTables,
    private readonly batcher = new TransactionBatcher(db),
  ) {}

  /** The person as it is now (strongly consistent), or undefined once erased. */
  async person(instanceId: string, personId: string): Promise<Person | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: granted(this.tables.people, 'people'),
        Key: { pk: personPk(instanceId, personId), sk: 'P' },
        ConsistentRead: true,
      }),
    );
    return Item ? personFromItem(Item) : undefined;
  }

  /**
   * For a build's page: each person's membership of one audience (read first) and the person
   * (read after it), both strongly consistent, 100 people to a pair of calls, all at once.
   */
  async readForBuild(
    instanceId: string,
    personIds: readonly string[],
    audienceId: string,
  ): Promise<Map<string, { membership?: Membership; person?: Person }>> {
    const read = new Map<string, { membership?: Membership; person?: Person }>(
      personIds.map((personId) => [personId, {}]),
    );
    await Promise.all(
      slicesOf(personIds, 100).map(async (chunk) => {
        const memberships = await batchGet(
          this.db,
          this.tables.audiences,
          chunk.map((personId) => ({ pk: personPk(instanceId, personId), sk: `A#${audienceId}` })),
          true,
        );
        for (const item of memberships) {
          const entry = read.get(personOf(String(item.pk)));
          if (entry) entry.membership = membershipOf(item);
        }
        const people = await batchGet(
          this.db,
          granted(this.tables.people, 'people'),
          chunk.map((personId) => ({ pk: personPk(instanceId, personId), sk: 'P' })),
          true,
        );
        for (const item of people) {
          const entry = read.get(personOf(String(item.pk)));
          if (entry) entry.person = personFromItem(item);
        }
      }),
    );
    return read;
  }

  /** The person's memberships and audience state, strongly consistent. */
  async read(
    instanceId: string,
    personId: string,
  ): Promise<{ memberships: Map<string, Membership>; state: AudienceState }> {
    const memberships = new Map<string, Membership>();
    const state: AudienceState = { built: {}, exists: false };
    const items = await queryPartition(
      this.db,
      this.tables.audiences,
      personPk(instanceId, personId),
    );
    for (const item of items) {
      if (item.sk === 'S') {
        state.exists = true;
        if (typeof item.recheck_day === 'string') state.recheck_day = item.recheck_day;
        for (const [name, value] of Object.entries(item)) {
          if (name.startsWith('b_') && typeof value === 'number')
            state.built[name.slice(2)] = value;
        }
      } else if (String(item.sk).startsWith('A#')) {
        const membership = membershipOf(item);
        memberships.set(membership.audience_id, membership);
      }
    }
    return { memberships, state };
  }

  /**
   * Writes a decision: each change with its counters, its day's entry count and its activity,
   * atomically and conditioned on the revision it was decided from, and counts the person in
   * the builds that asked (`counting`), atomically with the first change (or alone when
   * nothing changes). The writes go through the transaction batcher, so the people a stream
   * batch evaluates at once share calls (a build's people mostly need only their count).
   * `MembershipConflictError` when a membership was changed meanwhile, or when the person was
   * counted meanwhile with a change to write (decide again from a new read); a count alone
   * that finds the person counted already is done.
   */
  async apply(
    instanceId: string,
    personId: string,
    decision: Decision,
    now: number,
    counting: readonly { audienceId: string; version: number }[] = [],
  ): Promise<void> {
    const activities = new Map<string, ActivityToWrite[]>();
    for (const activity of decision.activities) {
      const audienceId = activity.attr['idt::a'];
      if (typeof audienceId !== 'string') continue;
      activities.set(audienceId, [...(activities.get(audienceId) ?? []), activity]);
    }
    const parts = decision.changes.map((change) =>
      this.changePart(instanceId, personId, change, activities.get(change.audienceId) ?? [], now),
    );
    const count = this.countPart(instanceId, personId, counting);
    const [first] = parts;
    if (count && first) {
      first.items.push(...count.items);
      first.counters = [...(first.counters ?? []), ...(count.counters ?? [])];
    }
    if (count && !first) {
      await this.batcher.write(count).catch((error: unknown) => {
        // Counted already (the same request handled twice): nothing more to count.
        if (cancellationCodes(error)?.[0] !== 'ConditionalCheckFailed') throw error;
      });
      return;
    }
    const results = await Promise.allSettled(parts.map((part) => this.batcher.write(part)));
    const failures = results.flatMap((result) =>
      result.status === 'rejected' ? [result.reason as Error] : [],
    );
    if (failures.some((error) => cancellationCodes(error)?.includes('ConditionalCheckFailed'))) {
      throw new MembershipConflictError();
    }
    const [failure] = failures;
    if (failure) throw failure;
  }

  /** Counts the person in builds once (`b_<audience>` of its state moves to the version). */
  private countPart(
    instanceId: string,
    personId: string,
    counting: readonly { audienceId: string; version: number }[],
  ): TransactionPart | undefined {
    if (counting.length === 0) return undefined;
    const names = Object.fromEntries(
      counting.map((build, i) => [`#b${i}`, `b_${build.audienceId}`]),
    );
    const values = Object.fromEntries(counting.map((build, i) => [`:v${i}`, build.version]));
    return {
      items: [
        {
          Update: {
            TableName: this.tables.audiences,
            Key: { pk: personPk(instanceId, personId), sk: 'S' },
            UpdateExpression: `SET ${counting.map((_, i) => `#b${i} = :v${i}`).join(', ')}`,
            ConditionExpression: counting
              .map((_, i) => `(attribute_not_exists(#b${i}) OR #b${i} < :v${i})`)
              .join(' AND '),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          },
        },
      ],
      counters: counting.map((build) => ({
        table: this.tables.audiences,
        pk: countersPk(instanceId, build.audienceId),
        add: { [evaluatedAttribute(build.version)]: 1 },
        shardKey: (shard: number) => ({
          pk: countersPk(instanceId, build.audienceId),
          sk: `C#${shard % AUDIENCE_COUNTER_SHARDS}`,
        }),
      })),
    };
  }

  /** A change's items and its counter additions (summed with others' by the batcher). */
  private changePart(
    instanceId: string,
    personId: string,
    change: MembershipChange,
    activities: ActivityToWrite[],
    now: number,
  ): TransactionPart {
    const items = this.changeItems(instanceId, personId, change, activities, now, false);
    const { members, subscribers, sms_opted_in } = change.delta;
    if (members === 0 && subscribers === 0 && sms_opted_in === 0) return { items };
    return {
      items,
      counters: [
        {
          table: this.tables.audiences,
          pk: countersPk(instanceId, change.audienceId),
          add: { members, subscribers, sms_opted_in },
          shardKey: (shard: number) => ({
            pk: countersPk(instanceId, change.audienceId),
            sk: `C#${shard % AUDIENCE_COUNTER_SHARDS}`,
          }),
        },
      ],
    };
  }

  private changeItems(
    instanceId: string,
    personId: string,
    change: MembershipChange,
    activities: ActivityToWrite[],
    now: number,
    withCounters = true,
  ): TransactItem[] {
    const key = { pk: personPk(instanceId, personId), sk: `A#${change.audienceId}` };
    const items: TransactItem[] = [];
    const condition = change.before
      ? {
          ConditionExpression: 'rev = :rev',
          ExpressionAttributeValues: { ':rev': change.before.rev },
        }
      : { ConditionExpression: 'attribute_not_exists(pk)' };
    if (change.after === null) {
      items.push({ Delete: { TableName: this.tables.audiences, Key: key, ...condition } });
    } else {
      const after = change.after;
      items.push({
        Put: {
          TableName: this.tables.audiences,
          Item: {
            ...key,
            ...after,
            ...(after.member
              ? {
                  apk: membersPk(instanceId, change.audienceId, listShard(personId)),
                  ask: personId,
                }
              : {}),
          },
          ...condition,
        },
      });
    }
    const { members, subscribers, sms_opted_in } = change.delta;
    if (withCounters && (members !== 0 || subscribers !== 0 || sms_opted_in !== 0)) {
      items.push({
        Update: {
          TableName: this.tables.audiences,
          Key: { pk: countersPk(instanceId, change.audienceId), sk: counterShard() },
          UpdateExpression: 'ADD members :m, subscribers :s, sms_opted_in :sms',
          ExpressionAttributeValues: { ':m': members, ':s': subscribers, ':sms': sms_opted_in },
        },
      });
    }
    if (change.entered) {
      const day = dayOf(now);
      items.push({
        Update: {
          TableName: this.tables.audiences,
          Key: { pk: countersPk(instanceId, change.audienceId), sk: entryShard(day) },
          UpdateExpression: 'ADD entered :one SET expires_at = if_not_exists(expires_at, :expires)',
          ExpressionAttributeValues: { ':one': 1, ':expires': expiresAfterDays(day, 32) },
        },
      });
    }
    for (const activity of activities) {
      items.push({
        Put: {
          TableName: granted(this.tables.activities, 'activities'),
          Item: activityItem(instanceId, activity),
        },
      });
    }
    return items;
  }

  private async transact(items: TransactItem[]): Promise<void> {
    if (items.length === 0) return;
    try {
      await this.db.send(new TransactWriteCommand({ TransactItems: items }));
    } catch (error) {
      if (cancellationCodes(error)?.includes('ConditionalCheckFailed')) {
        throw new MembershipConflictError();
      }
      throw error;
    }
  }

  /** Moves the person's next time-driven re-evaluation to another day (or none). */
  async reschedule(
    instanceId: string,
    personId: string,
    state: AudienceState,
    day: string | undefined,
  ): Promise<void> {
    if (state.recheck_day === day) return;
    const shard = listShard(personId);
    const items: TransactItem[] = [
      {
        Update: {
          TableName: this.tables.audiences,
          Key: { pk: personPk(instanceId, personId), sk: 'S' },
          UpdateExpression: day ? 'SET recheck_day = :day' : 'REMOVE recheck_day',
          ...(day ? { ExpressionAttributeValues: { ':day': day } } : {}),
        },
      },
    ];
    if (state.recheck_day) {
      items.push({
        Delete: {
          TableName: this.tables.audiences,
          Key: { pk: recheckPk(instanceId, state.recheck_day, shard), sk: personId },
        },
      });
    }
    if (day) {
      items.push({
        Put: {
          TableName: this.tables.audiences,
          Item: {
            pk: recheckPk(instanceId, day, shard),
            sk: personId,
            expires_at: expiresAfterDays(day, 7),
          },
        },
      });
    }
    await this.transact(items);
  }

  /**
   * What is left of an erased person here: its marker and evaluation item go; its audience
   * state goes too, unless it was counted in builds (`counted`): then only the builds'
   * versions stay, for a week, so that a build's request delivered again does not count the
   * person twice.
   */
  async forget(
    instanceId: string,
    personId: string,
    state: AudienceState,
    counted: boolean,
  ): Promise<void> {
    await this.reschedule(instanceId, personId, state, undefined);
    const key = { pk: personPk(instanceId, personId), sk: 'S' };
    if (counted) {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tables.audiences,
          Key: key,
          UpdateExpression: 'SET expires_at = :expires REMOVE recheck_day',
          ExpressionAttributeValues: { ':expires': expiresAfterDays(dayOf(Date.now()), 7) },
        }),
      );
    } else {
      await batchWrite(this.db, this.tables.audiences, [{ DeleteRequest: { Key: key } }]);
    }
    await batchWrite(this.db, granted(this.tables.people, 'people'), [
      { DeleteRequest: { Key: { pk: personPk(instanceId, personId), sk: 'E' } } },
    ]);
  }

  /**
   * Asks for people to be evaluated: one small write each (25 to a batch) whose change the
   * audience worker receives after every earlier change of the person.
   */
  async requestEvaluation(
    instanceId: string,
    personIds: readonly string[],
    reason: { build: { audienceId: string; version: number } } | { recheck: string },
  ): Promise<void> {
    const at = new Date().toISOString();
    const marker =
      'build' in reason
        ? { [`b_${reason.build.audienceId}`]: reason.build.version }
        : { recheck: reason.recheck };
    const writes = personIds.map((personId) => ({
      PutRequest: {
        Item: {
          pk: personPk(instanceId, personId),
          sk: 'E',
          at,
          nonce: randomInt(2 ** 31),
          ...marker,
        },
      },
    }));
    // A page's batches at once, four at a time: a page of 500 is five round trips, not twenty.
    await batchWrite(this.db, granted(this.tables.people, 'people'), writes, undefined, 4);
  }

  /** The people to re-evaluate on a day, in one shard (a page from `after`). */
  async dueForRecheck(
    instanceId: string,
    day: string,
    shard: number,
    after: string | undefined,
    count: number,
  ): Promise<{ personIds: string[]; last?: string }> {
    const { Items = [], LastEvaluatedKey } = await this.db.send(
      new QueryCommand({
        TableName: this.tables.audiences,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': recheckPk(instanceId, day, shard) },
        Limit: count,
        ...(after
          ? { ExclusiveStartKey: { pk: recheckPk(instanceId, day, shard), sk: after } }
          : {}),
      }),
    );
    const personIds = Items.map((item) => String(item.sk));
    return LastEvaluatedKey ? { personIds, last: String(LastEvaluatedKey.sk) } : { personIds };
  }

  /** A page of the people of one listing shard (the people table's `list` index), by ID. */
  async listPage(instanceId: string, shard: number, after: string | undefined, count: number) {
    const { Items = [], LastEvaluatedKey } = await this.db.send(
      new QueryCommand({
        TableName: granted(this.tables.people, 'people'),
        IndexName: 'list',
        KeyConditionExpression: after ? 'lpk = :pk AND lsk > :after' : 'lpk = :pk',
        ExpressionAttributeValues: {
          ':pk': `${instanceId}#L#${shard}`,
          ...(after ? { ':after': after } : {}),
        },
        Limit: count,
      }),
    );
    return { ids: Items.map((item) => String(item.lsk)), hasMore: LastEvaluatedKey !== undefined };
  }

  /**
   * Removes one page of a deleted audience's members (its members index shard): the
   * memberships go without their counters, which go with the audience. How many it removed.
   */
  async disposeMembers(
    instanceId: string,
    audienceId: string,
    shard: number,
    count: number,
  ): Promise<number> {
    const { Items = [] } = await this.db.send(
      new QueryCommand({
        TableName: this.tables.audiences,
        IndexName: 'members',
        KeyConditionExpression: 'apk = :pk',
        ExpressionAttributeValues: { ':pk': membersPk(instanceId, audienceId, shard) },
        Limit: count,
      }),
    );
    await batchWrite(
      this.db,
      this.tables.audiences,
      Items.map((item) => ({
        DeleteRequest: {
          Key: { pk: personPk(instanceId, String(item.ask)), sk: `A#${audienceId}` },
        },
      })),
    );
    return Items.length;
  }

  /** A page of an audience's members in person ID order (the members index, 16 shards). */
  async membersPage(
    instanceId: string,
    audienceId: string,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ) {
    return shardedPage(
      this.db,
      {
        table: this.tables.audiences,
        index: 'members',
        partitionKey: 'apk',
        sortKey: 'ask',
        partition: (shard) => membersPk(instanceId, audienceId, shard),
        order,
        ...(after === undefined ? {} : { after }),
        count,
      },
      LIST_SHARDS,
    );
  }

  /** The memberships of people (strongly consistent), by person. */
  async membershipsOf(
    instanceId: string,
    personIds: readonly string[],
  ): Promise<Map<string, Map<string, Membership>>> {
    const entries = await Promise.all(
      personIds.map(
        async (personId) =>
          [personId, (await this.read(instanceId, personId)).memberships] as const,
      ),
    );
    return new Map(entries);
  }

  /**
   * A member's preferences for the audience (the subscribe endpoint), with the counters they
   * move; conditioned on the revision read (`MembershipConflictError` otherwise).
   */
  async setPreferences(
    instanceId: string,
    personId: string,
    before: Membership,
    after: Membership,
  ): Promise<void> {
    const change: MembershipChange = {
      audienceId: before.audience_id,
      before,
      after,
      delta: {
        members: after.counted.members - before.counted.members,
        subscribers: after.counted.subscribers - before.counted.subscribers,
        sms_opted_in: after.counted.sms_opted_in - before.counted.sms_opted_in,
      },
      entered: false,
      exited: false,
    };
    await this.transact(this.changeItems(instanceId, personId, change, [], Date.now()));
  }
}
