import { ServiceUnavailableError, ValidationError, type ErrorDetail } from '../errors.js';
import { newId } from '../ids.js';
import type { FieldValues } from '../fields/field-catalog.js';
import type { FieldValue } from '../fields/field-values.js';
import { runBounded } from '../../lib/bounded.js';
import { normalizeKey } from './field-changes.js';
import { backoffMs, canWait, sleep } from '../../lib/time-budget.js';

/**
 * The merge mechanism people and organizations share: find each record by its key values
 * (claims), plan a create or an update, and write it conditionally, resolving lost races
 * again. What differs per kind (validation, extra effects, the table) comes in a
 * `MergeKind`; this module knows nothing about people or organizations.
 *
 * Every read that decides a write is strongly consistent (claims and records), and every
 * update is conditioned on the key value the record was found by, so a claim that moved
 * between the read and the write makes the write fail and the record be resolved again.
 */
export type MergeStrategy = 1 | 2 | 3;
/**
 * How two `merge_by` fields find a record (API.md, find_strategy): 0 any (the first, else the
 * second), 1 the second only when the first is not given, 2 all (a record holding every
 * value given).
 */
export type FindStrategy = 0 | 1 | 2;
/** `suppressed`: a person not created because its address is on the suppression list. */
export type MergeStatus = 'created' | 'merged' | 'skipped' | 'invalid' | 'suppressed';
/** The statuses of merges that name no suppression list (organizations, sends, activities). */
export type PlainMergeStatus = Exclude<MergeStatus, 'suppressed'>;

/**
 * The status of a merge that names no suppression list: never `suppressed`, which only
 * `suppressionField` produces; were it to appear, the record was not written (`invalid`).
 */
export function plainStatus(status: MergeStatus): PlainMergeStatus {
  return status === 'suppressed' ? 'invalid' : status;
}

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
  /**
   * The queued request's record that created it, where its store says so: a record whose
   * marker is put after its transaction (`PeopleStore.createPerson`) is known by it.
   */
  origin?: RecordOrigin;
}

export interface RecordOrigin {
  requestId: string;
  index: number;
}

export interface MergeOptions {
  mergeBy: string[];
  byId: boolean;
  strategy: MergeStrategy;
  findStrategy: FindStrategy;
  skipNonExisting: boolean;
  /** Fields whose values are claimed (unique per instance) when records are written. */
  keyFields: string[];
  /** A queued request's ledger: each record takes effect once, however often it is applied. */
  ledger?: RecordLedger;
  /** People: the field whose address must not be on the suppression list to be merged. */
  suppressionField?: string;
}

/**
 * Exactly-once effect for a queued (asynchronous) request, which a queue may deliver more
 * than once: each record's outcome is recorded under the request's ID and the record's
 * index, in the same transaction as the record's write (`marker`), or on its own when the
 * record wrote nothing. Records with an outcome are not applied again; their outcome is the
 * answer. A write that finds its outcome already recorded (a concurrent duplicate delivery)
 * changes nothing (`AlreadyAppliedError`) and answers with that outcome.
 */
export interface RecordLedger {
  readonly requestId: string;
  /** Outcomes already recorded, by record index. */
  recorded(): Promise<Map<number, MergeOutcome>>;
  /**
   * The outcomes earlier deliveries of the request recorded, as this delivery found them: read
   * once (the first call; later calls answer the same), and not at all on the request's first
   * delivery, which nothing can have come before. Records applied since (by this delivery,
   * or a duplicate running beside it) are for `recorded`; their own writes refuse a second
   * application either way.
   */
  recordedBefore(): Promise<Map<number, MergeOutcome>>;
  /**
   * Records the outcomes of records that wrote nothing (a record's first note wins, and its
   * own marker wins over any note) and answers what stands for them: a duplicate delivery
   * running beside this one may have applied a record this one then found nothing to do for.
   * On a request's first delivery the ledger is not read back (no delivery came before it):
   * the answer is the outcomes given, and `unconfirmed` says so.
   */
  note(outcomes: [number, MergeOutcome][]): Promise<Map<number, MergeOutcome>>;
  /**
   * The outcomes `note` answered were not read back, so they stand only if no other delivery
   * started after this one: the request's answer is then kept only on that condition
   * (`RequestStore.finish`), and built again from the whole ledger otherwise.
   */
  readonly unconfirmed?: boolean;
  /**
   * People created under this ledger whose own items name the request (`origin_request`):
   * erasing one finds the request's kept answer through the person, so the answer needs no
   * reference item for them (`RequestStore.finish`).
   */
  readonly carried?: Set<string>;
  /** The outcome recorded for a record. */
  outcomeOf(index: number): Promise<MergeOutcome | undefined>;
}

