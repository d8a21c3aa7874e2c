import { describe, expect, it } from '@jest/globals';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import { DynamoConfigStore } from '../../shared/adapters/config-store.js';
import {
  FaultInjector,
  VersionHistory,
  type FaultRates,
} from '../../shared/adapters/dynamo-faults.js';
import { OfflineGeocoder } from '../../shared/adapters/geocoders.js';
import { DynamoMembershipStore } from '../../shared/adapters/membership-store.js';
import { DynamoPeopleStore } from '../../shared/adapters/people-store.js';
import type { BatcherLimits } from '../../shared/adapters/transaction-batcher.js';
import { ServiceUnavailableError } from '../../shared/domain/errors.js';
import type { LocationServices } from '../../shared/domain/location.js';
import { addMembers, removeMembers } from '../../shared/domain/organizations/memberships.js';
import { mergePeople } from '../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../shared/domain/people/merge-request.js';
import { indexSortKey, searchTokens } from '../../shared/domain/people/person-index.js';
import { authenticate } from '../../shared/domain/tenancy.js';
import type { HttpHandler } from '../../shared/http/api-handler.js';
import { withDeadline } from '../../shared/lib/time-budget.js';
import { tableName } from '../../shared/resources.js';
import { uniqueEmail } from './people.js';
import { KEYS, call, functionContext, functionEnv, postEvent, stackDb } from './stack.js';

/**
 * The write paths against the test stack's DynamoDB Local, run in-process through clients
 * that meet injected faults at chosen rates: what DynamoDB Local never does, and what AWS
 * does. (The whole HTTP suite also runs against a stack with random faults: the project
 * integration-faults.)
 */
const { db: plain } = stackDb();
const PEOPLE = tableName('default', 'people');
const tables = {
  people: PEOPLE,
  activities: tableName('default', 'activities'),
  organizations: tableName('default', 'organizations'),
};
const location: LocationServices = {
  ipLocator: { locate: () => Promise.resolve(undefined) },
  geocoder: new OfflineGeocoder(),
  meter: { record: () => Promise.resolve() },
};

function faulty(
  rates: Partial<FaultRates>,
  random: () => number = Math.random,
  batching: Partial<BatcherLimits> = {},
  /** The injector's clock (its stale windows), the real one unless a test moves it. */
  now: () => number = Date.now,
) {
  const base = createDynamoDbClient();
  const db = createDocumentClient(base, '');
  const injector = new FaultInjector(
    { conflict: 0, throttle: 0, stale: 0, windowMs: 5000, ...rates },
    random,
    now,
    new VersionHistory(),
  ).install(base);
  return { db, injector, store: new DynamoPeopleStore(db, tables, batching) };
}

async function tenantOf(apiKey: string) {
  const directory = new DynamoConfigStore(plain, tableName('default', 'config'));
  const baseUrls = { default: 'http://d', au: 'http://a', eu: 'http://e' };
  return authenticate(apiKey, { region: 'default', baseUrls, directory });
}

async function personItem(instance: string, id: string) {
  const { Item } = await plain.send(
    new GetCommand({
      TableName: PEOPLE,
      Key: { pk: `${instance}#P#${id}`, sk: 'P' },
      ConsistentRead: true,
    }),
  );
  return Item as { fields: Record<string, unknown> } | undefined;
}

async function claimOwner(instance: string, field: string, value: string) {
  const { Item } = await plain.send(
    new GetCommand({
      TableName: PEOPLE,
      Key: { pk: `${instance}#K#${field}#${value}`, sk: 'K' },
      ConsistentRead: true,
    }),
  );
  return Item?.owner_id as string | undefined;
}

