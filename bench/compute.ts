/**
 * Figure 5, compute per record: CPU microseconds per person merged and per activity
 * recorded, in this process, with the domain code and in-memory stores (no network, no
 * SDK): what the API's own rules cost. Several warm-up requests first, then the CPU time
 * (`process.cpuUsage`, user + system) of many requests of 100.
 *
 *   node --import tsx bench/compute.ts
 */
import type {
  ActivityStore,
  ActivityToWrite,
  KeyState,
} from '../shared/domain/activities/record-activities.js';
import {
  ActivitiesCreateRequest,
  recordActivities,
} from '../shared/domain/activities/record-activities.js';
import { FieldCatalog } from '../shared/domain/fields/field-catalog.js';
import type { LocationServices } from '../shared/domain/location.js';
import { mergePeople } from '../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../shared/domain/people/merge-request.js';
import type { Tenant } from '../shared/domain/tenancy.js';
import { MemoryPeopleStore } from '../test/unit/people/memory-people-store.js';
import { fixed, printFigure, scaled, type FigureResult } from './lib/report.js';
import { isMain } from './lib/stack.js';

const TARGET_US = 100;

/** Activities kept in memory, with the DynamoDB store's key semantics (claim, done). */
class MemoryActivityStore implements ActivityStore {
  readonly written: ActivityToWrite[] = [];
  private readonly keys = new Map<string, KeyState>();

  claimKeys(_instance: string, keys: string[]) {
    const states = new Map<string, KeyState>();
    for (const key of keys) {
      const state = this.keys.get(key) ?? { kind: 'claimed' as const };
      if (state.kind === 'claimed') this.keys.set(key, { kind: 'pending' });
      states.set(key, state);
    }
    return Promise.resolve(states);
  }

  readKeys(_instance: string, keys: string[]) {
    return Promise.resolve(
      new Map(
        keys.flatMap((key) => {
          const state = this.keys.get(key);
          return state ? [[key, state] as const] : [];
        }),
      ),
    );
  }

  releaseKeys(_instance: string, keys: string[]) {
    for (const key of keys) this.keys.delete(key);
    return Promise.resolve();
  }

  write(_instance: string, activities: ActivityToWrite[]) {
    this.written.push(...activities);
    return Promise.resolve([]);
  }
}

function tenant(): Tenant {
  const source = {
    name: 'Bench',
    merge_by: ['str::email'],
    merge_strategy: 2 as const,
    find_strategy: 0 as const,
  };
  const instance = {
    id: 'compute',
    name: 'Compute',
    region: 'default' as const,
    plan: 'business' as const,
    transactional_email: false,
    sending_domains: [],
    data_sources: [source],
    person_fields: [],
    organization_fields: [],
    activities: [
      {
        id: 'act:cm:purchased',
        name: 'Purchased',
        display_text: 'Purchased {{attribute.item}}',
        attributes: [
          { id: 'str:cm:item', name: 'Item' },
          { id: 'int:cm:price', name: 'Price', kind: 'currency' as const },
        ],
        conversion_value: true,
        track_as_touch: true,
      },
    ],
  };
  return {
    instance,
    dataSource: source,
    personFields: FieldCatalog.forPerson(),
    organizationFields: FieldCatalog.forOrganization(),
  };
}

const location: LocationServices = {
  ipLocator: { locate: () => Promise.resolve(undefined) },
  geocoder: { geocode: () => Promise.resolve(undefined) },
  meter: { record: () => Promise.resolve() },
};

const people = (run: string, request: number, last: string) =>
  Array.from({ length: 100 }, (_, i) => ({
    fields: {
      'str::email': `${run}-${request}-${i}@compute.bench`,
      'str::first': `First${i}`,
      'str::last': last,
    },
    tags: ['bench'],
  }));

/** CPU µs per record of `requests` runs of `work` (after `warmup` runs). */
async function cpuPerRecord(
  requests: number,
  records: number,
  work: (n: number) => Promise<unknown>,
): Promise<number> {
  for (let n = 0; n < 10; n += 1) await work(-1 - n);
  const before = process.cpuUsage();
  for (let n = 0; n < requests; n += 1) await work(n);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (requests * records);
}

export async function computeFigure(): Promise<FigureResult> {
  const requests = scaled(50);
  const context = { tenant: tenant(), store: new MemoryPeopleStore(), location };
  const run = `c${Date.now().toString(36)}`;
  const created = await cpuPerRecord(requests, 100, (n) =>
    mergePeople(PersonMergeRequest.parse({ people: people(run, n, 'Bench') }), context),
  );
  const updated = await cpuPerRecord(requests, 100, (n) =>
    mergePeople(PersonMergeRequest.parse({ people: people(run, n, 'Updated') }), context),
  );
  const unchanged = await cpuPerRecord(requests, 100, (n) =>
    mergePeople(PersonMergeRequest.parse({ people: people(run, n, 'Updated') }), context),
  );
  const activities = new MemoryActivityStore();
  const recorded = await cpuPerRecord(requests, 100, (n) =>
    recordActivities(
      ActivitiesCreateRequest.parse({
        activities: Array.from({ length: 100 }, (_, i) => ({
          activity_id: 'act:cm:purchased',
          fields: { 'str::email': `${run}-${Math.max(n, 0)}-${i % 20}@compute.bench` },
          attributes: { 'str:cm:item': `Item ${i}`, 'int:cm:price': 1000 + i },
        })),
      }),
      {
        tenant: context.tenant,
        people: context.store,
        activities,
        location,
        freshDefinitions: () => Promise.resolve(context.tenant.instance.activities),
      },
    ),
  );
  const row = (measure: string, us: number, target = false) => ({
    figure: '5 compute',
    measure,
    value: `${fixed(us)} µs`,
    ...(target ? { target: `≤ ${TARGET_US} µs`, met: us <= TARGET_US } : {}),
  });
  return {
    rows: [
      row('CPU per new person (domain, in-memory store)', created, true),
      row('CPU per changed person', updated),
      row('CPU per unchanged person', unchanged),
      row('CPU per activity (existing people)', recorded),
    ],
    notes: [
      `Compute: ${requests} requests of 100 after 10 warm-up requests, in one process (process.cpuUsage), with the domain modules and in-memory stores (test/unit/people/memory-people-store.ts and an in-memory activity store): validation, planning and merging, no SDK or HTTP.`,
    ],
  };
}

if (isMain(import.meta.url)) printFigure('Figure 5: compute per record', await computeFigure());
