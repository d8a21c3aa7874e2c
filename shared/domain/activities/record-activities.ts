import { z } from 'zod';
import { FieldValueError, ValidationError } from '../errors.js';
import type { FieldValue } from '../fields/field-values.js';
import { parseTimestamp } from '../fields/field-values.js';
import { isId, newId } from '../ids.js';
import type { ActivityDefinitionConfig } from '../instance-config.js';
import {
  checkAddressLookups,
  LocationInput,
  resolveLocation,
  type LocationServices,
  type ResolvedLocation,
} from '../location.js';
import type { MergeOptions } from '../merge/merge-engine.js';
import { prepareRecord, type PreparedRecord } from '../people/merge-plan.js';
import { mergePreparedPeople } from '../people/merge-people.js';
import { MERGE_PREFERENCES, mergeOptions } from '../people/merge-request.js';
import type { PeopleStore } from '../people/people-store.js';
import { PERSON_ID } from '../people/person.js';
import type { Tenant } from '../tenancy.js';
import { formatPath } from '../validation.js';
import {
  compileDefinition,
  parseAttributes,
  renderDisplayText,
  type CompiledDefinition,
} from './activity-definitions.js';

/** `POST /v1/activities/create` (API.md). `merge_by` and the strategies override the data source's. */
export const ActivitiesCreateRequest = z.object({
  activities: z
    .array(z.unknown())
    .min(1, 'expected 1 to 100 activities')
    .max(100, 'expected 1 to 100 activities'),
  async: z.boolean().optional(),
  ...MERGE_PREFERENCES,
});
export type ActivitiesCreateRequest = z.infer<typeof ActivitiesCreateRequest>;

const ActivityInput = z.object({
  activity_id: z.string().min(1),
  fields: z.record(z.string(), z.unknown()).optional(),
  person_id: z.string().optional(),
  attributes: z.record(z.string(), z.unknown()).optional(),
  location: z.unknown().optional(),
  created: z.string().optional(),
  key: z.string().min(1).max(255).optional(),
});

/** Back-dating window, and how far ahead of our clock a `created` may be (clock skew). */
export const BACKDATE_DAYS = 90;
export const FUTURE_SKEW_MS = 5 * 60 * 1000;

export type PersonStatus = 'created' | 'merged' | 'skipped' | 'by-id' | 'invalid';

export interface ActivityEntry {
  person_id?: string;
  person_status: PersonStatus | 'queued';
  activity_id?: string;
  status: 'ingested' | 'queued' | 'invalid';
  error?: string;
}

export interface ActivityToWrite {
  id: string;
  person_id: string;
  person_status: PersonStatus;
  field_id: string;
  attr: Record<string, FieldValue>;
  display: string;
  value?: number;
  location?: ResolvedLocation;
  created_at: string;
  key?: string;
  source: string;
}

export interface RecordedKey {
  activity_id: string;
  person_id: string;
  person_status: PersonStatus;
}

export interface ActivityStore {
  /** What earlier activities recorded under these idempotency keys. */
  findKeys(instanceId: string, keys: string[]): Promise<Map<string, RecordedKey>>;
  /** Writes activities (in batches); a key already taken answers with what it recorded. */
  write(instanceId: string, activities: ActivityToWrite[]): Promise<Map<string, RecordedKey>>;
  /** Moves a person's last-seen time (and place) forward; never back. */
  touch(instanceId: string, personId: string, at: string, place?: string): Promise<void>;
}

export interface ActivityContext {
  tenant: Tenant;
  people: PeopleStore;
  activities: ActivityStore;
  location: LocationServices;
  /** Reads the instance's activity definitions afresh (the tenant's may be cached). */
  freshDefinitions: () => Promise<ActivityDefinitionConfig[]>;
  now?: () => Date;
}

interface Pending {
  index: number;
  definition: CompiledDefinition;
  values: Record<string, FieldValue>;
  conversionValue?: number;
  location?: LocationInput;
  createdAt: string;
  key?: string;
  personRecord?: PreparedRecord;
  byId: boolean;
}

function placeOf(location: ResolvedLocation | undefined): string | undefined {
  const parts = [location?.city, location?.region, location?.country].filter(Boolean);
  return parts.length > 0 ? parts.join(', ') : location?.position_name;
}

