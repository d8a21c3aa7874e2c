import { describe, expect, it } from '@jest/globals';
import {
  changeRecords,
  CONTINUED,
  LifecycleRequest,
  runLifecycleJob,
  type AuditEntry,
  type JobPosition,
  type JobProgress,
  type LifecycleContext,
  type LifecycleStore,
  type RecordState,
} from '../../../shared/domain/lifecycle/lifecycle.js';
import { personIdsNamedIn } from '../../../shared/domain/people/person-references.js';
import { ServiceUnavailableError, ValidationError } from '../../../shared/domain/errors.js';

/** Records in memory, in `shards` listing shards by the last hex digit of their ID. */
class MemoryLifecycle implements LifecycleStore {
  readonly states_ = new Map<string, RecordState>();
  readonly audits: AuditEntry[] = [];
  failOn?: string;

  constructor(
    ids: string[],
    readonly shards = 4,
  ) {
    for (const id of ids) this.states_.set(id, 'active');
  }

  states(_i: string, ids: string[]) {
    const found = new Map<string, RecordState>();
    for (const id of ids) {
      const state = this.states_.get(id);
      if (state) found.set(id, state);
    }
    return Promise.resolve(found);
  }

  private move(id: string, from: RecordState, to: RecordState | undefined) {
    if (id === this.failOn) return Promise.reject(new ServiceUnavailableError('down'));
    if (this.states_.get(id) !== from) return Promise.resolve(false);
    if (to) this.states_.set(id, to);
    else this.states_.delete(id);
    return Promise.resolve(true);
  }

  archive(_i: string, id: string) {
    return this.move(id, 'active', 'archived');
  }
  restore(_i: string, id: string) {
    return this.move(id, 'archived', 'active');
  }
  erase(_i: string, id: string) {
    return this.move(id, 'archived', undefined);
  }
  totals() {
    const count = (state: RecordState) =>
      [...this.states_.values()].filter((s) => s === state).length;
    return Promise.resolve({ active: count('active'), archived: count('archived') });
  }
  page(_i: string, state: RecordState, position: JobPosition, count: number) {
    for (let shard = position.shard; shard < this.shards; shard += 1) {
      const ids = [...this.states_]
        .filter(([id, s]) => s === state && parseInt(id.slice(-1), 16) % this.shards === shard)
        .map(([id]) => id)
        .sort()
        .filter((id) => shard !== position.shard || !position.after || id > position.after)
        .slice(0, count);
      const last = ids.at(-1);
      if (ids.length === count && last)
        return Promise.resolve({ ids, next: { shard, after: last } });
      if (ids.length > 0) {
        return Promise.resolve({
          ids,
          ...(shard + 1 < this.shards ? { next: { shard: shard + 1 } } : {}),
        });
      }
    }
    return Promise.resolve({ ids: [] });
  }
  audit(_i: string, entry: AuditEntry) {
    this.audits.push(entry);
    return Promise.resolve();
  }
}

const ids = Array.from({ length: 250 }, (_, i) => i.toString(16).padStart(24, '0'));

function context(store: LifecycleStore, action: LifecycleContext['action']): LifecycleContext {
  return {
    subject: 'people',
    action,
    instanceId: 'acme',
    dataSource: 'Web',
    requestId: 'req',
    store,
    keyFields: ['str::email'],
  };
}

describe('the lifecycle request', () => {
  it('takes inclusion_ids or all_rows_selected (with exclusion_ids), never both', () => {
    expect(LifecycleRequest.safeParse({ inclusion_ids: [ids[0]] }).success).toBe(true);
    expect(
      LifecycleRequest.safeParse({ all_rows_selected: true, exclusion_ids: [ids[0]] }).success,
    ).toBe(true);
    for (const body of [
      {},
      { inclusion_ids: [] },
      { inclusion_ids: ids.slice(0, 101) },
      { inclusion_ids: ['x'] },
      { all_rows_selected: false },
      { all_rows_selected: true, inclusion_ids: [ids[0]] },
      { inclusion_ids: [ids[0]], exclusion_ids: [] },
      { all_rows_selected: true, exclusion_ids: ids.concat(ids, ids, ids, ids) },
    ]) {
      expect({ body, ok: LifecycleRequest.safeParse(body).success }).toEqual({ body, ok: false });
    }
  });
});

