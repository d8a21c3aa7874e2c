import { ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import {
  checkAddressLookups,
  locationFields,
  resolveLocation,
  type LocationServices,
} from '../location.js';
import type { Tenant } from '../tenancy.js';
import {
  findPersonId,
  planCreate,
  planUpdate,
  prepareRecord,
  type InvalidRecord,
  type PreparedRecord,
} from './merge-plan.js';
import { mergeOptions, type MergeOptions, type PersonMergeRequest } from './merge-request.js';
import {
  claimId,
  ClaimTakenError,
  PersonChangedError,
  WriteConflictError,
  type ClaimKey,
  type PeopleStore,
} from './people-store.js';
import type { Person } from './person.js';

export type MergeStatus = 'created' | 'merged' | 'skipped' | 'invalid';

export interface MergeResult {
  person_id?: string;
  status: MergeStatus;
  error?: string;
}

/** How many records of one request are written at once. */
const WRITE_CONCURRENCY = 16;
/** How often one record is re-resolved after losing a race before it is reported invalid. */
const MAX_ATTEMPTS = 10;

/**
 * What one request knows: who owns which key value and what each person looks like. Reads
 * fill it in batches up front; successful writes keep it current, so records of the same
 * request that share a key see each other's effects.
 */
class MergeState {
  readonly owners = new Map<string, string>();
  readonly people = new Map<string, Person>();

  owner(field: string, value: string): string | undefined {
    return this.owners.get(claimId(field, value));
  }
}

export interface MergeContext {
  tenant: Tenant;
  store: PeopleStore;
  location: LocationServices;
  now?: () => Date;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `POST /v1/person/merge`: validates every record before writing anything, reads every key
 * claim and matched person in batches, then writes each record in its own transaction,
 * with bounded concurrency. Records that share a key value or a person are applied in
 * their order, one after the other. A lost race (someone else claimed the email first, or
 * changed the person) is resolved again, so the caller sees `merged`, not an error.
 */
export async function mergePeople(
  request: PersonMergeRequest,
  { tenant, store, location, now = () => new Date() }: MergeContext,
): Promise<MergeResult[]> {
  const options = mergeOptions(request, tenant);
  const instanceId = tenant.instance.id;
  const records = request.people.map((raw, index) => prepareRecord(raw, index, options, tenant));
  const valid = records.filter((record): record is PreparedRecord => 'values' in record);
  if (valid.length === 0) {
    const details = records.map((record) => ({
      index: record.index,
      status: 'invalid' as const,
      error: (record as InvalidRecord).error,
    }));
    throw new ValidationError(
      `No person was merged: every record is invalid (${details[0]?.error ?? ''})`,
      details,
    );
  }

  checkAddressLookups(
    valid.map((record) => record.location),
    tenant.instance.plan,
  );
  await applyLocations(valid, instanceId, location, now());

  const state = new MergeState();
  await readAhead(instanceId, valid, options, store, state);

  const results: MergeResult[] = records.map((record) =>
    'error' in record ? { status: 'invalid', error: record.error } : { status: 'invalid' },
  );
  const groups = groupByShared(valid, options, state);
  const isStored = (fieldId: string) => tenant.personFields.get(fieldId)?.stored ?? false;
  const merger = new RecordMerger(tenant, store, state, options, isStored, now);
  const queue = [...groups];
  const workers = Array.from({ length: Math.min(WRITE_CONCURRENCY, queue.length) }, async () => {
    for (let group = queue.shift(); group; group = queue.shift()) {
      for (const record of group) results[record.index] = await merger.merge(record);
    }
  });
  await Promise.all(workers);

  const applied = valid.filter((record) => results[record.index]?.status !== 'invalid');
  const tags = new Set(applied.flatMap((record) => record.tags));
  if (tags.size > 0) await store.ensureTags(instanceId, [...tags]);
  return results;
}

/**
 * Resolves each record's location and adds the city, region and country it names to the
 * record's fields, where the record does not set them itself.
 */
async function applyLocations(
  records: PreparedRecord[],
  instanceId: string,
  services: LocationServices,
  now: Date,
): Promise<void> {
  const pending = records.filter((record) => record.location);
  const workers = Array.from({ length: Math.min(8, pending.length) }, async () => {
    for (let record = pending.shift(); record; record = pending.shift()) {
      const resolved = await resolveLocation(record.location, instanceId, services, now);
      for (const [field, value] of Object.entries(locationFields(resolved))) {
        if (!(field in record.values)) record.values[field] = value;
      }
    }
  });
  await Promise.all(workers);
}

async function readAhead(
  instanceId: string,
  records: PreparedRecord[],
  options: MergeOptions,
  store: PeopleStore,
  state: MergeState,
): Promise<void> {
  const keys = new Map<string, ClaimKey>();
  for (const record of records) {
    for (const [field, value] of record.claims) keys.set(claimId(field, value), { field, value });
  }
  const owners = await store.findClaimOwners(instanceId, [...keys.values()]);
  for (const [id, owner] of owners) state.owners.set(id, owner);
  const ids = new Set<string>();
  for (const record of records) {
    const id = findPersonId(record, options, (f, v) => state.owner(f, v));
    if (id) ids.add(id);
  }
  const people = await store.getPeople(instanceId, [...ids]);
  for (const [id, person] of people) state.people.set(id, person);
}

/** Records connected by a key value or a matched person, in request order (union-find). */
function groupByShared(records: PreparedRecord[], options: MergeOptions, state: MergeState) {
  const parent = records.map((_, i) => i);
  const root = (i: number): number => {
    let node = i;
    while (parent[node] !== node) node = parent[node] ?? node;
    return node;
  };
  const firstByKey = new Map<string, number>();
  records.forEach((record, i) => {
    const keys = [...record.claims].map(([field, value]) => claimId(field, value));
    const person = findPersonId(record, options, (f, v) => state.owner(f, v));
    if (person) keys.push(`person\u0000${person}`);
    for (const key of keys) {
      const other = firstByKey.get(key);
      if (other === undefined) firstByKey.set(key, i);
      else parent[root(i)] = root(other);
    }
  });
  const groups = new Map<number, PreparedRecord[]>();
  records.forEach((record, i) => {
    const group = groups.get(root(i)) ?? [];
    group.push(record);
    groups.set(root(i), group);
  });
  return [...groups.values()];
}

class RecordMerger {
  constructor(
    private readonly tenant: Tenant,
    private readonly store: PeopleStore,
    private readonly state: MergeState,
    private readonly options: MergeOptions,
    private readonly isStored: (fieldId: string) => boolean,
    private readonly now: () => Date,
  ) {}

  private get instanceId() {
    return this.tenant.instance.id;
  }

  async merge(record: PreparedRecord): Promise<MergeResult> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      if (attempt > 0) await sleep(Math.random() * 20 * 2 ** Math.min(attempt, 5));
      try {
        return await this.attempt(record);
      } catch (error) {
        if (error instanceof ClaimTakenError) await this.refreshClaims(record);
        else if (error instanceof PersonChangedError || error instanceof WriteConflictError) {
          await this.refreshPeople(record);
        } else throw error;
      }
    }
    return {
      status: 'invalid',
      error: `people[${record.index}]: the person kept changing concurrently; try again`,
    };
  }

  private conflictOf(record: PreparedRecord, claims: Map<string, string>, self?: string) {
    for (const [field, value] of claims) {
      const owner = this.state.owner(field, value);
      if (owner !== undefined && owner !== self) {
        return `people[${record.index}].fields.${field}: the value "${value}" already belongs to another person (${owner})`;
      }
    }
    return undefined;
  }

  private async attempt(record: PreparedRecord): Promise<MergeResult> {
    const { options, state } = this;
    const personId = findPersonId(record, options, (f, v) => state.owner(f, v));
    const timestamp = this.now().toISOString();

    if (personId === undefined || (options.byId && !state.people.has(personId))) {
      if (options.skipNonExisting) return { status: 'skipped' };
      if (options.byId) {
        return {
          status: 'invalid',
          error: `people[${record.index}].fields.str::person_id: no person has this ID`,
        };
      }
      const plan = planCreate(record, newId(), timestamp, this.isStored);
      const conflict = this.conflictOf(record, plan.claims);
      if (conflict) return { status: 'invalid', error: conflict };
      await this.store.createPerson(this.instanceId, plan, this.tenant.dataSource.name);
      for (const [field, value] of plan.claims)
        state.owners.set(claimId(field, value), plan.person.id);
      state.people.set(plan.person.id, plan.person);
      return { person_id: plan.person.id, status: 'created' };
    }

    let person = state.people.get(personId);
    if (!person) {
      person = (await this.store.getPeople(this.instanceId, [personId], true)).get(personId);
      if (!person) throw new PersonChangedError();
      state.people.set(personId, person);
    }
    if (options.strategy === 3) return { person_id: personId, status: 'skipped' };
    const plan = planUpdate(
      person,
      record,
      options.strategy,
      options.keyFields,
      timestamp,
      this.isStored,
    );
    if (!plan) return { person_id: personId, status: 'merged' };
    const conflict = this.conflictOf(record, plan.claimsAdded, personId);
    if (conflict) return { status: 'invalid', error: conflict };
    await this.store.updatePerson(this.instanceId, plan, this.tenant.dataSource.name);
    for (const [field, value] of plan.claimsReleased) state.owners.delete(claimId(field, value));
    for (const [field, value] of plan.claimsAdded)
      state.owners.set(claimId(field, value), personId);
    state.people.set(personId, plan.after);
    return { person_id: personId, status: 'merged' };
  }

  private async refreshClaims(record: PreparedRecord): Promise<void> {
    const keys = [...record.claims].map(([field, value]) => ({ field, value }));
    const owners = await this.store.findClaimOwners(this.instanceId, keys, true);
    for (const { field, value } of keys) {
      const id = claimId(field, value);
      const owner = owners.get(id);
      if (owner) this.state.owners.set(id, owner);
      else this.state.owners.delete(id);
    }
    await this.refreshPeople(record);
  }

  private async refreshPeople(record: PreparedRecord): Promise<void> {
    const id = findPersonId(record, this.options, (f, v) => this.state.owner(f, v));
    if (!id) return;
    const fresh = await this.store.getPeople(this.instanceId, [id], true);
    const person = fresh.get(id);
    if (person) this.state.people.set(id, person);
    else this.state.people.delete(id);
  }
}
