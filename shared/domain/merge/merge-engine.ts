import { newId } from '../ids.js';
import type { FieldValues } from '../fields/field-catalog.js';
import type { FieldValue } from '../fields/field-values.js';

/**
 * The merge mechanism people and organizations share: find each record by its key values
 * (claims), plan a create or an update, and write it conditionally, resolving lost races
 * again. What differs per kind (validation, extra effects, the table) comes in a
 * `MergeKind`; this module knows nothing about people or organizations.
 */
export type MergeStrategy = 1 | 2 | 3;
export type MergeStatus = 'created' | 'merged' | 'skipped' | 'invalid';

export interface MergeOutcome {
  id?: string;
  status: MergeStatus;
  error?: string;
}

/** A validated record of a request. */
export interface MergeRecord {
  index: number;
  values: FieldValues;
  /** Key values the record names (field → normalized value). */
  claims: Map<string, string>;
  /** The record's own ID, when merging by ID. */
  recordId?: string;
}

export interface StoredRecord {
  id: string;
  fields: Record<string, FieldValue>;
}

export interface MergeOptions {
  mergeBy: string[];
  byId: boolean;
  strategy: MergeStrategy;
  findStrategy: 0 | 1;
  skipNonExisting: boolean;
  keyFields: string[];
}

/** A key value is already claimed by someone else: the write made no change. */
export class ClaimTakenError extends Error {
  constructor(readonly fields: string[]) {
    super(`claimed by another record: ${fields.join(', ')}`);
  }
}

/** The record changed (or vanished) since it was read: the write made no change. */
export class RecordChangedError extends Error {}

/** Two writes touched the same items at once; trying again is safe. */
export class WriteConflictError extends Error {}

export interface ClaimKey {
  field: string;
  value: string;
}

export const claimId = (field: string, value: string) => `${field}\u0000${value}`;

export interface CreateResult<T> {
  record: T;
  claims: Map<string, string>;
}

export interface UpdateResult<T> {
  after: T;
  claimsAdded: Map<string, string>;
  claimsReleased: Map<string, string>;
}

/** One kind of record: how to plan its changes and where they are read and written. */
export interface MergeKind<R extends MergeRecord, T extends StoredRecord, C, U> {
  /** Member name of the request (`people`), for error messages. */
  list: string;
  /** Singular noun (`person`), for error messages. */
  noun: string;
  idField: string;
  planCreate(record: R, id: string, now: string): C;
  created(plan: C): CreateResult<T>;
  /** `undefined` when merging would change nothing (no write is made). */
  planUpdate(before: T, record: R, now: string): U | undefined;
  updated(plan: U): UpdateResult<T>;
  findClaimOwners(keys: ClaimKey[], consistent?: boolean): Promise<Map<string, string>>;
  read(ids: string[], consistent?: boolean): Promise<Map<string, T>>;
  create(plan: C): Promise<void>;
  update(plan: U): Promise<void>;
}

/** How many records of one request are written at once. */
const WRITE_CONCURRENCY = 16;
/** How often one record is re-resolved after losing a race before it is reported invalid. */
const MAX_ATTEMPTS = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Which record a request record names, given who owns which key value. */
export function findRecordId(
  record: MergeRecord,
  options: MergeOptions,
  owner: (fieldId: string, value: string) => string | undefined,
): string | undefined {
  if (options.byId) return record.recordId;
  const [first, second] = options.mergeBy;
  const firstValue = first ? record.claims.get(first) : undefined;
  if (first && firstValue !== undefined) {
    const found = owner(first, firstValue);
    // find_strategy 1: a value given for the first field that matches nobody does not fall through.
    if (found !== undefined || options.findStrategy === 1) return found;
  }
  const secondValue = second ? record.claims.get(second) : undefined;
  return second && secondValue !== undefined ? owner(second, secondValue) : undefined;
}

/**
 * Merges validated records: reads every key claim and matched record in batches, then
 * writes each record in its own transaction with bounded concurrency. Records that share a
 * key value or a record are applied in their order, one after the other. A lost race
 * (someone else claimed the key first, or changed the record) is resolved again.
 */
export async function mergeRecords<R extends MergeRecord, T extends StoredRecord, C, U>(
  kind: MergeKind<R, T, C, U>,
  records: R[],
  options: MergeOptions,
  now: () => Date,
): Promise<Map<number, MergeOutcome>> {
  const state = new MergeState<T>();
  await readAhead(kind, records, options, state);
  const outcomes = new Map<number, MergeOutcome>();
  const merger = new RecordMerger(kind, state, options, now);
  const queue = groupByShared(records, options, state);
  const workers = Array.from({ length: Math.min(WRITE_CONCURRENCY, queue.length) }, async () => {
    for (let group = queue.shift(); group; group = queue.shift()) {
      for (const record of group) outcomes.set(record.index, await merger.merge(record));
    }
  });
  await Promise.all(workers);
  return outcomes;
}

/**
 * What one request knows: who owns which key value and what each record looks like. Reads
 * fill it in batches up front; successful writes keep it current, so records of the same
 * request that share a key see each other's effects.
 */
class MergeState<T> {
  readonly owners = new Map<string, string>();
  readonly records = new Map<string, T>();

  owner = (field: string, value: string): string | undefined =>
    this.owners.get(claimId(field, value));
}

