import { ValidationError } from '../errors.js';
import type { FieldCatalog } from '../fields/field-catalog.js';
import { isGeoValue, type FieldValue } from '../fields/field-values.js';
import type { Person } from './person.js';

/**
 * Person filters (`filter` of person get; audiences will build on it): `$and` and `$or` of
 * conditions, each condition `{"$<operator>": {"field_id": "...", "value": ...}}`. Text
 * comparisons ignore case. Members a condition does not use (`label`, `timezone`, …) are
 * carried, not refused.
 *
 * | operator | matches |
 * |---|---|
 * | `$has_any_value` | the field holds a value, including 0 and "" (not null, not absent) |
 * | `$has_no_value` | the field is null or absent |
 * | `$str::is`, `$str::is_not` | equal / not equal |
 * | `$str::contains`, `$str::starts_with` | substring / prefix |
 * | `$int::is`, `$int::greater_than`, `$int::less_than` | numeric comparisons |
 * | `$bol::is` | true or false |
 * | `$tme::absolute_after`, `$tme::absolute_before` | a time after / before `value` (ISO 8601) |
 * | `$tme::relative_more_than`, `$tme::relative_less_than` | more / less than `days_ago` days ago |
 * | `$u4s::is`, `$u4s::is_not` | the person has (not) the tag `value`: its ID or its name |
 *
 * Fields: the person fields that are stored, `tags` and `u4s::t` (the tags; `$str::is` as
 * for any text), `idt::o` (the organization), and the real API's system fields `c` (when the
 * person was created) and `l` (last seen).
 */
export type PersonPredicate = (person: Person) => boolean;

/** The tags field (`u4s::t`), the older name `tags`, and the system fields. */
export const TAGS_FIELD_ID = 'u4s::t';
export const CREATED_FIELD = 'c';
export const LAST_SEEN_FIELD = 'l';
const TAG_FIELDS = new Set(['tags', TAGS_FIELD_ID]);
const TIME_FIELDS = new Set([CREATED_FIELD, LAST_SEEN_FIELD]);

/** A value of the system and derived fields, as filters and listings read them. */
export function systemValue(person: Person, fieldId: string): FieldValue | undefined {
  if (TAG_FIELDS.has(fieldId)) return person.tags;
  if (fieldId === 'idt::o') return person.organization_id;
  if (fieldId === CREATED_FIELD) return person.created_at;
  if (fieldId === LAST_SEEN_FIELD) return person.fields['tme::last-seen'];
  return person.fields[fieldId];
}

export interface FilterContext {
  /** "Now", for relative times (`days_ago`). */
  now?: Date;
  /** The names of tags by ID (`$u4s::is` with a number), resolved before compiling. */
  tagNames?: ReadonlyMap<number, string>;
}

type Actual = FieldValue | undefined;
type Operator = (actual: Actual, expected: unknown) => boolean;

const text = (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : undefined);
const asStrings = (actual: Actual): string[] =>
  Array.isArray(actual)
    ? actual
    : typeof actual === 'string'
      ? [actual]
      : actual !== undefined && isGeoValue(actual)
        ? [actual.name]
        : [];
const timeOf = (actual: Actual) => (typeof actual === 'string' ? Date.parse(actual) : Number.NaN);

type ValueKind = 'string' | 'number' | 'boolean' | 'time' | 'days' | 'tag' | 'none';

const OPERATORS: Record<string, { needsValue: ValueKind; test: Operator }> = {
  $has_any_value: {
    needsValue: 'none',
    test: (actual) => actual !== undefined && !(Array.isArray(actual) && actual.length === 0),
  },
  $has_no_value: {
    needsValue: 'none',
    test: (actual) => actual === undefined || (Array.isArray(actual) && actual.length === 0),
  },
  '$str::is': {
    needsValue: 'string',
    test: (actual, value) => asStrings(actual).some((s) => s.toLowerCase() === text(value)),
  },
  '$str::is_not': {
    needsValue: 'string',
    test: (actual, value) => !asStrings(actual).some((s) => s.toLowerCase() === text(value)),
  },
  '$str::contains': {
    needsValue: 'string',
    test: (actual, value) =>
      asStrings(actual).some((s) => s.toLowerCase().includes(text(value) ?? '')),
  },
  '$str::starts_with': {
    needsValue: 'string',
    test: (actual, value) =>
      asStrings(actual).some((s) => s.toLowerCase().startsWith(text(value) ?? '')),
  },
  '$int::is': { needsValue: 'number', test: (actual, value) => actual === value },
  '$int::greater_than': {
    needsValue: 'number',
    test: (actual, value) => typeof actual === 'number' && actual > (value as number),
  },
  '$int::less_than': {
    needsValue: 'number',
    test: (actual, value) => typeof actual === 'number' && actual < (value as number),
  },
  '$bol::is': { needsValue: 'boolean', test: (actual, value) => actual === value },
  '$tme::absolute_after': {
    needsValue: 'time',
    test: (actual, value) => timeOf(actual) > (value as number),
  },
  '$tme::absolute_before': {
    needsValue: 'time',
    test: (actual, value) => timeOf(actual) < (value as number),
  },
  // `value` is the moment `days_ago` days before now (resolved when compiled).
  '$tme::relative_more_than': {
    needsValue: 'days',
    test: (actual, value) => timeOf(actual) < (value as number),
  },
  '$tme::relative_less_than': {
    needsValue: 'days',
    test: (actual, value) => timeOf(actual) >= (value as number),
  },
  // `value` is the tag's name (an ID resolved when compiled); tag names are exact.
  '$u4s::is': {
    needsValue: 'tag',
    test: (actual, value) => Array.isArray(actual) && actual.includes(value as string),
  },
  '$u4s::is_not': {
    needsValue: 'tag',
    test: (actual, value) => !(Array.isArray(actual) && actual.includes(value as string)),
  },
};