/** The whole request fails when an activity is back-dated too far or dated in the future. */
function checkDates(raw: unknown[], now: Date): void {
  raw.forEach((entry, index) => {
    const created = (entry as { created?: unknown } | null)?.created;
    if (typeof created !== 'string') return;
    const date = parseTimestamp(created);
    if (!date) return; // reported for that activity
    if (now.getTime() - date.getTime() > BACKDATE_DAYS * 24 * 3600 * 1000) {
      throw new ValidationError(
        `activities[${index}].created: the created date is more than ${BACKDATE_DAYS} days ago`,
        [
          {
            index,
            field: `activities[${index}].created`,
            error: `more than ${BACKDATE_DAYS} days ago`,
          },
        ],
      );
    }
    if (date.getTime() - now.getTime() > FUTURE_SKEW_MS) {
      throw new ValidationError(`activities[${index}].created: the created date is in the future`, [
        { index, field: `activities[${index}].created`, error: 'in the future' },
      ]);
    }
  });
}

/**
 * Records 1 to 100 activities: each is validated first (an undefined activity, a bad
 * attribute or person field makes that entry invalid; an invalid time zone or a bad date
 * fails the request); the people are found or created with the shared merge engine; then
 * the activities are written in batches, each once per idempotency `key`.
 */
export async function recordActivities(
  request: ActivitiesCreateRequest,
  context: ActivityContext,
): Promise<ActivityEntry[]> {
  const { tenant } = context;
  const now = context.now ?? (() => new Date());
  const started = now();
  checkDates(request.activities, started);
  const options = mergeOptions(request, tenant);
  let definitions = new Map(tenant.instance.activities.map((d) => [d.id, compileDefinition(d)]));
  const named = request.activities.map(
    (entry) => (entry as { activity_id?: unknown } | null)?.activity_id,
  );
  if (named.some((id) => typeof id === 'string' && !definitions.has(id))) {
    definitions = new Map(
      (await context.freshDefinitions()).map((d) => [d.id, compileDefinition(d)]),
    );
  }

  const entries: ActivityEntry[] = [];
  const pending: Pending[] = [];
  request.activities.forEach((raw, index) => {
    const prepared = prepareActivity(raw, index, definitions, options, tenant, started);
    if ('error' in prepared)
      entries[index] = { person_status: 'invalid', status: 'invalid', error: prepared.error };
    else pending.push(prepared);
  });
  if (pending.length === 0) {
    throw new ValidationError(
      `No activity was recorded: every activity is invalid (${entries[0]?.error ?? ''})`,
      entries.map((entry, index) => ({
        index,
        status: 'invalid' as const,
        error: entry.error ?? '',
      })),
    );
  }
  checkAddressLookups(
    pending.map((p) => p.location),
    tenant.instance.plan,
  );

  // People: by fields with the merge preferences, or by ID (map_to_crm may update them too).
  const statuses = new Map<number, { personId?: string; status: PersonStatus; error?: string }>();
  const merge = async (records: PreparedRecord[], mergeWith: MergeOptions, byId: boolean) => {
    if (records.length === 0) return;
    const outcomes = await mergePreparedPeople(records, mergeWith, {
      tenant,
      store: context.people,
      location: context.location,
      now,
    });
    for (const record of records) {
      const outcome = outcomes.get(record.index);
      if (!outcome || outcome.status === 'invalid' || !outcome.id) {
        statuses.set(record.index, {
          status: 'invalid',
          error: outcome?.error ?? `activities[${record.index}]: no person matched`,
        });
      } else {
        statuses.set(record.index, {
          personId: outcome.id,
          status: byId ? 'by-id' : outcome.status,
        });
      }
    }
  };
  const byFields = pending
    .filter((p) => !p.byId)
    .flatMap((p) => (p.personRecord ? [p.personRecord] : []));
  const byIds = pending
    .filter((p) => p.byId)
    .flatMap((p) => (p.personRecord ? [p.personRecord] : []));
  await merge(byFields, options, false);
  await merge(
    byIds,
    { ...options, mergeBy: [PERSON_ID], byId: true, strategy: 2, skipNonExisting: false },
    true,
  );

  const keys = [...new Set(pending.flatMap((p) => (p.key ? [p.key] : [])))];
  const recorded =
    keys.length > 0
      ? await context.activities.findKeys(tenant.instance.id, keys)
      : new Map<string, RecordedKey>();
  const writes: ActivityToWrite[] = [];
  const byKey = new Map<string, RecordedKey>();
  const resolved = new Map<number, ResolvedLocation | undefined>();
  await Promise.all(
    pending.map(async (p) => {
      if (p.location)
        resolved.set(
          p.index,
          await resolveLocation(p.location, tenant.instance.id, context.location, started),
        );
    }),
  );
  for (const p of pending) {
    const person = statuses.get(p.index);
    if (!person?.personId) {
      entries[p.index] = {
        person_status: 'invalid',
        status: 'invalid',
        error: person?.error ?? 'no person',
      };
      continue;
    }
    const earlier = p.key ? (recorded.get(p.key) ?? byKey.get(p.key)) : undefined;
    if (earlier) {
      entries[p.index] = { ...earlier, status: 'ingested' };
      continue;
    }
    const location = resolved.get(p.index);
    const activity: ActivityToWrite = {
      id: newId(Date.parse(p.createdAt)),
      person_id: person.personId,
      person_status: person.status,
      field_id: p.definition.config.id,
      attr: p.values,
      display: renderDisplayText(p.definition, p.values),
      ...(p.conversionValue === undefined ? {} : { value: p.conversionValue }),
      ...(location ? { location } : {}),
      created_at: p.createdAt,
      ...(p.key ? { key: p.key } : {}),
      source: tenant.dataSource.name,
    };
    writes.push(activity);
    if (p.key) {
      byKey.set(p.key, {
        activity_id: activity.id,
        person_id: person.personId,
        person_status: person.status,
      });
    }
    entries[p.index] = {
      person_id: person.personId,
      person_status: person.status,
      activity_id: activity.id,
      status: 'ingested',
    };
  }
  // A key another request recorded between our read and our write: answer with its IDs.
  const taken = await context.activities.write(tenant.instance.id, writes);
  for (const p of pending) {
    const first = p.key ? taken.get(p.key) : undefined;
    if (first) entries[p.index] = { ...first, status: 'ingested' };
  }

  // Touches move the person's last-seen time (and place) forward.
  const touches = new Map<string, { at: string; place?: string }>();
  for (const activity of writes) {
    const definition = definitions.get(activity.field_id);
    if (!definition?.config.track_as_touch || taken.has(activity.key ?? '')) continue;
    const current = touches.get(activity.person_id);
    if (!current || current.at < activity.created_at) {
      const place = placeOf(activity.location);
      touches.set(activity.person_id, { at: activity.created_at, ...(place ? { place } : {}) });
    }
  }
  await Promise.all(
    [...touches].map(([personId, touch]) =>
      context.activities.touch(tenant.instance.id, personId, touch.at, touch.place),
    ),
  );
  return entries;
}