async function readAhead<R extends MergeRecord, T extends StoredRecord>(
  kind: MergeKind<R, T, unknown, unknown>,
  records: R[],
  options: MergeOptions,
  state: MergeState<T>,
): Promise<void> {
  const keys = new Map<string, ClaimKey>();
  for (const record of records) {
    for (const [field, value] of record.claims) keys.set(claimId(field, value), { field, value });
  }
  for (const [id, owner] of await kind.findClaimOwners([...keys.values()]))
    state.owners.set(id, owner);
  const ids = new Set<string>();
  for (const record of records) {
    const id = findRecordId(record, options, state.owner);
    if (id) ids.add(id);
  }
  for (const [id, stored] of await kind.read([...ids])) state.records.set(id, stored);
}

/** Records connected by a key value or a matched record, in request order (union-find). */
function groupByShared<R extends MergeRecord>(
  records: R[],
  options: MergeOptions,
  state: MergeState<unknown>,
) {
  const parent = records.map((_, i) => i);
  const root = (i: number): number => {
    let node = i;
    while (parent[node] !== node) node = parent[node] ?? node;
    return node;
  };
  const firstByKey = new Map<string, number>();
  records.forEach((record, i) => {
    const keys = [...record.claims].map(([field, value]) => claimId(field, value));
    const id = findRecordId(record, options, state.owner);
    if (id) keys.push(`record\u0000${id}`);
    for (const key of keys) {
      const other = firstByKey.get(key);
      if (other === undefined) firstByKey.set(key, i);
      else parent[root(i)] = root(other);
    }
  });
  const groups = new Map<number, R[]>();
  records.forEach((record, i) => {
    const group = groups.get(root(i)) ?? [];
    group.push(record);
    groups.set(root(i), group);
  });
  return [...groups.values()];
}

class RecordMerger<R extends MergeRecord, T extends StoredRecord, C, U> {
  constructor(
    private readonly kind: MergeKind<R, T, C, U>,
    private readonly state: MergeState<T>,
    private readonly options: MergeOptions,
    private readonly now: () => Date,
  ) {}

  async merge(record: R): Promise<MergeOutcome> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      if (attempt > 0) await sleep(Math.random() * 20 * 2 ** Math.min(attempt, 5));
      try {
        return await this.attempt(record);
      } catch (error) {
        if (error instanceof ClaimTakenError) await this.refreshClaims(record);
        else if (error instanceof RecordChangedError || error instanceof WriteConflictError) {
          await this.refreshRecord(record);
        } else throw error;
      }
    }
    return {
      status: 'invalid',
      error: `${this.kind.list}[${record.index}]: the ${this.kind.noun} kept changing concurrently; try again`,
    };
  }

  private conflictOf(record: R, claims: Map<string, string>, self?: string) {
    for (const [field, value] of claims) {
      const owner = this.state.owner(field, value);
      if (owner !== undefined && owner !== self) {
        return `${this.kind.list}[${record.index}].fields.${field}: the value "${value}" already belongs to another ${this.kind.noun} (${owner})`;
      }
    }
    return undefined;
  }

  private async attempt(record: R): Promise<MergeOutcome> {
    const { kind, options, state } = this;
    const id = findRecordId(record, options, state.owner);
    const timestamp = this.now().toISOString();

    if (id === undefined || (options.byId && !state.records.has(id))) {
      if (options.skipNonExisting) return { status: 'skipped' };
      if (options.byId) {
        return {
          status: 'invalid',
          error: `${kind.list}[${record.index}].fields.${kind.idField}: no ${kind.noun} has this ID`,
        };
      }
      const plan = kind.planCreate(record, newId(), timestamp);
      const created = kind.created(plan);
      const conflict = this.conflictOf(record, created.claims);
      if (conflict) return { status: 'invalid', error: conflict };
      await kind.create(plan);
      for (const [field, value] of created.claims)
        state.owners.set(claimId(field, value), created.record.id);
      state.records.set(created.record.id, created.record);
      return { id: created.record.id, status: 'created' };
    }

    let stored = state.records.get(id);
    if (!stored) {
      stored = (await kind.read([id], true)).get(id);
      if (!stored) throw new RecordChangedError();
      state.records.set(id, stored);
    }
    if (options.strategy === 3) return { id, status: 'skipped' };
    const plan = kind.planUpdate(stored, record, timestamp);
    if (!plan) return { id, status: 'merged' };
    const updated = kind.updated(plan);
    const conflict = this.conflictOf(record, updated.claimsAdded, id);
    if (conflict) return { status: 'invalid', error: conflict };
    await kind.update(plan);
    for (const [field, value] of updated.claimsReleased) state.owners.delete(claimId(field, value));
    for (const [field, value] of updated.claimsAdded) state.owners.set(claimId(field, value), id);
    state.records.set(id, updated.after);
    return { id, status: 'merged' };
  }

  private async refreshClaims(record: R): Promise<void> {
    const keys = [...record.claims].map(([field, value]) => ({ field, value }));
    const owners = await this.kind.findClaimOwners(keys, true);
    for (const { field, value } of keys) {
      const id = claimId(field, value);
      const owner = owners.get(id);
      if (owner) this.state.owners.set(id, owner);
      else this.state.owners.delete(id);
    }
    await this.refreshRecord(record);
  }

  private async refreshRecord(record: R): Promise<void> {
    const id = findRecordId(record, this.options, this.state.owner);
    if (!id) return;
    const fresh = (await this.kind.read([id], true)).get(id);
    if (fresh) this.state.records.set(id, fresh);
    else this.state.records.delete(id);
  }
}
