import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ORGANIZATION_SHARDS, organizationKey } from './organization-store.js';
import { batchGet, sumCounters, type Item } from './dynamo-helpers.js';
import { archivedListPk, counterPk, LIST_SHARDS, listPk } from './people-store.js';
import { queryShard } from './sharded-index.js';

/**
 * `npm run admin -- repair counts`: recomputes an instance's counters from its data and
 * corrects the drift: contacts and subscribers (people table), organizations, and each
 * organization's member count. Counters are sharded and kept by the writes themselves; they
 * drift only when a request dies between two of its writes (room reserved in an
 * organization and never used, say).
 *
 * A correction adds the difference to one shard, so writes made meanwhile are never lost;
 * it is only made if the counter held still while the data was counted (read before and
 * after), else the count runs again.
 */
export interface CountDrift {
  counter: string;
  counted: number;
  was: number;
}

export interface RepairReport {
  instance: string;
  people: number;
  organizations: number;
  /** Counters that were wrong, and what they said. */
  fixed: CountDrift[];
}

const ATTEMPTS = 5;

async function allKeys(
  db: DynamoDBDocumentClient,
  table: string,
  partition: (shard: number) => string,
  shards: number,
): Promise<string[]> {
  const perShard = await Promise.all(
    Array.from({ length: shards }, (_, shard) =>
      queryShard(
        db,
        {
          table,
          index: 'list',
          partitionKey: 'lpk',
          sortKey: 'lsk',
          partition,
          order: 'asc',
          count: Number.POSITIVE_INFINITY,
        },
        shard,
      ),
    ),
  );
  return perShard.flat().map((item) => String(item.lsk));
}

interface Tables {
  people: string;
  organizations: string;
}

/** What the data says: people, subscribers, organizations and each one's members. */
async function count(db: DynamoDBDocumentClient, tables: Tables, instanceId: string) {
  const peopleIds = await allKeys(db, tables.people, (n) => listPk(instanceId, n), LIST_SHARDS);
  let subscribers = 0;
  const members = new Map<string, number>();
  for (let start = 0; start < peopleIds.length; start += 100) {
    const items = await batchGet(
      db,
      tables.people,
      peopleIds.slice(start, start + 100).map((id) => ({ pk: `${instanceId}#P#${id}`, sk: 'P' })),
      true,
    );
    for (const item of items) {
      const fields = (item.fields ?? {}) as Record<string, unknown>;
      if (fields['bol::p'] === true) subscribers += 1;
      if (typeof item.organization_id === 'string') {
        members.set(item.organization_id, (members.get(item.organization_id) ?? 0) + 1);
      }
    }
  }
  const organizationIds = await allKeys(
    db,
    tables.organizations,
    (n) => `${instanceId}#L#${n}`,
    ORGANIZATION_SHARDS,
  );
  // Archived records sit in partitions of their own of the same index (`<inst>#X#<n>`).
  const [archivedPeople, archivedOrganizations] = await Promise.all([
    allKeys(db, tables.people, (n) => archivedListPk(instanceId, n), LIST_SHARDS),
    allKeys(db, tables.organizations, (n) => `${instanceId}#X#${n}`, ORGANIZATION_SHARDS),
  ]);
  return {
    people: peopleIds.length,
    subscribers,
    organizationIds,
    members,
    archivedPeople: archivedPeople.length,
    archivedOrganizations: archivedOrganizations.length,
  };
}

async function counters(db: DynamoDBDocumentClient, tables: Tables, instanceId: string) {
  const [people, organizations] = await Promise.all([
    sumCounters(db, tables.people, counterPk(instanceId)),
    sumCounters(db, tables.organizations, counterPk(instanceId)),
  ]);
  return {
    contacts: people.contacts ?? 0,
    subscribers: people.subscribers ?? 0,
    organizations: organizations.organizations ?? 0,
    archivedPeople: people.archived ?? 0,
    archivedOrganizations: organizations.archived ?? 0,
  };
}

async function memberCounts(
  db: DynamoDBDocumentClient,
  table: string,
  instanceId: string,
  ids: string[],
) {
  const counts = new Map<string, number>();
  for (let start = 0; start < ids.length; start += 100) {
    const items: Item[] = await batchGet(
      db,
      table,
      ids.slice(start, start + 100).map((id) => organizationKey(instanceId, id)),
      true,
    );
    for (const item of items) counts.set(String(item.id), Number(item.members ?? 0));
  }
  return counts;
}

async function add(
  db: DynamoDBDocumentClient,
  table: string,
  pk: string,
  attribute: string,
  delta: number,
) {
  await db.send(
    new UpdateCommand({
      TableName: table,
      Key: { pk, sk: '0' },
      UpdateExpression: 'ADD #a :d',
      ExpressionAttributeNames: { '#a': attribute },
      ExpressionAttributeValues: { ':d': delta },
    }),
  );
}

