import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import { DynamoMembershipStore } from '../../shared/adapters/audience-membership-store.js';
import { DynamoAudienceBuilds, DynamoAudienceStore } from '../../shared/adapters/audience-store.js';
import { FaultInjector, VersionHistory } from '../../shared/adapters/dynamo-faults.js';
import { personItem } from '../../shared/adapters/people-store.js';
import { liveAudience, newBuild, type Audience } from '../../shared/domain/audiences/audience.js';
import { evaluatePerson } from '../../shared/domain/audiences/evaluate.js';
import { ServiceUnavailableError } from '../../shared/domain/errors.js';
import { FieldCatalog } from '../../shared/domain/fields/field-catalog.js';
import { newId } from '../../shared/domain/ids.js';
import { tableName } from '../../shared/resources.js';
import { testAudience } from '../unit/fixtures.js';
import { createKeyedTable, stackDb } from './stack.js';

/**
 * The audience worker's one step (`evaluatePerson` with the membership store) against the
 * test stack's DynamoDB Local, many people at once as a stream batch evaluates them, through
 * a client that meets injected transaction conflicts and throttling: a build counts each
 * person exactly once whatever is repeated, with the membership counters exact, and an
 * erased person leaves no membership, only the builds it was counted in, expiring.
 *
 * The people are in a table of this file's own, without a stream: in the stack's people
 * table, the stack's audience worker would evaluate each erasure too, for an instance it has
 * no audience of, and so remove the membership as one of a deleted audience (without its
 * count) before or after this file's evaluation, as the stream's timing falls.
 */
const { db: plain, base } = stackDb();
const tables = {
  people: `audeval-people-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
  audiences: tableName('default', 'audiences'),
  activities: tableName('default', 'activities'),
};

beforeAll(async () => {
  await createKeyedTable(base, tables.people, { stream: false });
  for (const deadline = Date.now() + 30_000; ;) {
    const { Table } = await base.send(new DescribeTableCommand({ TableName: tables.people }));
    if (Table?.TableStatus === 'ACTIVE') break;
    if (Date.now() > deadline) throw new Error(`${tables.people} is not active`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}, 60_000);

afterAll(async () => {
  await base.send(new DeleteTableCommand({ TableName: tables.people }));
});

function faultyStore() {
  const base = createDynamoDbClient();
  const db = createDocumentClient(base, '');
  const injector = new FaultInjector(
    { conflict: 0.3, throttle: 0.1, stale: 0, windowMs: 5000 },
    Math.random,
    Date.now,
    new VersionHistory(),
  ).install(base);
  return { store: new DynamoMembershipStore(db, tables), injector };
}

function audienceOf(version: number): Audience {
  const at = new Date().toISOString();
  return testAudience(
    newId(),
    { $and: [{ '$str::is': { field_id: 'str::last', value: 'In' } }] },
    { name: 'Evaluation', created: at, edited_at: at, version, build: newBuild(version, at) },
  );
}

async function putPerson(instanceId: string, id: string, last: string) {
  const at = new Date().toISOString();
  await plain.send(
    new PutCommand({
      TableName: tables.people,
      Item: personItem(instanceId, {
        id,
        fields: { 'str::email': `${id}@eval.test`, 'str::last': last, 'bol::p': true },
        tags: [],
        created_at: at,
        updated_at: at,
      }),
    }),
  );
}

async function audienceItem(instanceId: string, personId: string, sk: string) {
  const { Item } = await plain.send(
    new GetCommand({
      TableName: tables.audiences,
      Key: { pk: `${instanceId}#P#${personId}`, sk },
      ConsistentRead: true,
    }),
  );
  return Item as Record<string, unknown> | undefined;
}

