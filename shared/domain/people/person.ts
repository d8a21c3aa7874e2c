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
}

export const EMAIL = 'str::email';
export const EXTERNAL_ID = 'str::ei';
export const PERSON_ID = 'str::person_id';
export const EMAIL_PERMISSION = 'bol::p';
export const SMS_PERMISSION = 'bol::sp';

/**
 * The fields whose values identify a person and are unique per instance: email, external ID
 * and every field a data source of the instance merges by. Each value a person holds for
 * them is claimed with a conditional write, so two people can never hold the same one.
 */
export function keyFieldsOf(instance: InstanceSchema): string[] {
  const fields = new Set([EMAIL, EXTERNAL_ID]);
  for (const source of instance.data_sources) {
    for (const field of source.merge_by) if (field !== PERSON_ID) fields.add(field);
  }
  return [...fields];
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
}
