import { PERSON_BUILT_INS } from '../fields/field-catalog.js';
import type { FieldValue } from '../fields/field-values.js';
import { textOf } from '../fields/field-values.js';
import { phoneOf, timeOf } from '../filters/filter.js';
import { TAGS_FIELD_ID } from './system-fields.js';

/**
 * The field index: one entry for each value a person holds, per field, kept off the request
 * path from the people table's stream (docs/data-model.md, "indexes"). An entry's sort key is
 * the value encoded so that its text sorts as the values do, then `SEPARATOR` and the person's
 * ID; its partition is one of 16 shards of the field (the shard from the person's ID, as the
 * listing index's). So one field's entries are in value order, and one value's in ID (that
 * is, creation) order: equality, prefixes, ranges and sorting are all key ranges.
 */

/** DynamoDB orders string keys by their UTF-8 bytes; so do the merges of its shards. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Between a value and the ID in an entry's sort key: below every character a value keeps. */
export const SEPARATOR = '\u0001';
/** Above every character: the end of a key range. */
export const TOP = '\u{10FFFF}';
/** After `SEPARATOR` comes an ID (hexadecimal): every ID sorts before this. */
const AFTER_ID = '~';
/** Texts are indexed by their first characters: equal beyond them, the filter tells apart. */
export const INDEXED_TEXT_LENGTH = 200;

const ORGANIZATION_FIELD = 'idt::o';
const LEGACY_TAGS_FIELD = 'tags';

/** Text as the index keeps it: without case or control characters, at most 200 characters. */
export function indexedText(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.toLowerCase().replace(/[\u0000-\u001f\u007f]/g, ' ');
  const chars = Array.from(clean);
  return chars.length > INDEXED_TEXT_LENGTH ? chars.slice(0, INDEXED_TEXT_LENGTH).join('') : clean;
}

const NUMBER_OFFSET = 2n ** 53n;
const NUMBER_WIDTH = String(2n ** 54n).length;

/** A whole number as fixed-width digits that sort as the numbers do (negatives too). */
export function indexedNumber(n: number): string {
  const whole = Math.max(-(2 ** 53), Math.min(2 ** 53, Math.round(n)));
  return (BigInt(whole) + NUMBER_OFFSET).toString().padStart(NUMBER_WIDTH, '0');
}

/** The index's form of a stored value of a field of `type`, or none where it has no form. */
export function indexedValue(type: string, value: FieldValue): string | undefined {
  switch (type) {
    case 'bol':
      return typeof value === 'boolean' ? (value ? '1' : '0') : undefined;
    case 'int':
      return typeof value === 'number' && Number.isFinite(value) ? indexedNumber(value) : undefined;
    case 'tme':
    case 'dtz': {
      const at = timeOf(value);
      return at === undefined ? undefined : indexedNumber(at);
    }
    case 'phn':
      return phoneOf(value);
    default:
      return indexedText(textOf(value));
  }
}

export interface IndexEntry {
  /** The field (`u4s::t` for tags, `idt::o` for the organization). */
  field: string;
  /** The value's indexed form. */
  value: string;
}

/** What the index reads of a person (a person, or a stored item's image). */
export interface IndexedPerson {
  fields: Record<string, unknown>;
  tags: readonly string[];
  organization_id?: string | undefined;
  archived_at?: string | undefined;
}

/**
 * Values a person keeps that no filter or sort reads (the context messages of permission
 * changes): they have no entries.
 */
const UNLISTED = new Set(
  PERSON_BUILT_INS.filter((field) => !field.stored).map((field) => field.id),
);

/**
 * The entries of a person: one per stored field that has a value, one per tag, and the
 * organization. An archived person has none (archived people are never listed).
 */
