import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  FieldValueError,
  ServiceUnavailableError,
  stoppedPartWay,
  ValidationError,
  type ErrorDetail,
} from '../errors.js';
import { runBounded } from '../../lib/bounded.js';
import { backoffMs, canWait, currentDeadline, sleep } from '../../lib/time-budget.js';
import {
  everyRecordInvalid,
  IncompleteMergeError,
  plainStatus,
  type RecordLedger,
} from '../merge/merge-engine.js';
import { jsonBytes, MAX_RECORD_BYTES } from '../merge/record-budget.js';
import type { FieldValue } from '../fields/field-values.js';
import { parseTimestamp } from '../fields/field-values.js';
import { derivedId, isId, newId } from '../ids.js';
import type { StoredActivityDefinition } from '../instance-config.js';
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

/** Accounts' (organizations') activities: `act:oc:<name>`. */
export const isAccountActivity = (activityId: string) => activityId.startsWith('act:oc:');

/**
 * What people's and accounts' activities read alike: the definition (of the kind the route
 * records, not archived), `created`, and the attributes with the definition's types (a date
 * without a zone takes the instance's), at most `MAX_RECORD_BYTES` of them.
 */
export function readActivity(
  input: { activity_id: string; attributes?: Record<string, unknown>; created?: string },
  where: string,
  definitions: ReadonlyMap<string, CompiledDefinition>,
  kind: 'person' | 'account',
  tenant: Tenant,
  now: Date,
):
  | {
      definition: CompiledDefinition;
      createdAt: string;
      attributes: ReturnType<typeof parseAttributes>;
    }
  | { error: string } {
  const definition = definitions.get(input.activity_id);
  if (!definition)
    return { error: `${where}.activity_id: no activity definition "${input.activity_id}"` };
  if (kind === 'person' && isAccountActivity(definition.config.id)) {
    return {
      error: `${where}.activity_id: "${input.activity_id}" is an account activity (record it with POST /v1/accounts/activities/create)`,
    };
  }
  if (kind === 'account' && !isAccountActivity(definition.config.id)) {
    return {
      error: `${where}.activity_id: "${input.activity_id}" is a person activity (record it with POST /v1/activities/create); account activities are act:oc:<name>`,
    };
  }
  if (definition.config.archived_at) {
    return {
      error: `${where}.activity_id: the activity definition "${input.activity_id}" is archived (its recorded activities stay; no new ones are recorded)`,
    };
  }
  let createdAt = now.toISOString();
  if (input.created !== undefined) {
    const date = parseTimestamp(input.created);
    if (!date)
      return { error: `${where}.created: expected an ISO 8601 timestamp with date, time and zone` };
    createdAt = date.toISOString();
  }
  let attributes: ReturnType<typeof parseAttributes>;
  try {
    attributes = parseAttributes(definition, input.attributes ?? {}, tenant.instance.timezone);
  } catch (error) {
    if (error instanceof FieldValueError) return { error: `${where}.attributes.${error.message}` };
    throw error;
  }
  const attributeBytes = jsonBytes(attributes.values);
  if (attributeBytes > MAX_RECORD_BYTES) {
    return {
      error: `${where}.attributes: the attributes take ${attributeBytes} bytes; at most ${MAX_RECORD_BYTES} are allowed (as UTF-8 JSON)`,
    };
  }
  return { definition, createdAt, attributes };
}

/** A write of activities that stopped part-way: `notWritten` were not written. */
export class ActivitiesNotWrittenError extends Error {
  constructor(
    readonly notWritten: ActivityToWrite[],
    override readonly cause: unknown,
  ) {
    super('activities were not all written');
  }
}

/** A claimed key is held this long past the request's deadline if the request dies. */
const KEY_LEASE_MARGIN_MS = 5_000;

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
  /**
   * Its definition tracks it as a touch: the last-seen worker (the activities table's stream)
   * moves the person's last seen to its time (last-seen.ts).
   */
  touch?: true;
  /**
   * The queued request that records it: its answer names the person without a reference
   * item (`RecordLedger.carried`), and erasing the person finds the request here.
   */
  origin_request?: string;
}

export interface RecordedKey {
  activity_id: string;
  person_id: string;
  person_status: PersonStatus;
}

/**
 * An activity `key`, claimed before anything of its activity happens: `claimed` by this
 * request (its lease ends at `leaseUntil`), `done` by an earlier one (its answer), or
 * `pending` in another request still running.
 */
export type KeyState =
  { kind: 'claimed' } | { kind: 'done'; recorded: RecordedKey } | { kind: 'pending' };