describe('merges under stale reads', () => {
  it('does not lose an update that a stale read would have made look like a no-op', async () => {
    // The injector's clock stands still: the stale window holds however slow the machine.
    const now = Date.now();
    const { db, injector, store } = faulty({ stale: 1 }, Math.random, {}, () => now);
    const tenant = await tenantOf(KEYS.safety);
    const run = (fields: Record<string, unknown>) =>
      mergePeople(PersonMergeRequest.parse({ people: [{ fields }] }), { tenant, store, location });
    const email = uniqueEmail('lost');
    const [created] = await run({ 'str::email': email, 'str::first': 'A' });
    await run({ 'str::email': email, 'str::first': 'B' });
    // An eventually consistent read now returns the person as it was: first name A.
    const key = { pk: `safety#P#${created?.person_id ?? ''}`, sk: 'P' };
    const eventual = await db.send(new GetCommand({ TableName: PEOPLE, Key: key }));
    expect((eventual.Item?.fields as Record<string, unknown> | undefined)?.['str::first']).not.toBe(
      'B',
    );
    expect(injector.counts.stale).toBe(1);
    // Merging A back must write it: the merge decides from a strongly consistent read.
    const [again] = await run({ 'str::email': email, 'str::first': 'A' });
    expect(again).toEqual({ person_id: created?.person_id, status: 'merged' });
    expect((await personItem('safety', created?.person_id ?? ''))?.fields['str::first']).toBe('A');
    expect(injector.counts.stale).toBe(1);
  });

  it('updates the person who holds the key now, not the one a stale claim names', async () => {
    // The injector's time stands still but where the test moves it: the stale window below
    // holds however long the merges take on a busy machine.
    let clock = Date.now();
    const { db, injector, store } = faulty(
      { stale: 1, windowMs: 1000 },
      Math.random,
      {},
      () => clock,
    );
    const tenant = await tenantOf(KEYS.safety);
    const run = (fields: Record<string, unknown>, mergeBy?: string[]) =>
      mergePeople(
        PersonMergeRequest.parse({
          people: [{ fields }],
          ...(mergeBy ? { merge_by: mergeBy } : {}),
        }),
        { tenant, store, location },
      );
    const e1 = uniqueEmail('moving');
    const [p1] = await run({ 'str::email': e1 });
    const claimKey = { pk: `safety#K#str::email#${e1}`, sk: 'K' };
    // The store's replicas have seen the claim held by p1 for a while...
    await db.send(new GetCommand({ TableName: PEOPLE, Key: claimKey, ConsistentRead: true }));
    clock += 1100;
    // ...then p1 gives the email up and p2 takes it.
    await run({ 'str::person_id': p1?.person_id, 'str::email': uniqueEmail('moved') }, [
      'str::person_id',
    ]);
    const [p2] = await run({ 'str::email': e1 });
    expect(p2?.status).toBe('created');
    const stale = await db.send(new GetCommand({ TableName: PEOPLE, Key: claimKey }));
    expect(stale.Item?.owner_id).toBe(p1?.person_id);

    const [merged] = await run({ 'str::email': e1, 'str::first': 'Right' });
    expect(merged).toEqual({ person_id: p2?.person_id, status: 'merged' });
    expect((await personItem('safety', p2?.person_id ?? ''))?.fields['str::first']).toBe('Right');
    expect((await personItem('safety', p1?.person_id ?? ''))?.fields['str::first']).toBeUndefined();
    expect(injector.counts.stale).toBe(1);
  });

  it('merges by ID right after the person was created', async () => {
    const now = Date.now(); // the stale window holds however slow the machine
    const { db, store } = faulty({ stale: 1 }, Math.random, {}, () => now);
    const tenant = await tenantOf(KEYS.safety);
    const [created] = await mergePeople(
      PersonMergeRequest.parse({ people: [{ fields: { 'str::email': uniqueEmail('byid') } }] }),
      { tenant, store, location },
    );
    const id = created?.person_id ?? '';
    const eventual = await db.send(
      new GetCommand({ TableName: PEOPLE, Key: { pk: `safety#P#${id}`, sk: 'P' } }),
    );
    expect(eventual.Item).toBeUndefined();
    const [byId] = await mergePeople(
      PersonMergeRequest.parse({
        merge_by: ['str::person_id'],
        people: [{ fields: { 'str::person_id': id, 'str::first': 'Found' } }],
      }),
      { tenant, store, location },
    );
    expect(byId).toEqual({ person_id: id, status: 'merged' });
  });
});