/** What a store writes with a record so that its outcome is recorded with its effect. */
export interface RecordMarker {
  requestId: string;
  index: number;
  outcome: MergeOutcome;
}

/** The record's outcome was already recorded (another delivery applied it): nothing changed. */
export class AlreadyAppliedError extends Error {}

/** A key value is already claimed by someone else: the write made no change. */
export class ClaimTakenError extends Error {
  constructor(readonly fields: string[]) {
    super(`claimed by another record: ${fields.join(', ')}`);
  }
}

/**
 * A claim the update meant to release belongs to another record (two records held the value
 * before the field became a key): the write made no change; it is planned again without it.
 */
export class ClaimNotHeldError extends Error {
  constructor(readonly claims: ClaimKey[]) {
    super(`claims held by another record: ${claims.map((c) => c.field).join(', ')}`);
  }
}

/** The record changed (or vanished) since it was read: the write made no change. */
export class RecordChangedError extends Error {}

/** Two writes touched the same items at once; trying again is safe. */
export class WriteConflictError extends Error {}

/** The store refused the record for its size (DynamoDB's 400 KB item limit). */
export class RecordTooLargeError extends Error {}

export interface ClaimKey {
  field: string;
  value: string;
}

export const claimId = (field: string, value: string) => `${field}\u0000${value}`;

/**
 * Who owned a key value when an earlier request of this container read or wrote its claim:
 * a hint, never an answer. A hinted owner is believed only once its record, read strongly
 * consistent as every matched record is, still holds the value: the record and its claims
 * change in one transaction, so a record holding a value of a field every held value of
 * which is claimed is the claim's owner at the moment of that read, which is what reading
 * the claim first would have found. A hint the record contradicts is dropped and the claim
 * read. Hints are kept (and given) only for such fields: `set` ignores the others.
 */
export interface ClaimHints {
  get(key: ClaimKey): string | undefined;
  set(key: ClaimKey, owner: string): void;
  delete(key: ClaimKey): void;
}

export interface CreateResult<T> {
  record: T;
  claims: Map<string, string>;
}

export interface UpdateResult<T> {
  after: T;
  claimsAdded: Map<string, string>;
  /** The engine removes values it knows another record holds before the plan is written. */
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
  /**
   * `undefined` when merging would change nothing (no write is made). `guard` lists fields
   * whose current values the write must be conditioned on (the key the record was found by).
   */
  planUpdate(before: T, record: R, now: string, guard: string[]): U | undefined;
  updated(plan: U): UpdateResult<T>;
  /** Why a record in this state would be over the size budget, if it would. */
  overBudget(record: T, index: number): string | undefined;
  /** Why the stored record cannot be merged into (it is archived), if it cannot. */
  refuse?(stored: T, index: number): string | undefined;
  findClaimOwners(keys: ClaimKey[], consistent?: boolean): Promise<Map<string, string>>;
  read(ids: string[], consistent?: boolean): Promise<Map<string, T>>;
  /**
   * Owners of key values found by earlier requests (`ClaimHints`), for the fields whose every
   * held value is claimed by its holder. Without it every claim is read.
   */
  hints?: ClaimHints;
  /** Writes a new record (with its marker, for a queued request). */
  create(plan: C, marker?: RecordMarker): Promise<void>;
  update(plan: U, marker?: RecordMarker): Promise<void>;
  /**
   * How many records are written at once (default `WRITE_CONCURRENCY`): a store that shares
   * transactions between the records in flight (people) takes the whole request at once.
   */
  writeConcurrency?: number;
}