function prepareActivity(
  raw: unknown,
  index: number,
  definitions: Map<string, CompiledDefinition>,
  options: MergeOptions,
  tenant: Tenant,
  now: Date,
): Pending | { error: string } {
  const where = `activities[${index}]`;
  const parsed = ActivityInput.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      error: `${formatPath([where, ...(issue?.path ?? [])])}: ${issue?.message ?? 'invalid'}`,
    };
  }
  const input = parsed.data;
  const definition = definitions.get(input.activity_id);
  if (!definition)
    return { error: `${where}.activity_id: no activity definition "${input.activity_id}"` };
  let createdAt = now.toISOString();
  if (input.created !== undefined) {
    const date = parseTimestamp(input.created);
    if (!date)
      return { error: `${where}.created: expected an ISO 8601 timestamp with date, time and zone` };
    createdAt = date.toISOString();
  }
  let attributes: ReturnType<typeof parseAttributes>;
  try {
    attributes = parseAttributes(definition, input.attributes ?? {});
  } catch (error) {
    if (error instanceof FieldValueError) return { error: `${where}.attributes.${error.message}` };
    throw error;
  }
  const location = LocationInput.optional().safeParse(input.location);
  if (!location.success) {
    const issue = location.error.issues[0];
    return {
      error: `${formatPath([`${where}.location`, ...(issue?.path ?? [])])}: ${issue?.message ?? 'invalid'}`,
    };
  }
  // map_to_crm: attribute values go to the mapped person fields (fields sent explicitly win).
  const mapped: Record<string, FieldValue> = {};
  for (const [attributeId, fieldId] of Object.entries(definition.config.map_to_crm ?? {})) {
    const value = attributes.values[attributeId];
    if (value !== undefined) mapped[fieldId] = value;
  }
  const byId = input.person_id !== undefined;
  if (byId && !isId(input.person_id))
    return { error: `${where}.person_id: expected a person ID (24 hexadecimal characters)` };
  const fields = byId
    ? { [PERSON_ID]: input.person_id, ...mapped }
    : { ...mapped, ...(input.fields ?? {}) };
  if (!byId && !input.fields)
    return {
      error: `${where}.fields: person fields (str::email or str::ei) or person_id are required`,
    };
  const recordOptions = byId ? { ...options, mergeBy: [PERSON_ID], byId: true } : options;
  const personRecord = prepareRecord({ fields }, index, recordOptions, tenant, 'activities');
  if ('error' in personRecord) return { error: personRecord.error };
  return {
    index,
    definition,
    values: attributes.values,
    ...(attributes.conversionValue === undefined
      ? {}
      : { conversionValue: attributes.conversionValue }),
    ...(location.data ? { location: location.data } : {}),
    createdAt,
    ...(input.key ? { key: input.key } : {}),
    personRecord,
    byId,
  };
}
