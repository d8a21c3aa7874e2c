import { describe, expect, it } from '@jest/globals';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import { batchGet } from '../../shared/adapters/dynamo-helpers.js';
import { FaultInjector, VersionHistory } from '../../shared/adapters/dynamo-faults.js';
import { DynamoTagStore } from '../../shared/adapters/tag-store.js';
import { TransactionBatcher } from '../../shared/adapters/transaction-batcher.js';
import { tableName } from '../../shared/resources.js';
import { stackDb } from './stack.js';

/**
 * New tags get their IDs against the test stack's DynamoDB Local: a request naming 100 new
 * tags takes its IDs in one addition and writes the tags in a few batched transactions (it
 * made 200 calls, one sequence update and one transaction per tag), and requests racing on
 * the same names, under injected conflicts and throttling, leave each tag one ID whose ID
 * item names it.
 */
const PEOPLE = tableName('default', 'people');
const { db: plain } = stackDb();

function tagStore(faults = false) {
  const base = createDynamoDbClient();
  const calls: string[] = [];
  base.middlewareStack.add(
    (next, context) => (args) => {
      calls.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'countCalls' },
  );
  const injector = faults
    ? new FaultInjector(
        { conflict: 0.5, throttle: 0.2, stale: 0, windowMs: 5000 },
        Math.random,
        Date.now,
        new VersionHistory(),
      ).install(base)
    : undefined;
  const db = createDocumentClient(base, '');
  return { store: new DynamoTagStore(db, PEOPLE, new TransactionBatcher(db)), calls, injector };
}

/** Each name's tag ID, and the name its ID item holds. */
async function idsOf(instanceId: string, names: string[]) {
  const tags = await batchGet(
    plain,
    PEOPLE,
    names.map((name) => ({ pk: `${instanceId}#T#${name}`, sk: 'T' })),
    true,
  );
  const ids = new Map(tags.map((tag) => [String(tag.name), Number(tag.tag_id)]));
  const idItems = await batchGet(
    plain,
    PEOPLE,
    [...ids.values()].map((id) => ({ pk: `${instanceId}#TID#${id}`, sk: 'TID' })),
    true,
  );
  const namesById = new Map(
    idItems.map((item) => [Number(String(item.pk).split('#TID#')[1]), String(item.name)]),
  );
  return { ids, namesById };
}

const names = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe('tag IDs', () => {
  it('gives 100 new tags distinct IDs in a few calls, and a repeat writes nothing', async () => {
    const instanceId = `tagids-${Date.now().toString(36)}`;
    const { store, calls } = tagStore();
    const wanted = names('new', 100);
    await store.ensureTags(instanceId, wanted);
    expect(calls.filter((name) => name === 'UpdateItemCommand')).toHaveLength(1);
    expect(calls.filter((name) => name === 'TransactWriteItemsCommand').length).toBeLessThanOrEqual(
      4,
    );
    expect(calls.length).toBeLessThanOrEqual(6);

    const { ids, namesById } = await idsOf(instanceId, wanted);
    expect(ids.size).toBe(100);
    expect(new Set(ids.values()).size).toBe(100);
    for (const [name, id] of ids) expect(namesById.get(id)).toBe(name);

    // The same container knows them now: no call. Another reads them once and writes nothing.
    calls.length = 0;
    await store.ensureTags(instanceId, wanted);
    expect(calls).toEqual([]);
    const other = tagStore();
    await other.store.ensureTags(instanceId, wanted);
    expect(other.calls).toEqual(['BatchGetItemCommand']);
    expect((await idsOf(instanceId, wanted)).ids).toEqual(ids);

    // Known tags are left out of the read; a new one beside them is read and registered.
    other.calls.length = 0;
    await other.store.ensureTags(instanceId, [...wanted.slice(0, 3), 'later']);
    expect(other.calls.filter((name) => name === 'BatchGetItemCommand')).toHaveLength(1);
    const { ids: after } = await idsOf(instanceId, [...wanted, 'later']);
    expect(after.get('later')).toEqual(expect.any(Number));
    expect(new Set(after.values()).size).toBe(101);
    // Tags are known per instance: the same name in another instance is made there.
    const elsewhere = `${instanceId}-b`;
    await other.store.ensureTags(elsewhere, ['later']);
    expect((await idsOf(elsewhere, ['later'])).ids.get('later')).toEqual(expect.any(Number));
  });

  it('leaves each tag one ID when requests race on the same names under conflicts', async () => {
    const instanceId = `tagrace-${Date.now().toString(36)}`;
    const shared = names('shared', 50);
    const stores = [tagStore(true), tagStore(true), tagStore(true)];
    await Promise.all(
      stores.map(({ store }, n) =>
        store.ensureTags(instanceId, [...shared, ...names(`own${n}`, 20)]),
      ),
    );
    expect(
      stores.some(
        ({ injector }) => (injector?.counts.conflicts ?? 0) + (injector?.counts.throttled ?? 0) > 0,
      ),
    ).toBe(true);
    const all = [...shared, ...[0, 1, 2].flatMap((n) => names(`own${n}`, 20))];
    const { ids, namesById } = await idsOf(instanceId, all);
    expect(ids.size).toBe(all.length);
    expect(new Set(ids.values()).size).toBe(all.length);
    for (const [name, id] of ids) expect(namesById.get(id)).toBe(name);
  });
});
