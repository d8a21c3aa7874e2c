import { z } from 'zod';
import { FieldValueError, stoppedPartWay, ValidationError } from '../errors.js';
import type { FieldValues } from '../fields/field-catalog.js';
import type { FieldValue } from '../fields/field-values.js';
import { claimChanges, claimsOf, planFieldChanges } from '../merge/field-changes.js';
import {
  everyRecordInvalid,
  IncompleteMergeError,
  mergeDetails,
  mergeRecords,
  type ClaimKey,
  type MergeKind,
  type MergeOptions,
  type MergeRecord,
  plainStatus,
  type PlainMergeStatus,
  type RecordLedger,
  type RecordMarker,
} from '../merge/merge-engine.js';
import { MERGE_PREFERENCES } from '../people/merge-request.js';
import { MAX_TAGS_PER_PERSON, overRecordBudget } from '../merge/record-budget.js';
import type { Tenant } from '../tenancy.js';
import { formatPath } from '../validation.js';
import { ORGANIZATION_NAMES, type OrganizationNames } from './names.js';

/** An organization as the domain sees it. */
export interface Organization {
  id: string;
  fields: Record<string, FieldValue>;
  /** Its tags (`tags` and `unset_tags` of merges), counted apart from people's. */
  tags: string[];
  created_at: string;
  updated_at: string;
  /** Counts the writes of the organization: a whole-state write is conditioned on it. */
  version?: number;
  /** Set while the organization is archived (out of listings and counters; not merged into). */
  archived_at?: string;
}

export const ORGANIZATION_NAME = 'str:o:name';
export const ORGANIZATION_SOURCE = 'str:o:source';

/**
 * Organization key fields: their values are unique per instance (claimed like people's
 * emails) and they are the fields organizations can be merged by. Names and websites
 * compare without case.
 */
export const ORGANIZATION_KEY_FIELDS = [ORGANIZATION_NAME, 'str:o:website'];

/** `POST /v1/organizations/merge` (API.md). `merge_by` is required: there is no default. */
export const OrganizationMergeRequest = z.object({
  organizations: z
    .array(z.unknown())
    .min(1, 'expected 1 to 100 organizations')
    .max(100, 'expected 1 to 100 organizations'),
  async: z.boolean().optional(),
  merge_by: z
    .array(
      z.enum(ORGANIZATION_KEY_FIELDS as [string, ...string[]], {
        message: `expected ${ORGANIZATION_KEY_FIELDS.join(' or ')}`,
      }),
    )
    .min(1, 'at least one merge field is required')
    .max(2),
  merge_strategy: MERGE_PREFERENCES.merge_strategy,
  find_strategy: MERGE_PREFERENCES.find_strategy,
});
export type OrganizationMergeRequest = z.infer<typeof OrganizationMergeRequest>;

const tag = z.string().trim().min(1, 'expected a non-empty tag').max(255);

const OrganizationRecord = z.object({
  fields: z.record(z.string(), z.unknown()),
  clear_fields: z.record(z.string(), z.boolean()).optional(),
  tags: z.array(tag).max(100).optional(),
  unset_tags: z.array(tag).max(100).optional(),
});

export interface PreparedOrganization extends MergeRecord {
  overwrite: Record<string, boolean>;
  /** Tags to add (those also unset left out: an unset wins) and to remove. */
  tags: string[];
  unsetTags: string[];
}

export interface OrganizationCreatePlan {
  organization: Organization;
  claims: Map<string, string>;
}

export interface OrganizationUpdatePlan {
  before: Organization;
  after: Organization;
  sets: Record<string, FieldValue>;
  setsIfAbsent: Record<string, FieldValue>;
  removes: string[];
  /** Fields cleared that the organization did not hold when read: removed again, harmlessly. */
  clears: string[];
  expected: Record<string, FieldValue | undefined>;
  claimsAdded: Map<string, string>;
  claimsReleased: Map<string, string>;
  /** Tags it gains, and every tag of `unset_tags` (each conditioned on being as read). */
  addTags: string[];
  unsetTags: string[];
  /** How many tags it may hold before this write for the write to stay within the limit. */
  tagRoom?: number;
}

/** What organization merge reads and writes (the organizations table). */
export interface OrganizationStore {
  findClaimOwners(
    instanceId: string,
    keys: ClaimKey[],
    consistent?: boolean,
  ): Promise<Map<string, string>>;
  getOrganizations(
    instanceId: string,
    ids: string[],
    consistent?: boolean,
  ): Promise<Map<string, Organization>>;
  createOrganization(
    instanceId: string,
    plan: OrganizationCreatePlan,
    marker?: RecordMarker,
  ): Promise<void>;
  updateOrganization(
    instanceId: string,
    plan: OrganizationUpdatePlan,
    marker?: RecordMarker,
  ): Promise<void>;
}