export function indexEntriesOf(person: IndexedPerson | undefined): IndexEntry[] {
  if (!person || person.archived_at !== undefined) return [];
  const entries: IndexEntry[] = [];
  for (const [field, value] of Object.entries(person.fields)) {
    if (value === undefined || value === null || UNLISTED.has(field)) continue;
    const indexed = indexedValue(field.slice(0, 3), value as FieldValue);
    if (indexed !== undefined) entries.push({ field, value: indexed });
  }
  for (const tag of new Set(person.tags.map(indexedText))) {
    entries.push({ field: TAGS_FIELD_ID, value: tag });
  }
  if (person.organization_id) {
    entries.push({ field: ORGANIZATION_FIELD, value: person.organization_id });
  }
  return entries;
}

const entryId = (entry: IndexEntry) => `${entry.field}\u0000${entry.value}`;

/** The entries to delete and to put when a person goes from `before` to `after`. */
export function entryChanges(
  before: IndexedPerson | undefined,
  after: IndexedPerson | undefined,
): { removed: IndexEntry[]; added: IndexEntry[] } {
  const old = new Map(indexEntriesOf(before).map((entry) => [entryId(entry), entry]));
  const now = new Map(indexEntriesOf(after).map((entry) => [entryId(entry), entry]));
  return {
    removed: [...old].filter(([id]) => !now.has(id)).map(([, entry]) => entry),
    added: [...now].filter(([id]) => !old.has(id)).map(([, entry]) => entry),
  };
}

/** Whether a person (read now) still holds an entry: an entry not held is stale. */
export function holdsEntry(person: IndexedPerson, field: string, value: string): boolean {
  return indexEntriesOf(person).some((entry) => entry.field === field && entry.value === value);
}

/** An entry's sort key, and the value and person it names. */
export const entrySortKey = (value: string, personId: string) => `${value}${SEPARATOR}${personId}`;

export function parseEntrySortKey(key: string): { value: string; personId: string } {
  return { value: key.slice(0, -25), personId: key.slice(-24) };
}

/** An inclusive range of entry sort keys of one field. */
export interface EntryRange {
  field: string;
  from: string;
  to: string;
}

/** The entries of one value: in ID order. */
export function valueRange(field: string, value: string): EntryRange {
  return { field, from: `${value}${SEPARATOR}`, to: `${value}${SEPARATOR}${AFTER_ID}` };
}

/** The entries whose value starts with `prefix`. */
export function prefixRange(field: string, prefix: string): EntryRange {
  return { field, from: prefix, to: `${prefix}${TOP}` };
}

/** The entries of numbers (or times) from `low` to `high`, both included. */
export function numberRange(field: string, low: number, high: number): EntryRange {
  return {
    field,
    from: indexedNumber(low),
    to: `${indexedNumber(high)}${SEPARATOR}${AFTER_ID}`,
  };
}

/** Every entry of a field (every person who holds a value). */
export function wholeField(field: string): EntryRange {
  return { field, from: '', to: TOP };
}

/** The field whose entries hold what a filter reads of `fieldId` (`tags` is the tags). */
export function indexedFieldOf(fieldId: string): string {
  return fieldId === LEGACY_TAGS_FIELD ? TAGS_FIELD_ID : fieldId;
}

/** A stored person item (a stream image) as the index reads it. */
export function indexedPersonOf(
  item: Record<string, unknown> | undefined,
): IndexedPerson | undefined {
  if (!item) return undefined;
  const isRecord = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  return {
    fields: isRecord(item.fields) ? item.fields : {},
    tags: isRecord(item.tags) ? Object.keys(item.tags) : [],
    organization_id: typeof item.organization_id === 'string' ? item.organization_id : undefined,
    archived_at: typeof item.archived_at === 'string' ? item.archived_at : undefined,
  };
}

/**
 * What a person's changes, oldest first (one stream batch's), do to their entries: from the
 * item before the first to the item after the last. Applied again, or again from a later
 * change, it leaves the same entries.
 */
export function entryChangesOf(
  changes: readonly { oldImage?: Record<string, unknown>; newImage?: Record<string, unknown> }[],
) {
  return entryChanges(
    indexedPersonOf(changes[0]?.oldImage),
    indexedPersonOf(changes.at(-1)?.newImage),
  );
}