/**
 * A merge that stopped part-way: the store stayed unavailable, or something unexpected
 * failed. `outcomes` holds the records applied before it stopped; nothing runs any more.
 */
export class IncompleteMergeError extends Error {
  constructor(
    readonly outcomes: Map<number, MergeOutcome>,
    override readonly cause: unknown,
  ) {
    super('the merge stopped part-way');
  }
}

/** How many records of one request are written at once, unless the kind says otherwise. */
const WRITE_CONCURRENCY = 16;
/**
 * How often one record is re-resolved after losing a race at most: the time budget bounds it
 * first (50 merges of one person at once each win in turn: on a slow store the last could
 * lose 20 races while the budget still had seconds left).
 */
const MAX_ATTEMPTS = 100;

/** Which record a request record names, and the key fields it was found by. */
export function findRecordMatch(
  record: MergeRecord,
  options: MergeOptions,
  owner: (fieldId: string, value: string) => string | undefined,
): { id: string; fields: string[] } | undefined {
  if (options.byId) {
    return record.recordId === undefined ? undefined : { id: record.recordId, fields: [] };
  }
  if (options.findStrategy === 2) return findHoldingAll(record, options.mergeBy, owner);
  const [first, second] = options.mergeBy;
  const firstValue = first ? record.claims.get(first) : undefined;
  if (first && firstValue !== undefined) {
    const found = owner(first, firstValue);
    if (found !== undefined) return { id: found, fields: [first] };
    // find_strategy 1: a value given for the first field that matches nobody does not fall through.
    if (options.findStrategy === 1) return undefined;
  }
  const secondValue = second ? record.claims.get(second) : undefined;
  if (!second || secondValue === undefined) return undefined;
  const found = owner(second, secondValue);
  return found === undefined ? undefined : { id: found, fields: [second] };
}

/**
 * find_strategy 2 ("all"): the record that holds every `merge_by` value the request record
 * gives (one value given: its holder). Values held by different records, or some held and
 * some by nobody, match nothing; a record created then would take values others hold, so
 * the merge refuses it (`conflictOf`) rather than pick one of them.
 */
function findHoldingAll(
  record: MergeRecord,
  mergeBy: string[],
  owner: (fieldId: string, value: string) => string | undefined,
): { id: string; fields: string[] } | undefined {
  const given = mergeBy.filter((field) => record.claims.has(field));
  const holders = new Set(given.map((field) => owner(field, record.claims.get(field) ?? '')));
  const [holder] = holders;
  if (given.length === 0 || holders.size !== 1 || holder === undefined) return undefined;
  return { id: holder, fields: given };
}

/** Which record a request record names, given who owns which key value. */
export function findRecordId(
  record: MergeRecord,
  options: MergeOptions,
  owner: (fieldId: string, value: string) => string | undefined,
): string | undefined {
  return findRecordMatch(record, options, owner)?.id;
}

/**
 * Merges validated records: reads every key claim and matched record in batches (strongly
 * consistent), then writes each record in its own transaction with bounded concurrency.
 * Records that share a key value or a record are applied in their order, one after the
 * other. A lost race (someone else claimed the key first, or changed the record) is
 * resolved again. If the store stays unavailable (or anything unexpected fails), no new
 * record starts, the ones in flight finish, and `IncompleteMergeError` reports what was
 * applied.
 */
