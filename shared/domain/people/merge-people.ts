import { stoppedPartWay, ValidationError } from '../errors.js';
import {
  checkAddressLookups,
  locationFields,
  resolveLocation,
  type LocationServices,
} from '../location.js';
import {
  everyRecordInvalid,
  IncompleteMergeError,
  mergeDetails,
  mergeRecords,
  type MergeKind,
  type MergeOptions,
  type MergeOutcome,
  type MergeStatus,
  type RecordLedger,
} from '../merge/merge-engine.js';
import type { Tenant } from '../tenancy.js';
import {
  planCreate,
  planUpdate,
  prepareRecord,
  type CreatePlan,
  type InvalidRecord,
  type PreparedRecord,
  type UpdatePlan,
} from './merge-plan.js';
import { mergeOptions, type PersonMergeRequest } from './merge-request.js';
import type { PeopleStore } from './people-store.js';
import { PERSON_ID, type Person } from './person.js';
import { runBounded } from '../../lib/bounded.js';
import { overRecordBudget } from '../merge/record-budget.js';

export type { MergeStatus };

export interface MergeResult {
  person_id?: string;
  status: MergeStatus;
  error?: string;
}

export interface MergeContext {
  tenant: Tenant;
  store: PeopleStore;
  location: LocationServices;
  now?: () => Date;
  /** For a queued request: records its outcomes so that each applies once. */
  ledger?: RecordLedger;
  /** The instance's suppression list, read when a request names `suppression_list_field_id`. */
  suppression?: SuppressionList;
}

/** The addresses (lower-cased) of those given that are on the instance's suppression list. */
export interface SuppressionList {
  suppressed(instanceId: string, addresses: string[]): Promise<Set<string>>;
}

/**
 * What `POST /v1/person/merge` checks before anything is read or written: the merge
 * preferences, every record (an invalid time zone throws), the address-lookup plan. A
 * request whose every record is invalid is a 400. Pure: an asynchronous request is checked
 * with it before it is queued.
 */
export function preparePeopleMerge(
  request: PersonMergeRequest,
  tenant: Tenant,
  where?: (index: number) => string,
) {
  const options = mergeOptions(request, tenant);
  const records = request.people.map((raw, index) =>
    prepareRecord(raw, index, options, tenant, where),
  );
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
  return { options, records, valid };
}

/**
 * `POST /v1/person/merge`: validates every record before writing anything (an invalid time
 * zone fails the request, an address lookup below the Business plan is refused), resolves
 * locations, then merges with the shared engine; tags are registered last.
 */
export async function mergePeople(
  request: PersonMergeRequest,
  { tenant, store, location, now = () => new Date(), ledger, suppression }: MergeContext,
  /** Where record `index` stands in the client's request, when that is not `people[index]`. */
  where?: (index: number) => string,
): Promise<MergeResult[]> {
  const { options, records, valid } = preparePeopleMerge(request, tenant, where);
  let outcomes: Map<number, MergeOutcome>;
  try {
    outcomes = await mergePreparedPeople(valid, ledger ? { ...options, ledger } : options, {
      tenant,
      store,
      location,
      now,
      ...(suppression ? { suppression } : {}),
    });
  } catch (error) {
    if (!(error instanceof IncompleteMergeError)) throw error;
    throw stoppedPartWay(error.cause, mergeDetails(records, error.outcomes, 'person_id'));
  }
  const results = records.map((record): MergeResult => {
    if ('error' in record) return { status: 'invalid', error: record.error };
    const { id, ...outcome } = outcomes.get(record.index) ?? { status: 'invalid' };
    return id ? { person_id: id, ...outcome } : outcome;
  });
  return everyRecordInvalid(results, 'No person was merged');
}

/**
 * Merges validated person records (of a person merge, or the people named by activities):
 * the address-lookup plan check, locations, the shared engine, then the tags.
 */