function fail(path: string, problem: string): never {
  throw new ValidationError(`${path}: ${problem}`, [{ field: path, error: problem }]);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const DAY_MS = 86_400_000;
/** What an unknown tag ID resolves to: equal to no tag name. */
const NO_SUCH_TAG = Symbol('no such tag');

/** The tag IDs a filter names (`$u4s::is` with a number), to resolve before compiling it. */
export function tagIdsOf(filter: unknown): number[] {
  if (!isObject(filter)) return [];
  const ids: number[] = [];
  for (const [operator, argument] of Object.entries(filter)) {
    if ((operator === '$and' || operator === '$or') && Array.isArray(argument)) {
      for (const part of argument) ids.push(...tagIdsOf(part));
    } else if (operator.startsWith('$u4s::') && isObject(argument)) {
      if (typeof argument.value === 'number') ids.push(argument.value);
    }
  }
  return ids;
}

/** The value a condition compares with, checked and resolved (`path` names it in errors). */
function operand(
  kind: ValueKind,
  argument: Record<string, unknown>,
  path: string,
  context: FilterContext,
): unknown {
  const value = argument.value;
  switch (kind) {
    case 'none':
      return undefined;
    case 'time': {
      const at = typeof value === 'string' ? Date.parse(value) : Number.NaN;
      if (Number.isNaN(at)) fail(`${path}.value`, 'expected an ISO 8601 time');
      return at;
    }
    case 'days': {
      const days = argument.days_ago ?? value;
      if (typeof days !== 'number' || !Number.isFinite(days) || days < 0) {
        fail(`${path}.days_ago`, 'expected a number of days (0 or more)');
      }
      return (context.now ?? new Date()).getTime() - days * DAY_MS;
    }
    case 'tag': {
      if (typeof value === 'string' && value !== '') return value;
      if (typeof value === 'number' && Number.isInteger(value)) {
        // A tag ID nobody holds matches nobody (as a name nobody holds does).
        return context.tagNames?.get(value) ?? NO_SUCH_TAG;
      }
      return fail(`${path}.value`, 'expected a tag: its ID (a number) or its name');
    }
    default:
      if (typeof value !== kind) fail(`${path}.value`, `expected a ${kind}`);
      return value;
  }
}

/** Checks a filter and turns it into a predicate; a bad filter is a 400 naming where. */
export function compileFilter(
  filter: unknown,
  fields: FieldCatalog,
  context: FilterContext = {},
  path = 'filter',
): PersonPredicate {
  if (!isObject(filter)) fail(path, 'expected an object such as {"$and": [...]}');
  const entries = Object.entries(filter);
  if (entries.length !== 1) fail(path, 'expected exactly one operator');
  const [[operator, argument]] = entries as [[string, unknown]];
  if (operator === '$and' || operator === '$or') {
    if (!Array.isArray(argument) || argument.length === 0)
      fail(`${path}.${operator}`, 'expected a non-empty array');
    const parts = argument.map((part, i) =>
      compileFilter(part, fields, context, `${path}.${operator}[${i}]`),
    );
    return operator === '$and'
      ? (p) => parts.every((test) => test(p))
      : (p) => parts.some((test) => test(p));
  }
  const definition = OPERATORS[operator];
  if (!definition)
    fail(
      path,
      `unknown operator "${operator}" (use $and, $or, ${Object.keys(OPERATORS).join(', ')})`,
    );
  if (!isObject(argument) || typeof argument.field_id !== 'string') {
    fail(`${path}.${operator}`, 'expected {"field_id": "...", "value": ...}');
  }
  const fieldId = argument.field_id;
  const where = `${path}.${operator}`;
  if (!TAG_FIELDS.has(fieldId) && !TIME_FIELDS.has(fieldId) && !fields.get(fieldId)?.stored) {
    fail(`${where}.field_id`, `"${fieldId}" is not a person field that can be filtered on`);
  }
  if (definition.needsValue === 'tag' && !TAG_FIELDS.has(fieldId)) {
    fail(`${where}.field_id`, `${operator} applies to the tags field (u4s::t), not "${fieldId}"`);
  }
  const timed = TIME_FIELDS.has(fieldId) || fields.get(fieldId)?.type === 'tme';
  if ((definition.needsValue === 'time' || definition.needsValue === 'days') && !timed) {
    fail(`${where}.field_id`, `${operator} applies to time fields (tme, c, l), not "${fieldId}"`);
  }
  const value = operand(definition.needsValue, argument, where, context);
  return (person) => definition.test(systemValue(person, fieldId), value);
}