export async function mergeRecords<R extends MergeRecord, T extends StoredRecord, C, U>(
  kind: MergeKind<R, T, C, U>,
  records: R[],
  options: MergeOptions,
  now: () => Date,
): Promise<Map<number, MergeOutcome>> {
  const state = new MergeState<T>();
  const outcomes = new Map<number, MergeOutcome>();
  let pending = records;
  try {
    if (options.ledger) {
      // Records an earlier delivery of the request applied answer with what they did.
      const recorded = await options.ledger.recordedBefore();
      for (const [index, outcome] of recorded) outcomes.set(index, outcome);
      pending = records.filter((record) => !recorded.has(record.index));
    }
    await readAhead(kind, pending, options, state);
  } catch (error) {
    throw new IncompleteMergeError(outcomes, error);
  }
  const merger = new RecordMerger(kind, state, options, now);
  const groups = groupByShared(pending, options, state);
  const unwritten: [number, MergeOutcome][] = [];
  const concurrency = kind.writeConcurrency ?? WRITE_CONCURRENCY;
  const { failure } = await runBounded(groups, concurrency, async (group) => {
    for (const record of group) {
      const { outcome, wrote } = await merger.merge(record);
      outcomes.set(record.index, outcome);
      if (!wrote) unwritten.push([record.index, outcome]);
    }
  });
  if (failure) throw new IncompleteMergeError(outcomes, failure.error);
  if (options.ledger && unwritten.length > 0) {
    try {
      // A duplicate delivery running at the same time may have applied some of these records
      // (this one then found nothing to do): the outcome of the write is the answer.
      for (const [index, outcome] of await options.ledger.note(unwritten)) {
        outcomes.set(index, outcome);
      }
    } catch (error) {
      throw new IncompleteMergeError(outcomes, error);
    }
  }
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
  const { hints } = kind;
  const keys = new Map<string, ClaimKey>();
  for (const record of records) {
    for (const [field, value] of record.claims) keys.set(claimId(field, value), { field, value });
  }
  // Hinted owners stand in for their claims until their records say otherwise.
  const hinted = new Map<string, ClaimKey>();
  const unread: ClaimKey[] = [];
  for (const [id, key] of keys) {
    const owner = hints?.get(key);
    if (owner === undefined) unread.push(key);
    else {
      hinted.set(id, key);
      state.owners.set(id, owner);
    }
  }
  await readClaims(kind, unread, state);
  const read = new Set<string>();
  const readRecords = async () => {
    const ids = new Set<string>();
    for (const record of records) {
      const id = findRecordId(record, options, state.owner);
      if (id && !read.has(id)) ids.add(id);
    }
    // A hinted owner is read even when it matches nothing, to check the hint.
    for (const id of hinted.keys()) {
      const owner = state.owners.get(id);
      if (owner !== undefined && !read.has(owner)) ids.add(owner);
    }
    if (ids.size === 0) return;
    for (const id of ids) read.add(id);
    for (const [id, stored] of await kind.read([...ids], true)) state.records.set(id, stored);
  };
  await readRecords();
  if (!hints || hinted.size === 0) return;
  const contradicted: ClaimKey[] = [];
  for (const [id, key] of hinted) {
    const stored = state.records.get(state.owners.get(id) ?? '');
    const held = stored?.fields[key.field];
    if (held !== undefined && normalizeKey(key.field, held) === key.value) continue;
    contradicted.push(key);
    hints.delete(key);
    state.owners.delete(id);
  }
  if (contradicted.length === 0) return;
  await readClaims(kind, contradicted, state);
  await readRecords();
}