/**
 * One count with the counters read before and after it; `undefined` when a write changed a
 * counter meanwhile (every write that changes what is counted also changes a counter, in
 * the same transaction).
 */
async function snapshot(db: DynamoDBDocumentClient, tables: Tables, instanceId: string) {
  const before = await counters(db, tables, instanceId);
  const organizationsBefore = await allKeys(
    db,
    tables.organizations,
    (n) => `${instanceId}#L#${n}`,
    ORGANIZATION_SHARDS,
  );
  const membersBefore = await memberCounts(
    db,
    tables.organizations,
    instanceId,
    organizationsBefore,
  );
  const counted = await count(db, tables, instanceId);
  const after = await counters(db, tables, instanceId);
  const membersAfter = await memberCounts(
    db,
    tables.organizations,
    instanceId,
    counted.organizationIds,
  );
  const stable =
    JSON.stringify(before) === JSON.stringify(after) &&
    JSON.stringify([...membersBefore].sort()) === JSON.stringify([...membersAfter].sort());
  return stable ? { counters: after, counted, members: membersAfter } : undefined;
}

const fingerprint = (taken: Awaited<ReturnType<typeof snapshot>>) =>
  JSON.stringify(
    taken && {
      counters: taken.counters,
      people: taken.counted.people,
      subscribers: taken.counted.subscribers,
      archived: [taken.counted.archivedPeople, taken.counted.archivedOrganizations],
      organizations: [...taken.counted.organizationIds].sort(),
      counted: [...taken.counted.members].sort(),
      members: [...taken.members].sort(),
    },
  );

/**
 * People and organizations are found through the `list` indexes, which DynamoDB keeps
 * eventually consistent: a record written a moment ago may be counted by its counter and not
 * yet by the index. So the data is counted twice, `settleMs` apart, and drift is corrected
 * only when both counts agree (run it when writes are quiet; it counts again otherwise).
 */
export async function repairCounts(
  db: DynamoDBDocumentClient,
  tables: Tables,
  instanceId: string,
  settleMs = 2_000,
): Promise<RepairReport> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const first = await snapshot(db, tables, instanceId);
    if (!first) continue;
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    const second = await snapshot(db, tables, instanceId);
    if (!second || fingerprint(first) !== fingerprint(second)) continue;
    const { counters: after, counted, members: membersAfter } = second;
    const fixed: CountDrift[] = [];
    const people = tables.people;
    const check = async (
      counter: string,
      actual: number,
      was: number,
      fix: () => Promise<void>,
    ) => {
      if (actual === was) return;
      await fix();
      fixed.push({ counter, counted: actual, was });
    };
    await check('contacts', counted.people, after.contacts, () =>
      add(db, people, counterPk(instanceId), 'contacts', counted.people - after.contacts),
    );
    await check('subscribers', counted.subscribers, after.subscribers, () =>
      add(
        db,
        people,
        counterPk(instanceId),
        'subscribers',
        counted.subscribers - after.subscribers,
      ),
    );
    await check('organizations', counted.organizationIds.length, after.organizations, () =>
      add(
        db,
        tables.organizations,
        counterPk(instanceId),
        'organizations',
        counted.organizationIds.length - after.organizations,
      ),
    );
    await check('archived people', counted.archivedPeople, after.archivedPeople, () =>
      add(
        db,
        people,
        counterPk(instanceId),
        'archived',
        counted.archivedPeople - after.archivedPeople,
      ),
    );
    await check(
      'archived organizations',
      counted.archivedOrganizations,
      after.archivedOrganizations,
      () =>
        add(
          db,
          tables.organizations,
          counterPk(instanceId),
          'archived',
          counted.archivedOrganizations - after.archivedOrganizations,
        ),
    );
    for (const organizationId of counted.organizationIds) {
      const actual = counted.members.get(organizationId) ?? 0;
      const was = membersAfter.get(organizationId) ?? 0;
      await check(`members of ${organizationId}`, actual, was, async () => {
        await db.send(
          new UpdateCommand({
            TableName: tables.organizations,
            Key: organizationKey(instanceId, organizationId),
            UpdateExpression: 'SET members = :actual',
            // Only if nobody changed it since it was read (else the next run corrects it).
            ConditionExpression: 'members = :was OR attribute_not_exists(members)',
            ExpressionAttributeValues: { ':actual': actual, ':was': was },
          }),
        );
      });
    }
    return {
      instance: instanceId,
      people: counted.people,
      organizations: counted.organizationIds.length,
      fixed,
    };
  }
  throw new Error(
    `the counters of ${instanceId} kept changing while they were counted; run repair again when writes are quieter`,
  );
}
