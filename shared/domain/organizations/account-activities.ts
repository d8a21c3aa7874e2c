import { z } from 'zod';
import {
  compileDefinition,
  renderDisplayText,
  type CompiledDefinition,
} from '../activities/activity-definitions.js';
import {
  ActivitiesCreateRequest,
  checkDates,
  readActivity,
} from '../activities/record-activities.js';
import { ValidationError } from '../errors.js';
import type { FieldValue } from '../fields/field-values.js';
import { ID_PATTERN, newId } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import { formatPath } from '../validation.js';
import { ACCOUNT_NAMES } from './names.js';
import {
  mergeOrganizations,
  OrganizationMergeRequest,
  type OrganizationStore,
} from './organization-merge.js';

/**
 * `POST /v1/accounts/activities/create` (the reference page a-890): custom activities of
 * accounts (organizations), defined as `act:oc:<name>` like people's `act:cm:` ones. Each
 * activity names its account by `str:o:organization_id` in `fields`, or by the request's
 * `merge_by` (account key fields), which finds or creates it with its `fields` as
 * `accounts/merge` does. Recorded under the account (the activities table), listed by
 * `POST /v1/accounts/get/activities`.
 */
export const AccountActivitiesCreateRequest = z.object({
  activities: ActivitiesCreateRequest.shape.activities,
  merge_by: OrganizationMergeRequest.shape.merge_by.optional(),
});
export type AccountActivitiesCreateRequest = z.infer<typeof AccountActivitiesCreateRequest>;

/** The field that names an account by ID instead of merging it (the reference page's). */
export const ACCOUNT_ID_FIELD = 'str:o:organization_id';

const AccountActivityInput = z.object({
  activity_id: z.string().min(1),
  attributes: z.record(z.string(), z.unknown()).optional(),
  fields: z.record(z.string(), z.unknown()),
  created: z.string().optional(),
});

export interface AccountActivityToWrite {
  id: string;
  organization_id: string;
  field_id: string;
  attr: Record<string, FieldValue>;
  display: string;
  value?: number;
  created_at: string;
  source: string;
}

export interface AccountActivityStore {
  writeAccountActivities(instanceId: string, activities: AccountActivityToWrite[]): Promise<void>;
}

type Entry =
  | {
      account_id: string;
      account_status: 'created' | 'merged' | 'by-id';
      activity_id: string;
      status: 'ingested';
    }
  | { account_status: 'invalid'; status: 'invalid'; error: string };

interface Prepared {
  index: number;
  fieldId: string;
  values: Record<string, FieldValue>;
  value?: number;
  display: string;
  createdAt: string;
  byId?: string;
  fields?: Record<string, unknown>;
}

function prepare(
  raw: unknown,
  index: number,
  definitions: ReadonlyMap<string, CompiledDefinition>,
  tenant: Tenant,
  request: AccountActivitiesCreateRequest,
  now: Date,
): Prepared | { error: string } {
  const where = `activities[${index}]`;
  const parsed = AccountActivityInput.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      error: `${formatPath([where, ...(issue?.path ?? [])])}: ${issue?.message ?? 'invalid'}`,
    };
  }
  const input = parsed.data;
  const read = readActivity(input, where, definitions, 'account', tenant, now);
  if ('error' in read) return read;
  const { definition, createdAt, attributes } = read;
  const base = {
    index,
    fieldId: definition.config.id,
    values: attributes.values,
    ...(attributes.conversionValue === undefined ? {} : { value: attributes.conversionValue }),
    display: renderDisplayText(definition, attributes.values),
    createdAt,
  };
  const { [ACCOUNT_ID_FIELD]: byId, ...fields } = input.fields;
  if (byId !== undefined) {
    if (typeof byId !== 'string' || !ID_PATTERN.test(byId)) {
      return {
        error: `${where}.fields.${ACCOUNT_ID_FIELD}: expected an account ID (24 hexadecimal characters)`,
      };
    }
    return { ...base, byId };
  }
  if (!request.merge_by) {
    return {
      error: `${where}.fields: give ${ACCOUNT_ID_FIELD}, or merge_by with the account's key fields`,
    };
  }
  return { ...base, fields };
}

/**
 * Records 1 to 100 account activities. Accounts named by ID must be the instance's and not
 * archived (else that entry is invalid); the others are merged as one `accounts/merge` of
 * their `fields` (a record it finds invalid makes that entry invalid; `fields` of an
 * activity named by ID are not written). Then the activities are written, 25 a call.
 */