/** Reads claims (strongly consistent) into the state and the hints. */
async function readClaims<T>(
  kind: Pick<MergeKind<MergeRecord, StoredRecord, unknown, unknown>, 'findClaimOwners' | 'hints'>,
  keys: ClaimKey[],
  state: MergeState<T>,
): Promise<void> {
  if (keys.length === 0) return;
  const owners = await kind.findClaimOwners(keys, true);
  for (const key of keys) {
    const id = claimId(key.field, key.value);
    const owner = owners.get(id);
    if (owner === undefined) {
      state.owners.delete(id);
      kind.hints?.delete(key);
    } else {
      state.owners.set(id, owner);
      kind.hints?.set(key, owner);
    }
  }
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

  /**
   * One record's outcome; throws when the store stays unavailable, when the record keeps
   * losing races through the time budget, or when something is broken.
   */
  async merge(record: R): Promise<{ outcome: MergeOutcome; wrote: boolean }> {
    // What a lost race left to read again: read after the wait, not before it, so that the
    // next write is conditioned on the record as it is then (read before, every write made
    // during the wait would make it lose again).
    let reread: (() => Promise<void>) | undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      if (attempt > 0) {
        const wait = backoffMs(attempt, 10, 500);
        if (!canWait(wait)) break;
        await sleep(wait);
      }
      if (reread) {
        await reread();
        reread = undefined;
      }
      try {
        return await this.attempt(record);
      } catch (error) {
        if (error instanceof RecordTooLargeError) {
          return {
            outcome: {
              status: 'invalid',
              error: `${this.kind.list}[${record.index}]: the ${this.kind.noun} would be larger than the store allows (400 KB); send fewer or shorter values`,
            },
            wrote: false,
          };
        }
        if (error instanceof AlreadyAppliedError) {
          const recorded = await this.options.ledger?.outcomeOf(record.index);
          if (recorded) return { outcome: recorded, wrote: true };
          throw error;
        }
        if (error instanceof ClaimNotHeldError) {
          const { claims } = error;
          reread = () => this.refreshClaims(claims);
        } else if (
          error instanceof ClaimTakenError ||
          error instanceof RecordChangedError ||
          error instanceof WriteConflictError
        ) {
          reread = () => this.refresh(record);
        } else throw error;
      }
    }
    // Not the record's fault: the request stops (503) and says what it applied.
    throw new ServiceUnavailableError(
      `${this.kind.list}[${record.index}]: the ${this.kind.noun} kept changing concurrently; try again shortly`,
    );
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

  private marker(index: number, outcome: MergeOutcome): RecordMarker | undefined {
    const ledger = this.options.ledger;
    return ledger ? { requestId: ledger.requestId, index, outcome } : undefined;
  }

  private async attempt(record: R): Promise<{ outcome: MergeOutcome; wrote: boolean }> {
    const { kind, options, state } = this;
    const unwritten = (outcome: MergeOutcome) => ({ outcome, wrote: false });
    const match = findRecordMatch(record, options, state.owner);
    const id = match?.id;
    const timestamp = this.now().toISOString();

    if (id === undefined || (options.byId && !state.records.has(id))) {
      if (options.skipNonExisting) return unwritten({ status: 'skipped' });
      if (options.byId) {
        return unwritten({
          status: 'invalid',
          error: `${kind.list}[${record.index}].fields.${kind.idField}: no ${kind.noun} has this ID`,
        });
      }
      const plan = kind.planCreate(record, newId(), timestamp);
      const created = kind.created(plan);
      const conflict = this.conflictOf(record, created.claims);
      if (conflict) {
        const why =
          options.findStrategy === 2 && options.mergeBy.length > 1
            ? ` (find_strategy 2 matches only a ${kind.noun} holding every merge_by value the record gives)`
            : '';
        return unwritten({ status: 'invalid', error: `${conflict}${why}` });
      }
      const tooLarge = kind.overBudget(created.record, record.index);
      if (tooLarge) return unwritten({ status: 'invalid', error: tooLarge });
      const outcome: MergeOutcome = { id: created.record.id, status: 'created' };
      await kind.create(plan, this.marker(record.index, outcome));
      for (const [field, value] of created.claims) {
        state.owners.set(claimId(field, value), created.record.id);
        kind.hints?.set({ field, value }, created.record.id);
      }
      state.records.set(created.record.id, created.record);
      return { outcome, wrote: true };
    }

    let stored = state.records.get(id);
    if (!stored) {
      stored = (await kind.read([id], true)).get(id);
      if (!stored) throw new RecordChangedError();
      state.records.set(id, stored);
    }
    // This very record created it (an earlier delivery, or a duplicate beside this one, whose
    // marker was not in the ledger yet): that is its outcome, and nothing is applied again.
    const { origin } = stored;
    if (origin && origin.requestId === options.ledger?.requestId && origin.index === record.index) {
      return unwritten({ id, status: 'created' });
    }
    // An archived record keeps its keys: a record that finds it is refused, never re-created.
    const refused = kind.refuse?.(stored, record.index);
    if (refused) return unwritten({ status: 'invalid', error: refused });
    if (options.strategy === 3) return unwritten({ id, status: 'skipped' });
    const plan = kind.planUpdate(stored, record, timestamp, match?.fields ?? []);
    if (!plan) return unwritten({ id, status: 'merged' });
    const updated = kind.updated(plan);
    const conflict = this.conflictOf(record, updated.claimsAdded, id);
    if (conflict) return unwritten({ status: 'invalid', error: conflict });
    const tooLarge = kind.overBudget(updated.after, record.index);
    if (tooLarge) return unwritten({ status: 'invalid', error: tooLarge });
    for (const [field, value] of [...updated.claimsReleased]) {
      const owner = state.owner(field, value);
      if (owner !== undefined && owner !== id) updated.claimsReleased.delete(field);
    }
    const outcome: MergeOutcome = { id, status: 'merged' };
    await kind.update(plan, this.marker(record.index, outcome));
    for (const [field, value] of updated.claimsReleased) {
      state.owners.delete(claimId(field, value));
      this.kind.hints?.delete({ field, value });
    }
    for (const [field, value] of updated.claimsAdded) {
      state.owners.set(claimId(field, value), id);
      this.kind.hints?.set({ field, value }, id);
    }
    state.records.set(id, updated.after);
    return { outcome, wrote: true };
  }

  private async refreshClaims(keys: ClaimKey[]): Promise<void> {
    await readClaims(this.kind, keys, this.state);
  }

  /** Reads the record's claims and the record it then names afresh. */
  private async refresh(record: R): Promise<void> {
    await this.refreshClaims([...record.claims].map(([field, value]) => ({ field, value })));
    const id = findRecordId(record, this.options, this.state.owner);
    if (!id) return;
    const fresh = (await this.kind.read([id], true)).get(id);
    if (fresh) this.state.records.set(id, fresh);
    else this.state.records.delete(id);
  }
}

