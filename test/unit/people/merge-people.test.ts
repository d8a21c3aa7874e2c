import { describe, expect, it, jest } from '@jest/globals';
import {
  InvalidTimeZoneError,
  ServiceUnavailableError,
  ValidationError,
} from '../../../shared/domain/errors.js';
import { offlineLocation, webAndCrmTenant } from '../fixtures.js';
import { mergePeople } from '../../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../../shared/domain/people/merge-request.js';
import { RecordChangedError } from '../../../shared/domain/merge/merge-engine.js';
import { claimId } from '../../../shared/domain/people/people-store.js';
import { MemoryPeopleStore } from './memory-people-store.js';

const tenant = webAndCrmTenant();
const { instance } = tenant;

const location = offlineLocation;

function run(store: MemoryPeopleStore, body: Record<string, unknown>) {
  return mergePeople(PersonMergeRequest.parse(body), { tenant, store, location });
}

describe('mergePeople', () => {
  it('merges 100 new people with one batched read of claims, none of people, and one write each', async () => {
    const store = new MemoryPeopleStore();
    const people = Array.from({ length: 100 }, (_, i) => ({
      fields: { 'str::email': `p${i}@x.test` },
      tags: ['bulk'],
    }));
    const results = await run(store, { people });
    expect(results.every((r) => r.status === 'created')).toBe(true);
    expect(store.calls).toEqual({
      findClaimOwners: 1,
      createPerson: 100,
      ensureTags: 1,
    });
    expect(store.contacts).toBe(100);
  });

  it('updating 100 existing people reads them in one batch and writes each once', async () => {
    const store = new MemoryPeopleStore();
    const people = Array.from({ length: 100 }, (_, i) => ({
      fields: { 'str::email': `p${i}@x.test` },
    }));
    await run(store, { people });
    for (const key of Object.keys(store.calls)) store.calls[key] = 0;
    const renamed = people.map((p) => ({ fields: { ...p.fields, 'str::first': 'New' } }));
    await run(store, { people: renamed });
    expect(store.calls).toEqual({
      findClaimOwners: 1,
      getPeople: 1,
      createPerson: 0,
      updatePerson: 100,
    });
  });

  it('makes no write when a merge changes nothing', async () => {
    const store = new MemoryPeopleStore();
    await run(store, { people: [{ fields: { 'str::email': 'a@x.test', 'str::first': 'A' } }] });
    const [result] = await run(store, {
      people: [{ fields: { 'str::email': 'a@x.test', 'str::first': 'A' } }],
    });
    expect(result?.status).toBe('merged');
    expect(store.calls.updatePerson ?? 0).toBe(0);
  });

  it('turns a lost race for a new email into a merge', async () => {
    const store = new MemoryPeopleStore();
    store.beforeNextWrite = () => {
      // Another request creates the same person between our read and our write.
      store.people.set('aaaaaaaaaaaaaaaaaaaaaaaa', {
        id: 'aaaaaaaaaaaaaaaaaaaaaaaa',
        fields: { 'str::email': 'race@x.test', 'bol::p': true, 'bol::sp': false },
        tags: [],
        created_at: '2024-01-01T00:00:00.000Z',
        updated_at: '2024-01-01T00:00:00.000Z',
      });
      store.claims.set(claimId('str::email', 'race@x.test'), 'aaaaaaaaaaaaaaaaaaaaaaaa');
    };
    const [result] = await run(store, {
      people: [{ fields: { 'str::email': 'race@x.test', 'str::first': 'B' } }],
    });
    expect(result).toEqual({ person_id: 'aaaaaaaaaaaaaaaaaaaaaaaa', status: 'merged' });
    expect(store.people.size).toBe(1);
    expect(store.people.get('aaaaaaaaaaaaaaaaaaaaaaaa')?.fields['str::first']).toBe('B');
  });

  it('re-plans when the person changed under it, so the activity reflects the real change', async () => {
    const store = new MemoryPeopleStore();
    const [created] = await run(store, { people: [{ fields: { 'str::email': 'p@x.test' } }] });
    const id = created?.person_id ?? '';
    store.beforeNextWrite = () => {
      const person = store.people.get(id);
      if (person) person.fields['bol::p'] = false; // someone else unsubscribed them
    };
    await run(store, { people: [{ fields: { 'str::email': 'p@x.test', 'bol::p': false } }] });
    // Our unsubscribe became a no-op: only one unsubscribe would be recorded (by the other writer).
    expect(store.activities.filter((a) => a.activity.field_id === 'act::u-all')).toHaveLength(0);
    expect(store.calls.updatePerson).toBe(1);
  });

  it('finds by a custom merge field of a data source and keeps its values unique', async () => {
    const store = new MemoryPeopleStore();
    const crm = { ...tenant, dataSource: instance.data_sources[1] ?? tenant.dataSource };
    const [a] = await mergePeople(
      PersonMergeRequest.parse({
        people: [{ fields: { 'str:cm:crm-id': 'C-1', 'str::email': 'c1@x.test' } }],
      }),
      { tenant: crm, store, location },
    );
    const [b] = await mergePeople(
      PersonMergeRequest.parse({
        people: [{ fields: { 'str:cm:crm-id': 'C-1', 'str::email': 'new@x.test' } }],
      }),
      { tenant: crm, store, location },
    );
    expect(b).toEqual({ person_id: a?.person_id, status: 'merged' });
    const [c] = await mergePeople(
      PersonMergeRequest.parse({
        people: [{ fields: { 'str:cm:crm-id': 'C-2', 'str::email': 'new@x.test' } }],
      }),
      { tenant: crm, store, location },
    );
    // C-2 matches nobody, the email falls through to the same person, who takes C-2.
    expect(c).toEqual({ person_id: a?.person_id, status: 'merged' });
    expect(store.claims.get(claimId('str:cm:crm-id', 'C-1'))).toBeUndefined();
  });

  it('throws on an invalid time zone before writing anything', async () => {
    const store = new MemoryPeopleStore();
    await expect(
      run(store, {
        people: [
          { fields: { 'str::email': 'ok@x.test' } },
          {
            fields: {
              'str::email': 'tz@x.test',
              'dtz::b': { year: 2000, month: 1, day: 1, timezone: 'Nowhere' },
            },
          },
        ],
      }),
    ).rejects.toThrow(InvalidTimeZoneError);
    expect(store.people.size).toBe(0);
  });

  it('throws a ValidationError with details when every record is invalid', async () => {
    const store = new MemoryPeopleStore();
    await expect(
      run(store, { people: [{ fields: {} }, { fields: { 'str::email': 'bad' } }] }),
    ).rejects.toThrow(ValidationError);
    expect(store.calls).toEqual({});
  });

  it('clears a field and unsets a tag even when they were set after the read', async () => {
    const store = new MemoryPeopleStore();
    const [created] = await run(store, { people: [{ fields: { 'str::email': 'late@x.test' } }] });
    const id = created?.person_id ?? '';
    store.beforeNextWrite = () => {
      // Another request sets them between our read and our write.
      const person = store.people.get(id);
      if (person) {
        person.fields['str::postal'] = '3000';
        person.tags.push('late');
      }
    };
    await run(store, {
      people: [
        {
          fields: { 'str::email': 'late@x.test', 'str::postal': null, 'str::first': 'New' },
          unset_tags: ['late'],
        },
      ],
    });
    const person = store.people.get(id);
    expect(person?.fields['str::postal']).toBeUndefined();
    expect(person?.fields['str::first']).toBe('New');
    expect(person?.tags).toEqual([]);
  });

  it('lets a person give up a key value another person holds the claim of', async () => {
    const store = new MemoryPeopleStore();
    const crm = { ...tenant, dataSource: instance.data_sources[1] ?? tenant.dataSource };
    const [a] = await run(store, {
      people: [{ fields: { 'str::email': 'holder@x.test', 'str:cm:crm-id': 'C-9' } }],
    });
    // Someone who held C-9 before the field became unique: the claim is not theirs.
    const [b] = await run(store, { people: [{ fields: { 'str::email': 'sharer@x.test' } }] });
    const sharer = store.people.get(b?.person_id ?? '');
    if (sharer) sharer.fields['str:cm:crm-id'] = 'C-9';
    const [moved] = await mergePeople(
      PersonMergeRequest.parse({
        people: [{ fields: { 'str::email': 'sharer@x.test', 'str:cm:crm-id': 'C-10' } }],
        merge_by: ['str::email'],
      }),
      { tenant: crm, store, location },
    );
    expect(moved).toEqual({ person_id: b?.person_id, status: 'merged' });
    expect(store.claims.get(claimId('str:cm:crm-id', 'C-9'))).toBe(a?.person_id);
    expect(store.claims.get(claimId('str:cm:crm-id', 'C-10'))).toBe(b?.person_id);
  });

  it('refuses tags past the budget for that record only', async () => {
    const store = new MemoryPeopleStore();
    const tags = (from: number) => Array.from({ length: 100 }, (_, i) => `t${from + i}`);
    for (let batch = 0; batch < 5; batch += 1) {
      await run(store, {
        people: [{ fields: { 'str::email': 'tagged@x.test' }, tags: tags(batch * 100) }],
      });
    }
    const results = await run(store, {
      people: [
        { fields: { 'str::email': 'tagged@x.test' }, tags: ['one-too-many'] },
        { fields: { 'str::email': 'other@x.test' }, tags: ['fine'] },
      ],
    });
    expect(results[0]).toEqual({
      status: 'invalid',
      error:
        'people[0].tags: the person would hold 501 tags; at most 500 are allowed (remove some with unset_tags)',
    });
    expect(results[1]?.status).toBe('created');
  });

  it('stops when the store stays unavailable: no new write starts, details say what was applied', async () => {
    const store = new MemoryPeopleStore();
    store.failWrite = (call) => (call >= 3 ? new ServiceUnavailableError('down') : undefined);
    const people = Array.from({ length: 40 }, (_, i) => ({
      fields: { 'str::email': `s${i}@x.test` },
    }));
    const error = await run(store, { people }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    const details = (error as ServiceUnavailableError).details ?? [];
    expect(details.filter((d) => d.status === 'created')).toHaveLength(2);
    expect(details.filter((d) => d.status === 'not_applied')).toHaveLength(38);
    for (const detail of details.filter((d) => d.status === 'created')) {
      expect(store.people.has(detail.person_id ?? '')).toBe(true);
    }
    // The 16 writers each stop at their first failure: at most 16 writes were tried.
    expect(store.calls.createPerson).toBeLessThanOrEqual(2 + 16);
  });

  describe('a person whose update loses races', () => {
    /** A store holding race@x.test, and the update of its first name, with backoffs at `random`. */
    async function raced(random: number, first: string) {
      const store = new MemoryPeopleStore();
      await run(store, { people: [{ fields: { 'str::email': 'race@x.test' } }] });
      store.calls.updatePerson = 0;
      const update = async () => {
        const spy = jest.spyOn(Math, 'random').mockReturnValue(random);
        try {
          const [result] = await run(store, {
            people: [{ fields: { 'str::email': 'race@x.test', 'str::first': first } }],
          });
          return result;
        } finally {
          spy.mockRestore();
        }
      };
      return { store, update };
    }

    it('reads the person again after its wait, not before it', async () => {
      // Each backoff its longest (Math.random 1): the first wait is 20 ms.
      const { store, update } = await raced(1, 'After');
      const events: { what: string; at: number }[] = [];
      const read = store.getPeople.bind(store);
      store.getPeople = (instanceId, ids) => {
        events.push({ what: 'read', at: performance.now() });
        return read(instanceId, ids);
      };
      store.failWrite = (call) => {
        if (call !== 2) return undefined;
        events.push({ what: 'lost', at: performance.now() });
        return new RecordChangedError();
      };
      expect((await update())?.status).toBe('merged');
      const lost = events.findIndex((event) => event.what === 'lost');
      const reread = events[lost + 1];
      expect(reread?.what).toBe('read');
      expect((reread?.at ?? 0) - (events[lost]?.at ?? 0)).toBeGreaterThanOrEqual(15);
    });

    it('keeps trying past 20 lost races while the budget lasts', async () => {
      // 30 lost races in a row, no wait between them (Math.random 0): the 31st write lands.
      const { store, update } = await raced(0, 'Late');
      store.failWrite = (call) => (call >= 2 && call <= 31 ? new RecordChangedError() : undefined);
      expect((await update())?.status).toBe('merged');
      expect(store.calls.updatePerson).toBe(31);
    });
  });

  it('applies a queued request once, however often it is delivered', async () => {
    const store = new MemoryPeopleStore();
    const body = {
      people: [
        { fields: { 'str::email': 'q1@x.test' }, tags: ['queued'] },
        { fields: { 'str::email': 'q2@x.test', 'bol::p': false } },
        { fields: { 'str::email': 'q1@x.test', 'str::first': 'Same' } },
      ],
    };
    const ledger = store.ledger('r-1');
    const first = await mergePeople(PersonMergeRequest.parse(body), {
      tenant,
      store,
      location,
      ledger,
    });
    const writes = { ...store.calls };
    const again = await mergePeople(PersonMergeRequest.parse(body), {
      tenant,
      store,
      location,
      ledger: store.ledger('r-1'),
    });
    expect(again).toEqual(first);
    expect(first.map((r) => r.status)).toEqual(['created', 'created', 'merged']);
    // Nothing was read or written for records with an outcome: only the ledger answered.
    expect(store.calls.createPerson).toBe(writes.createPerson);
    expect(store.calls.updatePerson).toBe(writes.updatePerson);
    expect(store.contacts).toBe(2);
    expect(store.activities).toHaveLength(2);
  });

  it('answers with the recorded outcome when a duplicate delivery applied the record first', async () => {
    const store = new MemoryPeopleStore();
    const body = { people: [{ fields: { 'str::email': 'dup@x.test' } }] };
    store.beforeNextWrite = () => {
      // A duplicate delivery creates the person (and records it) between our read and write.
      store.people.set('bbbbbbbbbbbbbbbbbbbbbbbb', {
        id: 'bbbbbbbbbbbbbbbbbbbbbbbb',
        fields: { 'str::email': 'dup@x.test', 'bol::p': true, 'bol::sp': false },
        tags: [],
        created_at: '2024-01-01T00:00:00.000Z',
        updated_at: '2024-01-01T00:00:00.000Z',
      });
      store.claims.set(claimId('str::email', 'dup@x.test'), 'bbbbbbbbbbbbbbbbbbbbbbbb');
      store.markers.set('r-2#0', { id: 'bbbbbbbbbbbbbbbbbbbbbbbb', status: 'created' });
    };
    const [result] = await mergePeople(PersonMergeRequest.parse(body), {
      tenant,
      store,
      location,
      ledger: store.ledger('r-2'),
    });
    expect(result).toEqual({ person_id: 'bbbbbbbbbbbbbbbbbbbbbbbb', status: 'created' });
    expect(store.people.size).toBe(1);
  });
});