export interface OrganizationMergeResult {
  organization_id?: string;
  status: PlainMergeStatus;
  error?: string;
}

function prepare(
  raw: unknown,
  index: number,
  options: MergeOptions,
  tenant: Tenant,
  names: OrganizationNames,
): PreparedOrganization | { index: number; error: string } {
  const where = `${names.list}[${index}]`;
  const parsed = OrganizationRecord.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      index,
      error: `${formatPath([where, ...(issue?.path ?? [])])}: ${issue?.message ?? 'invalid'}`,
    };
  }
  let values: FieldValues;
  try {
    values = tenant.organizationFields.parseValues(parsed.data.fields, `${where}.fields`);
  } catch (error) {
    if (error instanceof FieldValueError)
      return { index, error: `${where}.fields.${error.message}` };
    if (error instanceof ValidationError) return { index, error: error.message };
    throw error;
  }
  const claims = claimsOf(values, ORGANIZATION_KEY_FIELDS);
  if (!options.mergeBy.some((field) => claims.has(field))) {
    return {
      index,
      error: `${where}.fields: ${options.mergeBy.join(' or ')} is required (merge_by)`,
    };
  }
  for (const fieldId of Object.keys(parsed.data.clear_fields ?? {})) {
    if (!tenant.organizationFields.get(fieldId)) {
      return { index, error: `${where}.clear_fields.${fieldId}: is not an organization field` };
    }
  }
  const unsetTags = [...new Set(parsed.data.unset_tags ?? [])];
  const tags = [...new Set(parsed.data.tags ?? [])].filter((name) => !unsetTags.includes(name));
  return { index, values, claims, overwrite: parsed.data.clear_fields ?? {}, tags, unsetTags };
}

/**
 * `POST /v1/organizations/merge`: the shared merge engine with organization rules:
 * `merge_by` is required, strategy 3 leaves existing organizations untouched, and
 * `str:o:source` is the data source's name when a new organization does not set it.
 */
/**
 * What `POST /v1/organizations/merge` checks before anything is read or written (pure: an
 * asynchronous request is checked with it before it is queued).
 */
export function prepareOrganizationMerge(
  request: OrganizationMergeRequest,
  tenant: Tenant,
  names: OrganizationNames = ORGANIZATION_NAMES,
) {
  if (request.merge_by.length === 2 && request.merge_by[0] === request.merge_by[1]) {
    throw new ValidationError('merge_by: the two merge fields must differ', [
      { field: 'merge_by', error: 'duplicate field' },
    ]);
  }
  const options: MergeOptions = {
    mergeBy: request.merge_by,
    byId: false,
    strategy: request.merge_strategy ?? 2,
    findStrategy: request.find_strategy ?? 0,
    skipNonExisting: false,
    keyFields: ORGANIZATION_KEY_FIELDS,
  };
  const records = request.organizations.map((raw, index) =>
    prepare(raw, index, options, tenant, names),
  );
  const valid = records.filter((record): record is PreparedOrganization => 'values' in record);
  if (valid.length === 0) {
    const details = records.map((record) => ({
      index: record.index,
      status: 'invalid' as const,
      error: 'error' in record ? record.error : '',
    }));
    throw new ValidationError(
      `No ${names.noun} was merged: every record is invalid (${details[0]?.error ?? ''})`,
      details,
    );
  }
  return { options, records, valid };
}

/**
 * Merges the records of a request. `names` are those the caller used (`accounts` for
 * `/v1/accounts/merge`): messages and 503 details name its members; the answer is the
 * organizations' (the accounts edge renames it).
 */