export async function mergePreparedPeople(
  requested: PreparedRecord[],
  options: MergeOptions,
  { tenant, store, location, now = () => new Date(), suppression }: MergeContext,
  list = 'people',
): Promise<Map<number, MergeOutcome>> {
  const instanceId = tenant.instance.id;
  const refused = await suppressedRecords(requested, options, instanceId, suppression, list);
  const records = requested.filter((record) => !refused.has(record.index));
  checkAddressLookups(
    records.map((record) => record.location),
    tenant.instance.plan,
  );
  try {
    // Records a queued request already applied are not located again (nor billed twice).
    const recorded = options.ledger ? await options.ledger.recordedBefore() : undefined;
    await applyLocations(
      records.filter((record) => !recorded?.has(record.index)),
      instanceId,
      location,
      now(),
    );
  } catch (error) {
    throw new IncompleteMergeError(new Map(), error);
  }
  let outcomes = new Map<number, MergeOutcome>();
  let stopped: IncompleteMergeError | undefined;
  try {
    outcomes = await mergeRecords(peopleKind(tenant, store, options, list), records, options, now);
  } catch (error) {
    if (!(error instanceof IncompleteMergeError)) {
      await releaseMarkers(store, instanceId, options).catch(() => undefined);
      throw error;
    }
    stopped = error;
    outcomes = error.outcomes;
  }
  // The markers of the people it created, held until now (also when it stopped part-way).
  try {
    await releaseMarkers(store, instanceId, options);
  } catch (error) {
    throw new IncompleteMergeError(outcomes, stopped?.cause ?? error);
  }
  // People this queued request created name it in their own items (no reference needed).
  const carried = store.namesCreatingRequest ? options.ledger?.carried : undefined;
  if (carried) {
    for (const { status, id } of outcomes.values()) if (status === 'created' && id) carried.add(id);
  }
  // Tags of the people written are registered even when the merge stopped part-way.
  const applied = records.filter((record) => {
    const status = outcomes.get(record.index)?.status;
    return status === 'created' || status === 'merged';
  });
  const tags = new Set(applied.flatMap((record) => record.tags));
  try {
    if (tags.size > 0) await store.ensureTags(instanceId, [...tags]);
  } catch (error) {
    throw new IncompleteMergeError(outcomes, stopped?.cause ?? error);
  }
  if (stopped) throw stopped;
  for (const [index, outcome] of refused) outcomes.set(index, outcome);
  return outcomes;
}

/** A queued request's markers its store held (`PeopleStore.releaseMarkers`), written. */
async function releaseMarkers(store: PeopleStore, instanceId: string, options: MergeOptions) {
  const requestId = options.ledger?.requestId;
  if (requestId !== undefined) await store.releaseMarkers?.(instanceId, requestId);
}

/**
 * The records refused because the address in `options.suppressionField` is on the
 * instance's suppression list (`status: "suppressed"`, as the real API answers): they are
 * neither created nor merged into. One batched read for the whole request.
 */
async function suppressedRecords(
  records: PreparedRecord[],
  options: MergeOptions,
  instanceId: string,
  suppression: SuppressionList | undefined,
  list: string,
): Promise<Map<number, MergeOutcome>> {
  const field = options.suppressionField;
  const refused = new Map<number, MergeOutcome>();
  if (field === undefined) return refused;
  if (!suppression) throw new Error('suppression_list_field_id needs the suppression list');
  const addressOf = (record: PreparedRecord) => {
    const value = record.values[field];
    return typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  };
  const addresses = [...new Set(records.flatMap((record) => addressOf(record) ?? []))];
  const suppressed = await suppression.suppressed(instanceId, addresses);
  for (const record of records) {
    const address = addressOf(record);
    if (address === undefined || !suppressed.has(address)) continue;
    refused.set(record.index, {
      status: 'suppressed',
      error: `${list}[${record.index}].fields.${field}: the address is on the instance's suppression list`,
    });
  }
  return refused;
}

function peopleKind(
  tenant: Tenant,
  store: PeopleStore,
  options: MergeOptions,
  list: string,
): MergeKind<PreparedRecord, Person, CreatePlan, UpdatePlan> {
  const instanceId = tenant.instance.id;
  const source = tenant.dataSource.name;
  const isStored = (fieldId: string) => tenant.personFields.get(fieldId)?.stored ?? false;
  const tracked = (fieldId: string) => {
    const field = tenant.personFields.get(fieldId);
    return field?.tracked ? field.label : undefined;
  };
  return {
    list,
    noun: 'person',
    idField: PERSON_ID,
    planCreate: (record, id, now) => planCreate(record, id, now, isStored),
    created: (plan) => ({ record: plan.person, claims: plan.claims }),
    planUpdate: (before, record, now, guard) =>
      planUpdate(
        before,
        record,
        options.strategy === 1 ? 1 : 2,
        options.keyFields,
        now,
        isStored,
        guard,
        tracked,
      ),
    updated: (plan) => plan,
    overBudget: (person, index) =>
      overRecordBudget(`${list}[${index}]`, 'person', person.fields, person.tags),
    refuse: (person, index) =>
      person.archived_at === undefined
        ? undefined
        : `${list}[${index}]: the person ${person.id} is archived; restore it (PUT /v1/person/restore) before sending data for it`,
    findClaimOwners: (keys, consistent) => store.findClaimOwners(instanceId, keys, consistent),
    read: (ids, consistent) => store.getPeople(instanceId, ids, consistent),
    create: (plan, marker) => store.createPerson(instanceId, plan, source, marker),
    update: (plan, marker) => store.updatePerson(instanceId, plan, source, marker),
    ...(store.writeConcurrency ? { writeConcurrency: store.writeConcurrency } : {}),
    ...(store.claimHints ? { hints: store.claimHints.of(instanceId) } : {}),
  };
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
  const { failure } = await runBounded(
    records.filter((record) => record.location),
    8,
    async (record) => {
      const resolved = await resolveLocation(record.location, instanceId, services, now);
      for (const [field, value] of Object.entries(locationFields(resolved))) {
        if (!(field in record.values)) record.values[field] = value;
      }
    },
  );
  if (failure) throw failure.error;
}
