import type { RecordOrigin } from '../merge/merge-engine.js';
import type { FieldValue } from '../fields/field-values.js';
import type { InstanceSchema } from '../tenancy.js';

/** A person as the domain sees it: stored field values, tags, organization, timestamps. */
export interface Person {
  id: string;
  fields: Record<string, FieldValue>;
  tags: string[];
  organization_id?: string;
  created_at: string;
  updated_at: string;
  /** Counts the writes of the person: a whole-state write is conditioned on it. */
  version?: number;
  /** Set while the person is archived (out of listings and counters; not merged into). */
  archived_at?: string;
  /** The queued request's record that created the person, if one did (never shown). */
  origin?: RecordOrigin;
}

export const EMAIL = 'str::email';
export const EXTERNAL_ID = 'str::ei';
export const PERSON_ID = 'str::person_id';
export const EMAIL_PERMISSION = 'bol::p';
export const SMS_PERMISSION = 'bol::sp';

/**
 * The fields whose values are unique per instance: email, external ID and the custom fields
 * declared unique (also while their existing values are still being claimed). Each value a
 * person holds for them is claimed with a conditional write in the transaction that writes
 * it, so two people can never come to hold the same one.
 */
export function keyFieldsOf(instance: InstanceSchema): string[] {
  return [EMAIL, EXTERNAL_ID, ...Object.keys(instance.key_fields ?? {})];
}

/** The fields a person can be merged by (with `str::person_id` alone): unique fields once claimed. */
export function mergeKeysOf(instance: InstanceSchema): string[] {
  const active = Object.entries(instance.key_fields ?? {}).filter(
    ([, state]) => state === 'active',
  );
  return [EMAIL, EXTERNAL_ID, ...active.map(([field]) => field)];
}

export { claimsOf, normalizeKey } from '../merge/field-changes.js';

/** Built-in activities recorded when a subscription permission actually changes. */
export const PERMISSION_ACTIVITIES = {
  emailSubscribed: { activity: 'act::s-all', context: 'str::s-ctx', text: 'Subscribed via API' },
  emailUnsubscribed: {
    activity: 'act::u-all',
    context: 'str::u-ctx',
    text: 'Unsubscribed via API',
  },
  smsSubscribed: { activity: 'act::ois-all', context: 'str::soi-ctx', text: 'Subscribed via API' },
  smsUnsubscribed: {
    activity: 'act::oos-all',
    context: 'str::soo-ctx',
    text: 'Unsubscribed via API',
  },
} as const;

export interface RecordedActivity {
  field_id: string;
  attr: Record<string, FieldValue>;
  /** The activity's display text, where it has one of its own. */
  display?: string;
}

/**
 * The activity recorded when a field whose changes are tracked (`track_changes`) changes:
 * the field (`str::field-id`), its value before (`old`) and after (`new`; either absent when
 * the field had or has none), shown as `Custom: <field name> changed`.
 */
export const FIELD_CHANGED = 'act::field-changed';

export function fieldChangedActivity(
  fieldId: string,
  label: string,
  before: FieldValue | undefined,
  after: FieldValue | undefined,
): RecordedActivity {
  return {
    field_id: FIELD_CHANGED,
    attr: {
      'str::field-id': fieldId,
      ...(before !== undefined ? { old: before } : {}),
      ...(after !== undefined ? { new: after } : {}),
    },
    display: `Custom: ${label} changed`,
  };
}
