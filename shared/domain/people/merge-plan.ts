import { FieldValueError, ValidationError } from '../errors.js';
import type { FieldValues } from '../fields/field-catalog.js';
import type { FieldValue } from '../fields/field-values.js';
import { isId } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import { LocationInput } from '../location.js';
import { claimChanges, planFieldChanges } from '../merge/field-changes.js';
import { MAX_TAGS_PER_PERSON } from '../merge/record-budget.js';
import { findRecordId, type MergeRecord } from '../merge/merge-engine.js';
import { SEARCH_INDEXES, searchTokens, TOKEN_SOURCES, type SearchTokens } from './person-index.js';
import { formatPath } from '../validation.js';
import { PersonRecord, type MergeOptions, type MergeStrategy } from './merge-request.js';
import {
  claimsOf,
  EMAIL,
  EMAIL_PERMISSION,
  EXTERNAL_ID,
  fieldChangedActivity,
  PERMISSION_ACTIVITIES,
  PERSON_ID,
  SMS_PERMISSION,
  type Person,
  type RecordedActivity,
} from './person.js';

/**
 * The pure half of person merge: validating one record, and deciding what merging it into
 * an existing person (or creating one) changes. No I/O; `merge-people.ts` does the reads and
 * the conditional writes around it.
 */
export interface PreparedRecord extends MergeRecord {
  index: number;
  values: FieldValues;
  tags: string[];
  unsetTags: string[];
  /** Per-field overrides from `clear_fields`: false keeps an existing value (strategy 2). */
  overwrite: Record<string, boolean>;
  /** The key values this record names (field → normalized value). */
  claims: Map<string, string>;
  location?: LocationInput;
}

export interface InvalidRecord {
  index: number;
  error: string;
}

function invalid(index: number, error: string): InvalidRecord {
  return { index, error };
}