export interface ActivityStore {
  /** Claims each key for this request (`token`), or says who holds it. */
  claimKeys(
    instanceId: string,
    keys: string[],
    token: string,
    leaseUntil: number,
  ): Promise<Map<string, KeyState>>;
  /** The state of keys (strongly consistent); a key nobody holds is absent. */
  readKeys(instanceId: string, keys: string[]): Promise<Map<string, KeyState>>;
  /** Gives up keys this request claimed and did not record. */
  releaseKeys(instanceId: string, keys: string[], token: string): Promise<void>;
  /**
   * Writes activities (unkeyed ones in batches; each keyed one in a transaction that marks
   * its key done, conditioned on this request still holding it). Returns the keys another
   * request took over meanwhile (their activities were not written).
   */
  write(instanceId: string, activities: ActivityToWrite[], token: string): Promise<string[]>;
}

export interface ActivityContext {
  tenant: Tenant;
  people: PeopleStore;
  activities: ActivityStore;
  location: LocationServices;
  /** Reads the instance's activity definitions afresh (the tenant's may be cached). */
  freshDefinitions: () => Promise<StoredActivityDefinition[]>;
  now?: () => Date;
  /**
   * For a queued request: its ledger (each activity takes effect once, with an ID derived
   * from the request and its index) and when it was accepted (the time of activities sent
   * without `created`, and the time the 90-day window is measured from).
   */
  queued?: { ledger: RecordLedger; acceptedAt: Date };
}

/**
 * What `POST /v1/activities/create` checks before anything is written: the dates (the whole
 * request fails on one too old or in the future), the merge preferences, every activity
 * (definitions read afresh when the cached ones lack an ID), the address-lookup plan. A
 * request whose every activity is invalid is a 400. An asynchronous request is checked with
 * it before it is queued.
 */