describe('inclusion_ids', () => {
  it('changes each named record once, counts only changes, and audits deletes', async () => {
    const store = new MemoryLifecycle(ids.slice(0, 5));
    const named = ids.slice(0, 3);
    expect(await changeRecords([...named, named[0] as string], context(store, 'archive'))).toEqual({
      scheduled_contacts: 0,
      archived_contacts: 3,
    });
    expect(await changeRecords(named, context(store, 'archive'))).toEqual({
      scheduled_contacts: 0,
      archived_contacts: 0,
    });
    await expect(changeRecords(ids.slice(2, 4), context(store, 'delete'))).rejects.toThrow(
      `archive these first: ${ids[3]}`,
    );
    expect(store.states_.get(ids[2] as string)).toBe('archived');
    expect(await changeRecords(named.slice(0, 2), context(store, 'delete'))).toEqual({
      scheduled_contacts: 0,
      deleted_contacts: 2,
    });
    expect(store.audits).toEqual([
      expect.objectContaining({ action: 'delete', subject: 'people', count: 2 }),
    ]);
    expect(JSON.stringify(store.audits)).not.toContain(ids[0]);
    await expect(changeRecords([ids[9] as string], context(store, 'restore'))).rejects.toThrow(
      ValidationError,
    );
  });

  it('reports which records were changed when the store stops part-way', async () => {
    const store = new MemoryLifecycle(ids.slice(0, 3));
    store.failOn = ids[1];
    const error = await changeRecords(ids.slice(0, 3), context(store, 'archive')).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect((error as ServiceUnavailableError).details?.[1]).toMatchObject({
      index: 1,
      status: 'not_applied',
    });
  });
});

describe('a background request (all_rows_selected)', () => {
  it('goes on from its saved progress across deliveries, and a repeat changes nothing', async () => {
    const store = new MemoryLifecycle(ids);
    let saved: JobProgress | undefined;
    let requeued = 0;
    let pagesLeft = 1;
    const ports = {
      load: () => Promise.resolve(saved),
      save: (progress: JobProgress) => Promise.resolve(void (saved = progress)),
      requeue: () => Promise.resolve(void (requeued += 1)),
      // One page per delivery.
      hasTime: () => (pagesLeft -= 1) >= 0,
    };
    const request = LifecycleRequest.parse({ all_rows_selected: true, exclusion_ids: [ids[7]] });
    let answer: Awaited<ReturnType<typeof runLifecycleJob>> = CONTINUED;
    for (let delivery = 0; answer === CONTINUED && delivery < 100; delivery += 1) {
      pagesLeft = 0;
      answer = await runLifecycleJob(request, 249, context(store, 'archive'), ports);
    }
    expect(answer).toEqual({ scheduled_contacts: 249, archived_contacts: 249 });
    // Four shards of about 63 records: a page each, one delivery each.
    expect(requeued).toBe(3);
    expect(store.states_.get(ids[7] as string)).toBe('active');
    expect((await store.totals()).archived).toBe(249);
    // Delivered again from the start (a redrive): everything is archived already.
    saved = undefined;
    pagesLeft = 1000;
    expect(await runLifecycleJob(request, 249, context(store, 'archive'), ports)).toEqual({
      scheduled_contacts: 249,
      archived_contacts: 0,
    });
  });

  it('keeps what a failed page changed, and runs the page again on the next delivery', async () => {
    const store = new MemoryLifecycle(ids.slice(0, 20));
    store.failOn = ids[5];
    let saved: JobProgress | undefined;
    const ports = {
      load: () => Promise.resolve(saved),
      save: (progress: JobProgress) => Promise.resolve(void (saved = progress)),
      requeue: () => Promise.resolve(),
      hasTime: () => true,
    };
    const request = LifecycleRequest.parse({ all_rows_selected: true });
    await expect(runLifecycleJob(request, 20, context(store, 'archive'), ports)).rejects.toThrow(
      'down',
    );
    const changedBefore = saved?.changed ?? 0;
    expect(changedBefore).toBeGreaterThan(0);
    store.failOn = undefined;
    expect(await runLifecycleJob(request, 20, context(store, 'archive'), ports)).toEqual({
      scheduled_contacts: 20,
      archived_contacts: 20,
    });
  });
});

describe('the people a kept answer names', () => {
  it('reads person_id members, contacts and IDs quoted in errors, nothing else', () => {
    const [a, b, c, d, e] = ids as [string, string, string, string, string];
    expect(
      personIdsNamedIn({
        people: [{ person_id: a, status: 'created' }],
        activities: [{ person_id: b, activity_id: e }],
        contacts: [{ id: c, fields: {} }],
        details: [{ error: `the value "x" already belongs to another person (${d})` }],
        organizations: [{ organization_id: e }],
      }).sort(),
    ).toEqual([a, b, c, d].sort());
    expect(personIdsNamedIn({ contacts: { [a]: { id: a } } })).toEqual([a]);
  });
});
