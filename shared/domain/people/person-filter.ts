import { ValidationError } from '../errors.js';
import type { FieldCatalog } from '../fields/field-catalog.js';
import type { FieldValue } from '../fields/field-values.js';
import type { Person } from './person.js';

/**
 * Person filters (`filter` of person get): `$and` and `$or` of conditions, each condition
 * `{"$<operator>": {"field_id": "...", "value": ...}}`. Text comparisons ignore case.
 *
 * | operator | matches |
 * |---|---|
 * | `$has_any_value` | the field holds a value, including 0 and "" (not null, not absent) |
 * | `$has_no_value` | the field is null or absent |
 * | `$str::is`, `$str::is_not` | equal / not equal |
 * | `$str::contains`, `$str::starts_with` | substring / prefix |
 * | `$int::is`, `$int::greater_than`, `$int::less_than` | numeric comparisons |
 * | `$bol::is` | true or false |
 * `tags` can be used as `field_id` with `$str::is` (the person has that tag) and `$has_any_value`;
 * `idt::o` (the person's organization) with `$str::is` and `$has_any_value`.
 */
export type PersonPredicate = (person: Person) => boolean;

type Operator = (actual: FieldValue | string[] | undefined, expected: unknown) => boolean;

const text = (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : undefined);
const asStrings = (actual: FieldValue | string[] | undefined): string[] =>
  Array.isArray(actual)
    ? actual
    : typeof actual === 'string'
      ? [actual]
      : actual && typeof actual === 'object' && 'name' in actual
        ? [actual.name]
        : [];

const OPERATORS: Record<
  string,
  { needsValue: 'string' | 'number' | 'boolean' | 'none'; test: Operator }
> = {
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
};

function fail(path: string, problem: string): never {
  throw new ValidationError(`${path}: ${problem}`, [{ field: path, error: problem }]);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks a filter and turns it into a predicate; a bad filter is a 400 naming where. */
export function compileFilter(
  filter: unknown,
  fields: FieldCatalog,
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
      compileFilter(part, fields, `${path}.${operator}[${i}]`),
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
  if (fieldId !== 'tags' && !fields.get(fieldId)?.stored) {
    fail(
      `${path}.${operator}.field_id`,
      `"${fieldId}" is not a person field that can be filtered on`,
    );
  }
  const value = argument.value;
  if (definition.needsValue !== 'none' && typeof value !== definition.needsValue) {
    fail(`${path}.${operator}.value`, `expected a ${definition.needsValue}`);
  }
  const read = (person: Person) =>
    fieldId === 'tags'
      ? person.tags
      : fieldId === 'idt::o'
        ? person.organization_id
        : person.fields[fieldId];
  return (person) => definition.test(read(person), value);
}