describe('audience evaluation against the store', () => {
  it('counts each person of a build once and the members exactly, under conflicts and repeats', async () => {
    const instanceId = `audeval-${Date.now().toString(36)}`;
    const audience = audienceOf(2);
    const live = [liveAudience(audience, { fields: FieldCatalog.forPerson([]) })];
    const ids = Array.from({ length: 30 }, () => newId());
    await Promise.all(ids.map((id, i) => putPerson(instanceId, id, i < 10 ? 'In' : 'Out')));
    // One person erased before the build reaches them: counted once all the same.
    const erased = ids[29] ?? '';
    await plain.send(
      new DeleteCommand({
        TableName: tables.people,
        Key: { pk: `${instanceId}#P#${erased}`, sk: 'P' },
      }),
    );
    const builds = [{ audienceId: audience.id, version: 2 }];
    const { store, injector } = faultyStore();
    // Every person twice at once, and once more: as a stream delivers a batch again. A store
    // that stays unavailable through every retry (a starved LocalStack gave no answer in 5 s)
    // throws, and the stream hands that change over again, as here.
    const delivered = async (id: string, of = builds, attempts = 5): Promise<void> => {
      try {
        await evaluatePerson(instanceId, id, live, of, store);
      } catch (error) {
        if (!(error instanceof ServiceUnavailableError) || attempts === 1) throw error;
        await delivered(id, of, attempts - 1);
      }
    };
    const evaluateAll = () => Promise.all(ids.map((id) => delivered(id)));
    await Promise.all([evaluateAll(), evaluateAll()]);
    await evaluateAll();
    expect(injector.counts.conflicts + injector.counts.throttled).toBeGreaterThan(0);

    const counters = await new DynamoAudienceStore(plain, {
      config: tableName('default', 'config'),
      audiences: tables.audiences,
    }).counters(instanceId, [audience], Date.now());
    expect(counters.get(audience.id)).toMatchObject({
      evaluated: 30,
      members: 10,
      subscribers: 10,
      sms_opted_in: 0,
    });
    const members = await Promise.all(
      ids.slice(0, 10).map((id) => audienceItem(instanceId, id, `A#${audience.id}`)),
    );
    expect(members.map((item) => item?.member)).toEqual(Array.from({ length: 10 }, () => true));
    const states = await Promise.all(ids.map((id) => audienceItem(instanceId, id, 'S')));
    expect(states.map((state) => state?.[`b_${audience.id}`])).toEqual(
      Array.from({ length: 30 }, () => 2),
    );
    expect(states.map((state) => state?.expires_at !== undefined)).toEqual(
      Array.from({ length: 30 }, (_, i) => i === 29),
    );

    // A member erased after the build: its membership and its count as a member go.
    const gone = ids[0] ?? '';
    await plain.send(
      new DeleteCommand({
        TableName: tables.people,
        Key: { pk: `${instanceId}#P#${gone}`, sk: 'P' },
      }),
    );
    await delivered(gone, []);
    expect(await audienceItem(instanceId, gone, `A#${audience.id}`)).toBeUndefined();
    expect(await audienceItem(instanceId, gone, 'S')).toEqual({
      pk: `${instanceId}#P#${gone}`,
      sk: 'S',
      [`b_${audience.id}`]: 2,
      expires_at: expect.any(Number) as unknown,
    });
    const after = await new DynamoAudienceStore(plain, {
      config: tableName('default', 'config'),
      audiences: tables.audiences,
    }).counters(instanceId, [audience], Date.now());
    expect(after.get(audience.id)).toMatchObject({ evaluated: 30, members: 9, subscribers: 9 });
  }, 120_000);

  it("reads a build's page: each person's membership of the audience and the person", async () => {
    const instanceId = `inst-read-${newId()}`;
    const store = new DynamoMembershipStore(plain, tables);
    const audience = audienceOf(1);
    const live = [liveAudience(audience, { fields: FieldCatalog.forPerson([]) })];
    const member = newId();
    const other = newId();
    const erased = newId();
    await putPerson(instanceId, member, 'In');
    await putPerson(instanceId, other, 'Out');
    await evaluatePerson(instanceId, member, live, [], store);
    const read = await store.readForBuild(instanceId, [member, other, erased], audience.id);
    expect([...read.keys()]).toEqual([member, other, erased]);
    expect(read.get(member)).toEqual({
      membership: expect.objectContaining({ audience_id: audience.id, member: true, rev: 1 }),
      person: expect.objectContaining({
        id: member,
        fields: expect.objectContaining({ 'str::last': 'In' }),
      }),
    });
    expect(read.get(other)).toEqual({
      person: expect.objectContaining({ id: other }),
    });
    expect(read.get(erased)).toEqual({});
  });

  it('leaves a build where its pages moved it when the audience is renamed meanwhile', async () => {
    const instanceId = `inst-rename-${newId()}`;
    const store = new DynamoAudienceBuilds(plain, {
      config: tableName('default', 'config'),
      audiences: tables.audiences,
    });
    const audience = audienceOf(1);
    await store.create(instanceId, audience);
    const read = await store.get(instanceId, audience.id);
    // A page of the build moves it after the rename's read, before the rename's write.
    expect(await store.advanceBuild(instanceId, audience, 0, '', 'f'.repeat(24), 500, 450)).toBe(
      true,
    );
    const renamed = { ...audience, name: 'Renamed', edited_at: new Date().toISOString() };
    delete (renamed as Partial<Audience>).exit_filter;
    await store.update(instanceId, renamed, read ?? audience);
    const after = await store.get(instanceId, audience.id);
    expect(after).toMatchObject({ name: 'Renamed', version: 1 });
    expect(after?.build).toMatchObject({ queued: 500, decided: 450 });
    expect(after?.build.cursors['0']).toBe('f'.repeat(24));

    // A new filter starts a new build: the old one's progress goes with it.
    const rebuilt: Audience = {
      ...(after ?? audience),
      filter: { $and: [{ '$str::is': { field_id: 'str::last', value: 'Other' } }] },
      exit_filter: { $and: [{ '$str::is': { field_id: 'str::last', value: 'Gone' } }] },
      version: 2,
      build: newBuild(2, new Date().toISOString()),
      edited_at: new Date(Date.now() + 1).toISOString(),
    };
    await store.update(instanceId, rebuilt, after ?? audience);
    const again = await store.get(instanceId, audience.id);
    expect(again).toMatchObject({ version: 2, exit_filter: rebuilt.exit_filter });
    expect(again?.build).toEqual(rebuilt.build);
    // And an exit filter taken away is gone from the stored definition.
    const { exit_filter: _exit, ...withoutExit } = again ?? rebuilt;
    await store.update(
      instanceId,
      { ...withoutExit, edited_at: new Date(Date.now() + 2).toISOString() },
      again ?? rebuilt,
    );
    expect((await store.get(instanceId, audience.id))?.exit_filter).toBeUndefined();
    await expect(
      store.update(instanceId, { ...withoutExit, name: 'Late' }, again ?? rebuilt),
    ).rejects.toThrow('changed by another request meanwhile');
  });
});
