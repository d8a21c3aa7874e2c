import { ValidationError } from '../errors.js';
import {
  checkAddressLookups,
  locationFields,
  resolveLocation,
  type LocationServices,
} from '../location.js';
import {
  mergeRecords,
  type MergeKind,
  type MergeOptions,
  type MergeOutcome,
  type MergeStatus,
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
}

/**
 * `POST /v1/person/merge`: validates every record before writing anything (an invalid time
 * zone fails the request, an address lookup below the Business plan is refused), resolves
 * locations, then merges with the shared engine; tags are registered last.
 */
export async function mergePeople(
  request: PersonMergeRequest,
  { tenant, store, location, now = () => new Date() }: MergeContext,
): Promise<MergeResult[]> {
  const options = mergeOptions(request, tenant);
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
  const outcomes = await mergePreparedPeople(valid, options, { tenant, store, location, now });
  return records.map((record): MergeResult => {
    if ('error' in record) return { status: 'invalid', error: record.error };
    const { id, ...outcome } = outcomes.get(record.index) ?? { status: 'invalid' };
    return id ? { person_id: id, ...outcome } : outcome;
  });
}

/**
 * Merges validated person records (of a person merge, or the people named by activities):
 * the address-lookup plan check, locations, the shared engine, then the tags.
 */
export async function mergePreparedPeople(
  records: PreparedRecord[],
  options: MergeOptions,
  { tenant, store, location, now = () => new Date() }: MergeContext,
): Promise<Map<number, MergeOutcome>> {
  const instanceId = tenant.instance.id;
  checkAddressLookups(
    records.map((record) => record.location),
    tenant.instance.plan,
  );
  await applyLocations(records, instanceId, location, now());
  const outcomes = await mergeRecords(peopleKind(tenant, store, options), records, options, now);
  const applied = records.filter((record) => outcomes.get(record.index)?.status !== 'invalid');
  const tags = new Set(applied.flatMap((record) => record.tags));
  if (tags.size > 0) await store.ensureTags(instanceId, [...tags]);
  return outcomes;
}

function peopleKind(
  tenant: Tenant,
  store: PeopleStore,
  options: MergeOptions,
): MergeKind<PreparedRecord, Person, CreatePlan, UpdatePlan> {
  const instanceId = tenant.instance.id;
  const source = tenant.dataSource.name;
  const isStored = (fieldId: string) => tenant.personFields.get(fieldId)?.stored ?? false;
  return {
    list: 'people',
    noun: 'person',
    idField: PERSON_ID,
    planCreate: (record, id, now) => planCreate(record, id, now, isStored),
    created: (plan) => ({ record: plan.person, claims: plan.claims }),
    planUpdate: (before, record, now) =>
      planUpdate(before, record, options.strategy === 1 ? 1 : 2, options.keyFields, now, isStored),
    updated: (plan) => plan,
    findClaimOwners: (keys, consistent) => store.findClaimOwners(instanceId, keys, consistent),
    read: (ids, consistent) => store.getPeople(instanceId, ids, consistent),
    create: (plan) => store.createPerson(instanceId, plan, source),
    update: (plan) => store.updatePerson(instanceId, plan, source),
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
