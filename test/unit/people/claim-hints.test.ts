import { describe, expect, it } from '@jest/globals';
import { ClaimHintCache } from '../../../shared/domain/merge/claim-hints.js';
import { mergePeople } from '../../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../../shared/domain/people/merge-request.js';
import { claimId } from '../../../shared/domain/people/people-store.js';
import type { Tenant } from '../../../shared/domain/tenancy.js';
import { offlineLocation, testTenant, webAndCrmTenant } from '../fixtures.js';
import { MemoryPeopleStore } from './memory-people-store.js';

const tenant = webAndCrmTenant();
const crm = { ...tenant, dataSource: tenant.instance.data_sources[1] ?? tenant.dataSource };
const other = testTenant({ id: 'other-instance' });

const location = offlineLocation;

const hintedFields = new Set(['str::email', 'str::ei']);

async function merge(
  store: MemoryPeopleStore,
  people: { fields: Record<string, unknown> }[],
  as: Tenant = tenant,
) {
  for (const key of Object.keys(store.calls)) Reflect.deleteProperty(store.calls, key);
  return mergePeople(PersonMergeRequest.parse({ people }), { tenant: as, store, location });
}

/** Runs `work` as another container would: with the same data and no hints of its own. */
async function elsewhere<T>(store: MemoryPeopleStore, work: () => Promise<T>): Promise<T> {
  const hints = store.claimHints;
  store.claimHints = undefined;
  try {
    return await work();
  } finally {
    store.claimHints = hints;
  }
}

describe('claim hints: a container that knows who holds an email reads only the person', () => {
  it('finds people merged before without reading their claims, and answers as without hints', async () => {
    const store = new MemoryPeopleStore();
    store.claimHints = new ClaimHintCache(hintedFields);
    const people = Array.from({ length: 20 }, (_, i) => ({
      fields: { 'str::email': `p${i}@x.test` },
    }));
    const created = await merge(store, people);
    const again = await merge(store, people);
    expect(again).toEqual(created.map((c) => ({ person_id: c.person_id, status: 'merged' })));
    expect(store.calls).toEqual({ getPeople: 1 });
  });

  it('reads the claim when the hinted person no longer holds the value, and merges into its holder now', async () => {
    const store = new MemoryPeopleStore();
    store.claimHints = new ClaimHintCache(hintedFields);
    const [first] = await merge(
      store,
      [{ fields: { 'str:cm:crm-id': 'C-1', 'str::email': 'a@x.test' } }],
      crm,
    );
    const firstId = first?.person_id ?? '';
    // Another container moves the email to another person.
    const second = await elsewhere(store, async () => {
      await merge(store, [{ fields: { 'str:cm:crm-id': 'C-1', 'str::email': 'b@x.test' } }], crm);
      return (await merge(store, [{ fields: { 'str::email': 'a@x.test' } }]))[0];
    });
    expect(second?.status).toBe('created');
    const [found] = await merge(store, [
      { fields: { 'str::email': 'a@x.test', 'str::first': 'Ann' } },
    ]);
    expect(found).toEqual({ person_id: second?.person_id, status: 'merged' });
    expect(store.calls.findClaimOwners).toBe(1);
    expect(store.people.get(second?.person_id ?? '')?.fields['str::first']).toBe('Ann');
    expect(store.people.get(firstId)?.fields['str::first']).toBeUndefined();
    // The hint now names the holder: the next merge reads no claim.
    await merge(store, [{ fields: { 'str::email': 'a@x.test' } }]);
    expect(store.calls.findClaimOwners ?? 0).toBe(0);
  });

  it('creates a new person when the hinted one was erased with its claims', async () => {
    const store = new MemoryPeopleStore();
    store.claimHints = new ClaimHintCache(hintedFields);
    const [first] = await merge(store, [{ fields: { 'str::email': 'gone@x.test' } }]);
    // Erased elsewhere: the person and its claim go in one transaction.
    store.people.delete(first?.person_id ?? '');
    store.claims.delete(claimId('str::email', 'gone@x.test'));
    const [again] = await merge(store, [{ fields: { 'str::email': 'gone@x.test' } }]);
    expect(again?.status).toBe('created');
    expect(again?.person_id).not.toBe(first?.person_id);
    expect(store.claims.get(claimId('str::email', 'gone@x.test'))).toBe(again?.person_id);
  });

  it('takes no hint for a field whose values may be held without a claim (a custom unique field)', async () => {
    const store = new MemoryPeopleStore();
    store.claimHints = new ClaimHintCache(hintedFields);
    await merge(store, [{ fields: { 'str:cm:crm-id': 'C-9', 'str::email': 'c9@x.test' } }], crm);
    await merge(store, [{ fields: { 'str:cm:crm-id': 'C-9', 'str::email': 'c9@x.test' } }], crm);
    expect(store.calls.findClaimOwners).toBe(1);
    const own = store.claimHints.of(tenant.instance.id);
    expect(own.get({ field: 'str:cm:crm-id', value: 'C-9' })).toBeUndefined();
    expect(own.get({ field: 'str::email', value: 'c9@x.test' })).toBeDefined();
  });

  it('keeps each instance apart: a hint of one instance is never one of another', async () => {
    const store = new MemoryPeopleStore();
    store.claimHints = new ClaimHintCache(hintedFields);
    const [mine] = await merge(store, [{ fields: { 'str::email': 'same@x.test' } }]);
    const hints = store.claimHints;
    expect(hints.of(tenant.instance.id).get({ field: 'str::email', value: 'same@x.test' })).toBe(
      mine?.person_id,
    );
    expect(hints.of(other.instance.id).get({ field: 'str::email', value: 'same@x.test' })).toBe(
      undefined,
    );
  });

  it('forgets a hint after its time, and when the person gives the value up', async () => {
    let now = 0;
    const hints = new ClaimHintCache(hintedFields, 10, 1_000, () => now);
    const key = { field: 'str::email', value: 'a@x.test' };
    hints.of('i').set(key, 'p1');
    now = 999;
    expect(hints.of('i').get(key)).toBe('p1');
    now = 1_000;
    expect(hints.of('i').get(key)).toBeUndefined();

    const store = new MemoryPeopleStore();
    store.claimHints = new ClaimHintCache(hintedFields);
    await merge(store, [{ fields: { 'str:cm:crm-id': 'C-3', 'str::email': 'old@x.test' } }], crm);
    await merge(store, [{ fields: { 'str:cm:crm-id': 'C-3', 'str::email': 'new@x.test' } }], crm);
    const own = store.claimHints.of(tenant.instance.id);
    expect(own.get({ field: 'str::email', value: 'old@x.test' })).toBeUndefined();
    expect(own.get({ field: 'str::email', value: 'new@x.test' })).toBeDefined();
  });
});