/**
 * Per-record details of a merge that stopped part-way: applied records with their status and
 * ID, invalid ones with their error, and the rest `not_applied`.
 */
export function mergeDetails(
  records: ({ index: number } & ({ error: string } | object))[],
  outcomes: Map<number, MergeOutcome>,
  idMember: 'person_id' | 'organization_id' | 'account_id',
): ErrorDetail[] {
  return records.map((record) => {
    if ('error' in record) return { index: record.index, status: 'invalid', error: record.error };
    const outcome = outcomes.get(record.index);
    if (!outcome) {
      return { index: record.index, status: 'not_applied', error: 'not applied: send it again' };
    }
    return {
      index: record.index,
      status: outcome.status,
      ...(outcome.id ? { [idMember]: outcome.id } : {}),
      ...(outcome.error ? { error: outcome.error } : {}),
    };
  });
}

/**
 * A request whose every record ended invalid (nothing was written) is a 400 (DESIGN.md); so is
 * one whose every record was refused as suppressed, each detail keeping its status.
 */
export function everyRecordInvalid<T extends { status: string; error?: string }>(
  results: T[],
  what: string,
): T[] {
  if (results.some((result) => result.status !== 'invalid' && result.status !== 'suppressed')) {
    return results;
  }
  const details = results.map((result, index) => ({
    index,
    status: result.status,
    error: result.error ?? 'invalid',
  }));
  throw new ValidationError(
    `${what}: every record is invalid (${details[0]?.error ?? ''})`,
    details,
  );
}