export async function mergeOrganizations(
  request: OrganizationMergeRequest,
  {
    tenant,
    store,
    now = () => new Date(),
    ledger,
    names = ORGANIZATION_NAMES,
  }: {
    tenant: Tenant;
    store: OrganizationStore;
    now?: () => Date;
    ledger?: RecordLedger;
    names?: OrganizationNames;
  },
): Promise<OrganizationMergeResult[]> {
  const prepared = prepareOrganizationMerge(request, tenant, names);
  const { records, valid } = prepared;
  const options = ledger ? { ...prepared.options, ledger } : prepared.options;
  const instanceId = tenant.instance.id;
  const isStored = (fieldId: string) => tenant.organizationFields.get(fieldId)?.stored ?? false;
  const kind: MergeKind<
    PreparedOrganization,
    Organization,
    OrganizationCreatePlan,
    OrganizationUpdatePlan
  > = {
    list: names.list,
    noun: names.noun,
    idField: 'idt::o',
    planCreate: (record, id, timestamp) => {
      const fields: Record<string, FieldValue> = {};
      for (const [fieldId, value] of Object.entries(record.values)) {
        if (value !== null && isStored(fieldId)) fields[fieldId] = value;
      }
      fields[ORGANIZATION_SOURCE] ??= tenant.dataSource.name;
      return {
        organization: {
          id,
          fields,
          tags: record.tags,
          created_at: timestamp,
          updated_at: timestamp,
          version: 1,
        },
        claims: claimsOf(fields, ORGANIZATION_KEY_FIELDS),
      };
    },
    created: (plan) => ({ record: plan.organization, claims: plan.claims }),
    planUpdate: (before, record, timestamp, guard) => {
      const changes = planFieldChanges(
        before.fields,
        record.values,
        options.strategy === 1 ? 1 : 2,
        record.overwrite,
        isStored,
      );
      const addTags = record.tags.filter((name) => !before.tags.includes(name));
      const removeTags = record.unsetTags.filter((name) => before.tags.includes(name));
      if (
        Object.keys(changes.sets).length +
          Object.keys(changes.setsIfAbsent).length +
          changes.removes.length +
          addTags.length +
          removeTags.length ===
        0
      ) {
        return undefined;
      }
      const expected: Record<string, FieldValue | undefined> = {};
      for (const field of guard) expected[field] = before.fields[field];
      const claims = claimChanges(before.fields, changes.after, ORGANIZATION_KEY_FIELDS, expected);
      // The name is indexed for listing: if it is only filled when empty, it must still be empty.
      if (ORGANIZATION_NAME in changes.setsIfAbsent) expected[ORGANIZATION_NAME] = undefined;
      // Clearing again what was absent must not remove a key (or the indexed name) set meanwhile.
      for (const field of changes.clears) {
        if (ORGANIZATION_KEY_FIELDS.includes(field)) expected[field] = undefined;
      }
      return {
        before,
        after: {
          ...before,
          fields: changes.after,
          tags: [...before.tags.filter((name) => !record.unsetTags.includes(name)), ...addTags],
          updated_at: timestamp,
          ...(before.version !== undefined ? { version: before.version + 1 } : {}),
        },
        sets: changes.sets,
        setsIfAbsent: changes.setsIfAbsent,
        removes: changes.removes,
        clears: changes.clears,
        expected,
        ...claims,
        addTags,
        unsetTags: record.unsetTags,
        ...(addTags.length > 0
          ? { tagRoom: MAX_TAGS_PER_PERSON - addTags.length + removeTags.length }
          : {}),
      };
    },
    updated: (plan) => plan,
    overBudget: (organization, index) =>
      overRecordBudget(
        `${names.list}[${index}]`,
        names.noun,
        organization.fields,
        organization.tags,
      ),
    findClaimOwners: (keys, consistent) => store.findClaimOwners(instanceId, keys, consistent),
    refuse: (organization, index) =>
      organization.archived_at === undefined
        ? undefined
        : `organizations[${index}]: the organization ${organization.id} is archived; restore it (PUT /v1/organizations/restore) before merging into it`,
    read: (ids, consistent) => store.getOrganizations(instanceId, ids, consistent),
    create: (plan, marker) => store.createOrganization(instanceId, plan, marker),
    update: (plan, marker) => store.updateOrganization(instanceId, plan, marker),
  };
  let outcomes: Awaited<ReturnType<typeof mergeRecords>>;
  try {
    outcomes = await mergeRecords(kind, valid, options, now);
  } catch (error) {
    if (!(error instanceof IncompleteMergeError)) throw error;
    throw stoppedPartWay(error.cause, mergeDetails(records, error.outcomes, names.id));
  }
  const results = records.map((record): OrganizationMergeResult => {
    if ('error' in record) return { status: 'invalid', error: record.error };
    const { id, status, ...outcome } = outcomes.get(record.index) ?? { status: 'invalid' };
    const result = { status: plainStatus(status), ...outcome };
    return id ? { organization_id: id, ...result } : result;
  });
  return everyRecordInvalid(results, `No ${names.noun} was merged`);
}