describe('merges beside a concurrent write', () => {
  it("a name change planned before another request's email change leaves the email index key", async () => {
    const tenant = await tenantOf(KEYS.safety);
    const store = new DynamoPeopleStore(plain, tables);
    const byId = (person: Record<string, unknown>, on = store) =>
      mergePeople(
        PersonMergeRequest.parse({ people: [{ fields: person }], merge_by: ['str::person_id'] }),
        { tenant, store: on, location },
      );
    const [created] = await mergePeople(
      PersonMergeRequest.parse({
        people: [
          {
            fields: { 'str::email': uniqueEmail('race'), 'str::first': 'Ann', 'str::last': 'Old' },
          },
        ],
      }),
      { tenant, store, location },
    );
    const id = created?.person_id ?? '';
    const moved = uniqueEmail('raced');
    // The name change reads the person, then the email changes before it writes.
    let raced = false;
    const racing = new Proxy(store, {
      get(target, property) {
        if (property === 'getPeople') {
          return async (...args: Parameters<DynamoPeopleStore['getPeople']>) => {
            const read = await target.getPeople(...args);
            if (!raced) {
              raced = true;
              // Another request, through a store of its own (another function's).
              await byId(
                { 'str::person_id': id, 'str::email': moved },
                new DynamoPeopleStore(plain, tables),
              );
            }
            return read;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const [renamed] = await byId({ 'str::person_id': id, 'str::last': 'New' }, racing);
    expect(raced).toBe(true);
    expect(renamed).toEqual({ person_id: id, status: 'merged' });
    const item = (await personItem('safety', id)) as
      { fields: Record<string, string>; esk?: string; fsk?: string; gsk?: string } | undefined;
    expect(item?.fields).toMatchObject({ 'str::email': moved, 'str::last': 'New' });
    // Every index key is the one the stored fields make: search finds the person by its new
    // email, and by its new name.
    const tokens = searchTokens(item?.fields ?? {});
    expect(item?.esk).toBe(indexSortKey(tokens.email, id));
    expect(item?.fsk).toBe(indexSortKey(tokens.first, id));
    expect(item?.gsk).toBe(indexSortKey(tokens.last, id));
  });
});

describe('a store that stays unavailable', () => {
  it('answers 503 with Retry-After and per-record details, having written nothing', async () => {
    // Every call on the people table is throttled; the request may retry for 1.5 s.
    functionEnv({ CDP_FAULTS: 'throttle=1,only=people', CDP_REQUEST_BUDGET_MS: '1500' });
    const { handler } = (await import('../../functions/person-merge/handler.js')) as {
      handler: HttpHandler;
    };
    const emails = [uniqueEmail('down'), uniqueEmail('down')];
    const event = postEvent(
      '/v1/person/merge',
      { people: [...emails.map((email) => ({ fields: { 'str::email': email } })), { fields: {} }] },
      KEYS.safety,
      'throttled-1',
    );
    const response = await handler(event, functionContext);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toMatch(/^\d+$/);
    const body = JSON.parse(response.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      request_id: 'throttled-1',
      code: 503,
      error: expect.stringMatching(/^The data store is overloaded or unavailable/) as unknown,
      details: [
        { index: 0, status: 'not_applied' },
        { index: 1, status: 'not_applied' },
        {
          index: 2,
          status: 'invalid',
          error: 'people[2].fields: str::email or str::ei is required',
        },
      ],
    });
    for (const email of emails)
      expect(await claimOwner('safety', 'str::email', email)).toBeUndefined();
  });

  it('reports what was applied when the store fails part-way, and writes nothing after', async () => {
    let failing = false;
    // No fault until the switch flips, then every call on the people table is throttled.
    // Three people a transaction, one transaction at a time: the failure meets the request
    // part-way through its transactions.
    const { store } = faulty({ throttle: 0.5, only: 'people' }, () => (failing ? 0 : 0.99), {
      maxItems: 10,
      maxInFlight: 1,
    });
    const tenant = await tenantOf(KEYS.safety);
    const createPerson = store.createPerson.bind(store);
    let creates = 0;
    store.createPerson = async (...args) => {
      await createPerson(...args);
      creates += 1;
      if (creates === 10) failing = true;
    };
    const emails = Array.from({ length: 60 }, () => uniqueEmail('partway'));
    // The switch, not the clock, decides where the failure comes; the budget only has to
    // outlast the first ten creates on a loaded machine.
    const error = await withDeadline(Date.now() + 5000, () =>
      mergePeople(
        PersonMergeRequest.parse({
          people: emails.map((email) => ({ fields: { 'str::email': email } })),
        }),
        { tenant, store, location },
      ),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    const details = (error as ServiceUnavailableError).details ?? [];
    expect(details).toHaveLength(60);
    const applied = details.filter((d) => d.status === 'created');
    expect(applied.length).toBeGreaterThanOrEqual(10);
    expect(applied.length + details.filter((d) => d.status === 'not_applied').length).toBe(60);
    const owners = async () =>
      Promise.all(emails.map((email) => claimOwner('safety', 'str::email', email)));
    const atAnswer = await owners();
    for (const detail of details) {
      const owner = atAnswer[detail.index ?? -1];
      if (detail.status === 'created') expect(owner).toBe(detail.person_id);
      else expect(owner).toBeUndefined();
    }
    // Nothing of the request is written after the answer.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await owners()).toEqual(atAnswer);
  });
});

describe('memberships under conflicts', () => {
  it('links and unlinks exactly the people asked for, and counts them exactly', async () => {
    const tenant = await tenantOf(KEYS.safety);
    const organization = await call('/v1/organizations/merge', {
      key: KEYS.safety,
      body: {
        merge_by: ['str:o:name'],
        organizations: [{ fields: { 'str:o:name': `Conflicted ${Date.now()}` } }],
      },
    });
    const organizationId = (organization.body.organizations as { organization_id: string }[])[0]
      ?.organization_id as string;
    const merged = await call('/v1/person/merge', {
      key: KEYS.safety,
      body: {
        people: Array.from({ length: 60 }, () => ({ fields: { 'str::email': uniqueEmail('m') } })),
      },
    });
    const ids = (merged.body.people as { person_id: string }[]).map((p) => p.person_id);
    const { db, injector } = faulty({ conflict: 0.5 });
    const memberships = new DynamoMembershipStore(db, tables);
    await addMembers({ organization_id: organizationId, inclusion_ids: ids }, tenant, memberships);
    await removeMembers(
      { organization_id: organizationId, inclusion_ids: ids.slice(0, 25) },
      tenant,
      memberships,
    );
    expect(injector.counts.conflicts).toBeGreaterThan(0);
    const linked = await Promise.all(
      ids.map(
        async (id) =>
          (
            await plain.send(
              new GetCommand({
                TableName: PEOPLE,
                Key: { pk: `safety#P#${id}`, sk: 'P' },
                ConsistentRead: true,
              }),
            )
          ).Item?.organization_id as string | undefined,
      ),
    );
    expect(linked.slice(0, 25).every((org) => org === undefined)).toBe(true);
    expect(linked.slice(25).every((org) => org === organizationId)).toBe(true);
    const { Item } = await plain.send(
      new GetCommand({
        TableName: tables.organizations,
        Key: { pk: `safety#O#${organizationId}`, sk: 'O' },
        ConsistentRead: true,
      }),
    );
    expect(Item?.members).toBe(35);
  });
});