/** Validates one entry of `people`. An invalid time zone is thrown (the whole request fails). */
export function prepareRecord(
  raw: unknown,
  index: number,
  options: MergeOptions,
  tenant: Tenant,
  list: string | ((index: number) => string) = 'people',
): PreparedRecord | InvalidRecord {
  // A list name (`people[3]`), or where the record stands in another request (`emails[5]`).
  const where = typeof list === 'string' ? `${list}[${index}]` : list(index);
  const parsed = PersonRecord.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = formatPath([where, ...(issue?.path ?? [])]);
    return invalid(index, `${path}: ${issue?.message ?? 'invalid'}`);
  }
  const record = parsed.data;
  const { [PERSON_ID]: personIdValue, ...fields } = record.fields;
  let personId: string | undefined;
  if (options.byId) {
    if (!isId(personIdValue)) {
      return invalid(
        index,
        `${where}.fields.${PERSON_ID}: expected the ID of a person (24 hexadecimal characters)`,
      );
    }
    personId = personIdValue;
  } else if (personIdValue !== undefined) {
    return invalid(
      index,
      `${where}.fields.${PERSON_ID}: is read-only; to merge by ID set merge_by to ["str::person_id"]`,
    );
  }
  let values: FieldValues;
  try {
    values = tenant.personFields.parseValues(fields, `${where}.fields`);
  } catch (error) {
    if (error instanceof FieldValueError) return invalid(index, `${where}.fields.${error.message}`);
    if (error instanceof ValidationError) return invalid(index, error.message);
    throw error;
  }
  if (!options.byId && (values[EMAIL] ?? null) === null && (values[EXTERNAL_ID] ?? null) === null) {
    return invalid(index, `${where}.fields: str::email or str::ei is required`);
  }
  for (const permission of [EMAIL_PERMISSION, SMS_PERMISSION]) {
    if (values[permission] === null) {
      return invalid(index, `${where}.fields.${permission}: cannot be cleared; send true or false`);
    }
  }
  const overwrite: Record<string, boolean> = {};
  for (const [fieldId, flag] of Object.entries(record.clear_fields ?? {})) {
    if (!tenant.personFields.get(fieldId)) {
      return invalid(index, `${where}.clear_fields.${fieldId}: is not a person field`);
    }
    if (typeof flag !== 'boolean') {
      return invalid(index, `${where}.clear_fields.${fieldId}: expected true or false`);
    }
    overwrite[fieldId] = flag;
  }
  const location = LocationInput.optional().safeParse(record.location);
  if (!location.success) {
    const issue = location.error.issues[0];
    return invalid(
      index,
      `${formatPath([`${where}.location`, ...(issue?.path ?? [])])}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const unsetTags = [...new Set(record.unset_tags ?? [])];
  return {
    index,
    values,
    ...(personId ? { recordId: personId } : {}),
    tags: [...new Set(record.tags ?? [])].filter((tag) => !unsetTags.includes(tag)),
    unsetTags,
    overwrite,
    claims: claimsOf(values, options.keyFields),
    ...(location.data ? { location: location.data } : {}),
  };
}

/** Which person a record names, given who owns which key value (`owner(field, value)`). */
export const findPersonId = findRecordId;

function contextOf(record: PreparedRecord, contextField: string, fallback: string): string {
  const value = record.values[contextField];
  return typeof value === 'string' && value.trim() !== '' ? value : fallback;
}

function permissionActivity(
  record: PreparedRecord,
  kind: keyof typeof PERMISSION_ACTIVITIES,
): RecordedActivity {
  const { activity, context, text } = PERMISSION_ACTIVITIES[kind];
  return { field_id: activity, attr: { [context]: contextOf(record, context, text) } };
}

/**
 * The context message of each permission change, kept on the person under its context field
 * (`str::u-ctx`, …) so that listings can select the latest one, as the real API's can.
 */
function contextFields(activities: RecordedActivity[]): Record<string, FieldValue> {
  const fields: Record<string, FieldValue> = {};
  for (const activity of activities) {
    for (const { activity: id, context } of Object.values(PERMISSION_ACTIVITIES)) {
      const message = activity.attr[context];
      if (activity.field_id === id && message !== undefined) fields[context] = message;
    }
  }
  return fields;
}

/** Describes a field whose changes are recorded (its name), or `undefined` if they are not. */
export type TrackedFields = (fieldId: string) => string | undefined;

export interface CreatePlan {
  kind: 'create';
  person: Person;
  claims: Map<string, string>;
  activities: RecordedActivity[];
  subscribed: boolean;
}

/** A new person: email permission defaults to subscribed, SMS to not subscribed. */
export function planCreate(
  record: PreparedRecord,
  id: string,
  now: string,
  isStored: (fieldId: string) => boolean,
): CreatePlan {
  const fields: Record<string, FieldValue> = {};
  for (const [fieldId, value] of Object.entries(record.values)) {
    if (value !== null && isStored(fieldId)) fields[fieldId] = value;
  }
  const subscribed = fields[EMAIL_PERMISSION] !== false;
  fields[EMAIL_PERMISSION] = subscribed;
  const smsGiven = typeof fields[SMS_PERMISSION] === 'boolean';
  fields[SMS_PERMISSION] ??= false;
  const activities = [
    permissionActivity(record, subscribed ? 'emailSubscribed' : 'emailUnsubscribed'),
  ];
  if (smsGiven) {
    activities.push(
      permissionActivity(record, fields[SMS_PERMISSION] ? 'smsSubscribed' : 'smsUnsubscribed'),
    );
  }
  Object.assign(fields, contextFields(activities));
  return {
    kind: 'create',
    person: { id, fields, tags: record.tags, created_at: now, updated_at: now, version: 1 },
    claims: claimsOf(fields, [...record.claims.keys()]),
    activities,
    subscribed,
  };
}

export interface UpdatePlan {
  kind: 'update';
  before: Person;
  after: Person;
  /** Fields written unconditionally (strategy 2). */
  sets: Record<string, FieldValue>;
  /** Fields written only where the person has no value (strategy 1, or clear_fields false). */
  setsIfAbsent: Record<string, FieldValue>;
  /** Fields cleared (`null`) that the person held when read. */
  removes: string[];
  /** Fields cleared that the person did not hold when read: removed again, harmlessly. */
  clears: string[];
  /** Tags the person did not have when read. */
  addTags: string[];
  /** Tags of `unset_tags` the person had when read. */
  removeTags: string[];
  /** Every tag of `unset_tags`: the write removes them all, whatever the read saw. */
  unsetTags: string[];
  /** Values the write is conditioned on: the plan is only right if they have not changed. */
  expected: Record<string, FieldValue | undefined>;
  /** When tags are added: the write requires the person to hold at most this many before it. */
  tagRoom?: number;
  claimsAdded: Map<string, string>;
  claimsReleased: Map<string, string>;
  activities: RecordedActivity[];
  subscriberDelta: number;
  /**
   * The search and sort tokens that change (email or name changed): those indexes' only. An
   * index key left as it was is not written again: its source may change meanwhile through
   * another write (which sets the key it makes), and this update does not condition on it.
   */
  tokens?: Partial<SearchTokens>;
}

/**
 * Merges a record into an existing person under strategy 1 (append only) or 2 (overwrite;
 * `null` clears; `clear_fields` can protect single fields). Returns `undefined` when nothing
 * would change, so that no write is made. `before` comes from a strongly consistent read;
 * `guard` names fields whose values the write is conditioned on (the key the person was
 * found by), so an update never lands on a person who gave the key up meanwhile.
 */
export function planUpdate(
  before: Person,
  record: PreparedRecord,
  strategy: Exclude<MergeStrategy, 3>,
  keyFields: readonly string[],
  now: string,
  isStored: (fieldId: string) => boolean,
  guard: readonly string[] = [],
  tracked: TrackedFields = () => undefined,
): UpdatePlan | undefined {
  const {
    sets,
    setsIfAbsent,
    removes,
    clears,
    after: afterFields,
  } = planFieldChanges(before.fields, record.values, strategy, record.overwrite, isStored);
  const addTags = record.tags.filter((tag) => !before.tags.includes(tag));
  const removeTags = record.unsetTags.filter((tag) => before.tags.includes(tag));
  const changed = [...Object.keys(sets), ...Object.keys(setsIfAbsent), ...removes];
  if (changed.length === 0 && addTags.length === 0 && removeTags.length === 0) return undefined;

  const expected: Record<string, FieldValue | undefined> = {};
  for (const field of guard) expected[field] = before.fields[field];
  const activities: RecordedActivity[] = [];
  let subscriberDelta = 0;
  for (const [field, on, off] of [
    [EMAIL_PERMISSION, 'emailSubscribed', 'emailUnsubscribed'],
    [SMS_PERMISSION, 'smsSubscribed', 'smsUnsubscribed'],
  ] as const) {
    if (!changed.includes(field)) continue;
    // The activity and the subscriber count depend on the previous value: condition on it.
    expected[field] = before.fields[field];
    const granted = afterFields[field] === true;
    activities.push(permissionActivity(record, granted ? on : off));
    if (field === EMAIL_PERMISSION) {
      subscriberDelta = granted ? 1 : before.fields[field] === true ? -1 : 0;
    }
  }
  // The latest context message of each permission changed is kept with it.
  for (const [field, message] of Object.entries(contextFields(activities))) {
    sets[field] = message;
    afterFields[field] = message;
  }
  // Tracked fields: an activity per change, exact because the write is conditioned on the
  // value it was made from.
  for (const field of changed) {
    const label = tracked(field);
    if (label === undefined) continue;
    expected[field] = before.fields[field];
    activities.push(fieldChangedActivity(field, label, before.fields[field], afterFields[field]));
  }
  const { claimsAdded, claimsReleased } = claimChanges(
    before.fields,
    afterFields,
    keyFields,
    expected,
  );
  // Index tokens derive from email and name: the write must see the values they were made from.
  const tokensBefore = searchTokens(before.fields);
  const tokensAfter = searchTokens(afterFields);
  const changedTokens = SEARCH_INDEXES.filter(
    (index) => tokensBefore[index] !== tokensAfter[index],
  );
  const tokensChanged = changedTokens.length > 0;
  // A field this update overwrites is written in the same atomic update as the tokens; any
  // other field a changed token is made from must still hold the value it was made from.
  for (const field of new Set(changedTokens.flatMap((index) => TOKEN_SOURCES[index]))) {
    if (field in sets || removes.includes(field)) continue;
    expected[field] = before.fields[field];
  }
  // Clearing again what was absent must not remove a key or a token source set meanwhile
  // (its claim or index entry would be left behind): those clears require it still absent.
  const derived = new Set([...keyFields, ...Object.values(TOKEN_SOURCES).flat()]);
  for (const field of clears) if (derived.has(field)) expected[field] = undefined;
  const tags = [...before.tags.filter((tag) => !record.unsetTags.includes(tag)), ...addTags];
  return {
    kind: 'update',
    before,
    after: {
      ...before,
      fields: afterFields,
      tags,
      updated_at: now,
      ...(before.version !== undefined ? { version: before.version + 1 } : {}),
    },
    sets,
    setsIfAbsent,
    removes,
    clears,
    addTags,
    removeTags,
    unsetTags: record.unsetTags,
    expected,
    // Tags this write removes make room too (if another request removed them first, the
    // person holds fewer anyway).
    ...(addTags.length > 0
      ? { tagRoom: MAX_TAGS_PER_PERSON - addTags.length + removeTags.length }
      : {}),
    claimsAdded,
    claimsReleased,
    activities,
    subscriberDelta,
    ...(tokensChanged
      ? { tokens: Object.fromEntries(changedTokens.map((index) => [index, tokensAfter[index]])) }
      : {}),
  };
}
