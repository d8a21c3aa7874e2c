import type { FieldValue } from '../fields/field-values.js';
import type { Person } from './person.js';

/** The tags field (`u4s::t`), and the real API's system fields `c` (created) and `l` (last seen). */
export const TAGS_FIELD_ID = 'u4s::t';
export const CREATED_FIELD = 'c';
export const LAST_SEEN_FIELD = 'l';
const TAG_FIELDS = new Set(['tags', TAGS_FIELD_ID]);

/** A value of the system and derived fields, as listings select and sort them. */
export function systemValue(person: Person, fieldId: string): FieldValue | undefined {
  if (TAG_FIELDS.has(fieldId)) return person.tags;
  if (fieldId === 'idt::o') return person.organization_id;
  if (fieldId === CREATED_FIELD) return person.created_at;
  if (fieldId === LAST_SEEN_FIELD) return person.fields['tme::last-seen'];
  return person.fields[fieldId];
}