export async function recordAccountActivities(
  request: AccountActivitiesCreateRequest,
  context: {
    tenant: Tenant;
    organizations: OrganizationStore;
    activities: AccountActivityStore;
    now?: () => Date;
  },
): Promise<{ activities: Entry[] }> {
  const now = (context.now ?? (() => new Date()))();
  checkDates(request.activities, now);
  const { tenant } = context;
  const instanceId = tenant.instance.id;
  const definitions = new Map(
    tenant.instance.activities.map((config) => [config.id, compileDefinition(config)]),
  );
  const prepared = request.activities.map((raw, index) =>
    prepare(raw, index, definitions, tenant, request, now),
  );
  const entries: Entry[] = prepared.map((entry) =>
    'error' in entry
      ? { account_status: 'invalid', status: 'invalid', error: entry.error }
      : { account_status: 'invalid', status: 'invalid', error: '' },
  );
  const valid = prepared.filter((entry): entry is Prepared => !('error' in entry));
  const accounts = new Map<number, { id: string; status: 'created' | 'merged' | 'by-id' }>();
  const invalid = (index: number, error: string) => {
    entries[index] = { account_status: 'invalid', status: 'invalid', error };
  };

  const byId = valid.filter((entry) => entry.byId !== undefined);
  if (byId.length > 0) {
    const found = await context.organizations.getOrganizations(instanceId, [
      ...new Set(byId.map((entry) => entry.byId as string)),
    ]);
    for (const entry of byId) {
      const organization = found.get(entry.byId as string);
      if (!organization) {
        invalid(
          entry.index,
          `activities[${entry.index}].fields.${ACCOUNT_ID_FIELD}: no account ${entry.byId}`,
        );
      } else if (organization.archived_at !== undefined) {
        invalid(
          entry.index,
          `activities[${entry.index}].fields.${ACCOUNT_ID_FIELD}: the account ${entry.byId} is archived`,
        );
      } else {
        accounts.set(entry.index, { id: organization.id, status: 'by-id' });
      }
    }
  }

  const merged = valid.filter((entry) => entry.byId === undefined);
  if (merged.length > 0 && request.merge_by) {
    let results: Awaited<ReturnType<typeof mergeOrganizations>> | undefined;
    try {
      results = await mergeOrganizations(
        {
          organizations: merged.map((entry) => ({ fields: entry.fields ?? {} })),
          merge_by: request.merge_by,
        },
        { tenant, store: context.organizations, names: ACCOUNT_NAMES },
      );
    } catch (error) {
      if (
        !(error instanceof ValidationError) ||
        !error.details?.every((detail) => detail.index !== undefined)
      ) {
        throw error;
      }
      // Every record invalid: each names its own error.
      for (const detail of error.details) {
        const entry = merged[detail.index ?? -1];
        if (entry)
          invalid(
            entry.index,
            renamed(detail.error ?? error.message, detail.index ?? 0, entry.index),
          );
      }
    }
    results?.forEach((result, i) => {
      const entry = merged[i];
      if (!entry) return;
      if (result.organization_id && (result.status === 'created' || result.status === 'merged')) {
        accounts.set(entry.index, { id: result.organization_id, status: result.status });
      } else {
        invalid(entry.index, renamed(result.error ?? 'not merged', i, entry.index));
      }
    });
  }

  const writes: AccountActivityToWrite[] = [];
  for (const entry of valid) {
    const account = accounts.get(entry.index);
    if (!account) continue;
    const id = newId(Date.parse(entry.createdAt));
    writes.push({
      id,
      organization_id: account.id,
      field_id: entry.fieldId,
      attr: entry.values,
      display: entry.display,
      ...(entry.value === undefined ? {} : { value: entry.value }),
      created_at: entry.createdAt,
      source: tenant.dataSource.name,
    });
    entries[entry.index] = {
      account_id: account.id,
      account_status: account.status,
      activity_id: id,
      status: 'ingested',
    };
  }
  if (writes.length === 0) {
    const details = entries.map((entry, index) => ({
      index,
      status: 'invalid' as const,
      error: 'error' in entry ? entry.error : '',
    }));
    throw new ValidationError(
      `No activity was recorded: every activity is invalid (${details[0]?.error ?? ''})`,
      details,
    );
  }
  await context.activities.writeAccountActivities(instanceId, writes);
  return { activities: entries };
}

/** A merge error names its record `accounts[j]`: here it is the activity's `fields`. */
function renamed(error: string, mergeIndex: number, index: number): string {
  const prefix = `accounts[${mergeIndex}]`;
  return error.startsWith(prefix)
    ? `activities[${index}]${error.slice(prefix.length)}`
    : `activities[${index}].fields: ${error}`;
}