export async function prepareActivities(
  request: ActivitiesCreateRequest,
  context: Pick<ActivityContext, 'tenant' | 'freshDefinitions'>,
  at: Date,
) {
  const { tenant } = context;
  checkDates(request.activities, at);
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
  const entries: (ActivityEntry | undefined)[] = [];
  const valid: Pending[] = [];
  request.activities.forEach((raw, index) => {
    const prepared = prepareActivity(raw, index, definitions, options, tenant, at);
    if ('error' in prepared)
      entries[index] = { person_status: 'invalid', status: 'invalid', error: prepared.error };
    else valid.push(prepared);
  });
  if (valid.length === 0) {
    throw new ValidationError(
      `No activity was recorded: every activity is invalid (${entries[0]?.error ?? ''})`,
      entries.map((entry, index) => ({
        index,
        status: 'invalid' as const,
        error: entry?.error ?? '',
      })),
    );
  }
  checkAddressLookups(
    valid.map((p) => p.location),
    tenant.instance.plan,
  );
  return { options, definitions, entries, valid };
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

/** The whole request fails when an activity is back-dated too far or dated in the future. */
export function checkDates(raw: unknown[], now: Date): void {
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
 * fails the request); each activity `key` is claimed before anything of its activity
 * happens (a key an earlier request recorded answers with that record, one a concurrent
 * request holds is waited for); the people are found or created with the shared merge
 * engine; then the activities are written, keyed ones each with its key. A request that
 * stops part-way (the store stays unavailable) gives its unrecorded keys back and answers
 * 503 saying which activities were recorded.
 */
export async function recordActivities(
  request: ActivitiesCreateRequest,
  context: ActivityContext,
): Promise<ActivityEntry[]> {
  const { tenant, queued } = context;
  const instanceId = tenant.instance.id;
  const now = context.now ?? (() => new Date());
  const started = queued?.acceptedAt ?? now();
  const prepared = await prepareActivities(request, context, started);
  const { entries, valid } = prepared;
  const options = queued ? { ...prepared.options, ledger: queued.ledger } : prepared.options;
  // A queued request's activity IDs derive from the request and the activity's index.
  const activityId = (index: number, createdAt: string) =>
    queued
      ? derivedId(`${queued.ledger.requestId}#${index}`, Date.parse(createdAt))
      : newId(Date.parse(createdAt));

  // Keys first: nothing of an activity happens before its key is ours.
  const token = randomUUID();
  const keys = [...new Set(valid.flatMap((p) => (p.key ? [p.key] : [])))];
  let keyStates: Map<string, KeyState>;
  try {
    keyStates = await claimKeys(context.activities, instanceId, keys, token);
  } catch (error) {
    throw stoppedPartWay(error, activityDetails(request.activities.length, entries));
  }
  const claimed = keys.filter((key) => keyStates.get(key)?.kind === 'claimed');
  const firstWithKey = new Map<string, number>();
  const pending: Pending[] = [];
  for (const p of valid) {
    const state = p.key ? keyStates.get(p.key) : undefined;
    if (state?.kind === 'done') {
      entries[p.index] = { ...state.recorded, status: 'ingested' };
    } else if (p.key && firstWithKey.has(p.key)) {
      // The same key twice in one request: the later one answers with the first's record.
      continue;
    } else {
      if (p.key) firstWithKey.set(p.key, p.index);
      pending.push(p);
    }
  }
  const unrecorded = new Set(claimed);
  const giveBackKeys = async () => {
    if (unrecorded.size > 0) {
      await context.activities.releaseKeys(instanceId, [...unrecorded], token).catch(() => {
        // Left held until their lease ends; a retry then claims them again.
      });
    }
  };
  const stop = async (cause: unknown): Promise<never> => {
    await giveBackKeys();
    throw stoppedPartWay(cause, activityDetails(request.activities.length, entries));
  };

  let written: ActivityToWrite[] = [];
  const indexOf = new Map<ActivityToWrite, number>();
  const answerWritten = (activity: ActivityToWrite) => {
    if (activity.key !== undefined) unrecorded.delete(activity.key);
    queued?.ledger.carried?.add(activity.person_id);
    entries[indexOf.get(activity) ?? -1] = {
      person_id: activity.person_id,
      person_status: activity.person_status,
      activity_id: activity.id,
      status: 'ingested',
    };
  };
  try {
    const people = await resolvePeople(pending, options, context, now);
    const located = new Map<number, ResolvedLocation | undefined>();
    const locating = await runBounded(
      pending.filter((p) => p.location),
      8,
      async (p) => {
        located.set(
          p.index,
          await resolveLocation(p.location, instanceId, context.location, started),
        );
      },
    );
    if (locating.failure) throw locating.failure.error;
    for (const p of pending) {
      const person = people.get(p.index);
      if (!person?.personId) {
        entries[p.index] = {
          person_status: 'invalid',
          status: 'invalid',
          error: person?.error ?? 'no person',
        };
        continue;
      }
      const location = located.get(p.index);
      const activity: ActivityToWrite = {
        id: activityId(p.index, p.createdAt),
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
        ...(p.definition.config.track_as_touch ? { touch: true as const } : {}),
        ...(queued ? { origin_request: queued.ledger.requestId } : {}),
      };
      indexOf.set(activity, p.index);
      written.push(activity);
    }
    // Keys of activities whose person was invalid were not recorded: they are given back.
    const lost = new Set(await context.activities.write(instanceId, written, token));
    for (const activity of written) {
      if (activity.key === undefined || !lost.has(activity.key)) answerWritten(activity);
    }
    // Our lease ran out and another request took these keys over: its records answer.
    const lostStates =
      lost.size > 0
        ? await context.activities
            .readKeys(instanceId, [...lost])
            .catch(() => new Map<string, KeyState>())
        : new Map<string, KeyState>();
    for (const activity of written) {
      if (activity.key === undefined || !lost.has(activity.key)) continue;
      const index = indexOf.get(activity) ?? -1;
      unrecorded.delete(activity.key);
      const state = lostStates.get(activity.key);
      entries[index] =
        state?.kind === 'done'
          ? { ...state.recorded, status: 'ingested' }
          : {
              person_status: 'invalid',
              status: 'invalid',
              error: `activities[${index}].key: another request is recording this key; try again`,
            };
    }
    written = written.filter((activity) => activity.key === undefined || !lost.has(activity.key));
  } catch (error) {
    if (error instanceof IncompleteMergeError) {
      for (const [index, outcome] of error.outcomes) {
        if (outcome.status === 'invalid') {
          entries[index] = {
            person_status: 'invalid',
            status: 'invalid',
            error: outcome.error ?? 'invalid',
          };
        }
      }
      return stop(error.cause);
    }
    if (error instanceof ActivitiesNotWrittenError) {
      for (const activity of written) {
        if (!error.notWritten.includes(activity)) answerWritten(activity);
      }
      return stop(error.cause);
    }
    return stop(error);
  }
  // Later activities of a key repeated in the request answer with the first one's record.
  for (const p of valid) {
    if (entries[p.index] === undefined && p.key !== undefined) {
      const first = firstWithKey.get(p.key);
      const entry = first === undefined ? undefined : entries[first];
      if (entry) entries[p.index] = { ...entry };
    }
  }
  await giveBackKeys();
  // Last seen follows from the activities' stream (last-seen.ts), not from this request.
  return everyRecordInvalid(
    request.activities.map(
      (_, index): ActivityEntry =>
        entries[index] ?? { person_status: 'invalid', status: 'invalid', error: 'not recorded' },
    ),
    'No activity was recorded',
  );
}

/** Waits this long at most between looks at a key another request is recording. */
const KEY_POLL_CAP_MS = 250;

/**
 * Claims every key of the request; keys held by a concurrent request are watched (strongly
 * consistent reads, with backoff) until that request records them (their answer is ours)
 * or gives them up (then claimed again). If one is still held when the time budget runs
 * out, the keys this request claimed are given back and the answer is 503.
 */
async function claimKeys(
  store: ActivityStore,
  instanceId: string,
  keys: string[],
  token: string,
): Promise<Map<string, KeyState>> {
  const states = new Map<string, KeyState>();
  if (keys.length === 0) return states;
  const leaseUntil = currentDeadline() + KEY_LEASE_MARGIN_MS;
  let waiting = keys;
  try {
    for (let attempt = 0; waiting.length > 0; attempt += 1) {
      if (attempt > 0) {
        const wait = backoffMs(attempt, 20, KEY_POLL_CAP_MS);
        if (!canWait(wait)) {
          throw new ServiceUnavailableError(
            `activities: another request is still recording the key "${waiting[0] ?? ''}"; try again shortly`,
          );
        }
        await sleep(wait);
        // Keys done meanwhile answer at once; only keys nobody holds are claimed again.
        const now = await store.readKeys(instanceId, waiting);
        for (const [key, state] of now) if (state.kind === 'done') states.set(key, state);
        waiting = waiting.filter((key) => !states.has(key));
        const free = waiting.filter((key) => !now.has(key));
        if (free.length === 0) continue;
      }
      const claimed = await store.claimKeys(instanceId, waiting, token, leaseUntil);
      for (const [key, state] of claimed) if (state.kind !== 'pending') states.set(key, state);
      waiting = waiting.filter((key) => !states.has(key));
    }
  } catch (error) {
    // Nothing of these activities happened: the keys this request claimed are given back.
    const mine = keys.filter((key) => states.get(key)?.kind === 'claimed');
    if (mine.length > 0) await store.releaseKeys(instanceId, mine, token).catch(() => undefined);
    throw error;
  }
  return states;
}

/**
 * Finds or creates the person of each activity: by fields with the merge preferences, or by
 * ID (map_to_crm may update them too). `IncompleteMergeError` if the store stops the merge.
 */
async function resolvePeople(
  pending: Pending[],
  options: MergeOptions,
  context: ActivityContext,
  now: () => Date,
): Promise<Map<number, { personId?: string; status: PersonStatus; error?: string }>> {
  const { tenant } = context;
  const statuses = new Map<number, { personId?: string; status: PersonStatus; error?: string }>();
  const merge = async (records: PreparedRecord[], mergeWith: MergeOptions, byId: boolean) => {
    if (records.length === 0) return;
    const outcomes = await mergePreparedPeople(
      records,
      mergeWith,
      { tenant, store: context.people, location: context.location, now },
      'activities',
    );
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
          status: byId ? 'by-id' : plainStatus(outcome.status),
        });
      }
    }
  };
  const records = (byId: boolean) =>
    pending.filter((p) => p.byId === byId).flatMap((p) => (p.personRecord ? [p.personRecord] : []));
  await merge(records(false), options, false);
  await merge(
    records(true),
    { ...options, mergeBy: [PERSON_ID], byId: true, strategy: 2, skipNonExisting: false },
    true,
  );
  return statuses;
}

/** Per-activity details of a request that stopped part-way. */
function activityDetails(count: number, entries: (ActivityEntry | undefined)[]): ErrorDetail[] {
  return Array.from({ length: count }, (_, index) => {
    const entry = entries[index];
    if (!entry) return { index, status: 'not_applied', error: 'not recorded: send it again' };
    return {
      index,
      status: entry.status,
      ...(entry.activity_id ? { activity_id: entry.activity_id } : {}),
      ...(entry.person_id ? { person_id: entry.person_id } : {}),
      ...(entry.error ? { error: entry.error } : {}),
    };
  });
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
  const read = readActivity(input, where, definitions, 'person', tenant, now);
  if ('error' in read) return read;
  const { definition, createdAt, attributes } = read;
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
