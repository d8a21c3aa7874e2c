import { ValidationError } from '../errors.js';
import type { FieldCatalog } from '../fields/field-catalog.js';
import type { FieldType } from '../fields/field-id.js';
import type { Person } from '../people/person.js';

/**
 * The one filter language of the API: `person/get`'s `filter` and audiences' entry and exit
 * filters (`docs/api.md`, Filters). A filter is one object whose single key is an operator:
 * `$and` / `$or` (also `$andgroup` / `$orgroup`) over a non-empty array of filters, or a
 * condition `{"$<operator>": {"field_id": "…", "value"?: …, …}}`. Members a condition does
 * not use (`label`, `timezone`, `not_existing_as_zero` where it means nothing, UI state) are
 * carried, not refused. Operator names are the real API's, exactly: an unknown one, a field
 * of a type the operator cannot read, or a malformed tree is a 400 naming its path.
 *
 * A compiled filter tells whether a person matches **now**, and when that answer could next
 * change by the passing of time alone (relative time conditions): audiences re-evaluate a
 * person then (the daily job), and never otherwise for time's sake.
 */

/** What a filter reads of a person besides its stored fields. */
export interface FilterSubject {
  person: Person;
  /** The IDs of the person's tags (the `u4s::t` field), where the instance numbers its tags. */
  tagIds?: readonly number[];
}

export interface Evaluation {
  matches: boolean;
  /** When (epoch ms) the answer could change with time alone; absent: only a change can. */
  changesAt?: number;
}

export type CompiledFilter = (subject: FilterSubject, now: number) => Evaluation;

/** What the compiler needs of the instance: its fields, and its tags by ID. */
export interface FilterContext {
  fields: FieldCatalog;
  /** A tag's name from its ID or name (`u4s::t` values), or undefined if there is none. */
  tagName?: (idOrName: number | string) => string | undefined;
}

/** The largest filter accepted: the real API's 50 conditions, and a bounded depth. */
export const MAX_CONDITIONS = 50;
export const MAX_DEPTH = 10;

const DAY_MS = 86_400_000;

function fail(path: string, problem: string): never {
  throw new ValidationError(`${path}: ${problem}`, [{ field: path, error: problem }]);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The system fields of the real API that are not stored under their own ID. */
const CREATED = 'c';
const LAST_SEEN = 'l';
const TAGS = 'u4s::t';
/** The older name of the tags field, kept for filters written against this API before. */
const LEGACY_TAGS = 'tags';
const ORGANIZATION = 'idt::o';
/** The person's own ID (read, never stored as a field): a filter may name people by it. */
const PERSON_ID = 'str::person_id';

/** A field the filter can read, with the type its operators must fit. */
interface ReadableField {
  type: FieldType | 'u4s';
  read(subject: FilterSubject): unknown;
}

function readableField(fieldId: string, context: FilterContext): ReadableField | undefined {
  if (fieldId === CREATED) return { type: 'tme', read: ({ person }) => person.created_at };
  if (fieldId === LAST_SEEN) {
    return { type: 'tme', read: ({ person }) => person.fields['tme::last-seen'] };
  }
  if (fieldId === TAGS) {
    return {
      type: 'u4s',
      read: ({ person }) => (person.tags.length > 0 ? person.tags : undefined),
    };
  }
  if (fieldId === LEGACY_TAGS) {
    return {
      type: 'str',
      read: ({ person }) => (person.tags.length > 0 ? person.tags : undefined),
    };
  }
  if (fieldId === ORGANIZATION) {
    return { type: 'idt', read: ({ person }) => person.organization_id };
  }
  if (fieldId === PERSON_ID) return { type: 'str', read: ({ person }) => person.id };
  const field = context.fields.get(fieldId);
  if (!field?.stored) return undefined;
  return { type: field.type, read: ({ person }) => person.fields[fieldId] };
}

/** The texts a value offers to text comparisons (a geo value by its name). */
function textsOf(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value.flatMap(textsOf);
  if (typeof value === 'string') return [value];
  if (isObject(value) && typeof value.name === 'string') return [value.name];
  return [];
}

/** A phone value (or text) as its digits with the country code, `+` first. */
export function phoneOf(value: unknown): string | undefined {
  if (typeof value === 'string') return `+${value.replace(/\D/g, '')}`;
  if (isObject(value) && typeof value.n === 'string') {
    const country = typeof value.c === 'string' ? value.c : '';
    return `+${country}${value.n}`.replace(/[^\d+]/g, '');
  }
  return undefined;
}

/** A time value as epoch ms: ISO instants, and dates (`dtz`) at midnight in their zone's UTC day. */
export function timeOf(value: unknown): number | undefined {
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  if (
    isObject(value) &&
    typeof value.year === 'number' &&
    typeof value.month === 'number' &&
    typeof value.day === 'number'
  ) {
    return Date.UTC(value.year, value.month - 1, value.day);
  }
  return undefined;
}

/** The UTC day (epoch ms of its midnight) of an instant. */
const dayOf = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;

const hasValue = (value: unknown) =>
  value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0);

type Leaf = (value: unknown, now: number) => Evaluation;
type Families = FieldType | 'u4s';

interface OperatorSpec {
  /** Field types it reads. */
  types: readonly Families[];
  /** Builds the test from the condition's members (checked: a bad one is a 400). */
  build(condition: Record<string, unknown>, path: string, context: FilterContext): Leaf;
}

/** Texts, and the tags and organization read as texts (as person/get's filter always did). */
const TEXT: readonly Families[] = ['str', 'txt', 'geo', 'u4s', 'idt'];
const TIME: readonly Families[] = ['tme', 'dtz'];
const ANY: readonly Families[] = [
  'str',
  'txt',
  'int',
  'bol',
  'tme',
  'dtz',
  'geo',
  'phn',
  'idt',
  'u4s',
];

function stringMember(condition: Record<string, unknown>, path: string): string {
  const { value } = condition;
  if (typeof value !== 'string') fail(`${path}.value`, 'expected a string');
  return value;
}

function numberMember(condition: Record<string, unknown>, path: string): number {
  const { value } = condition;
  if (typeof value !== 'number' || !Number.isFinite(value))
    fail(`${path}.value`, 'expected a number');
  return value;
}

function rangeMember(condition: Record<string, unknown>, path: string): [number, number] {
  const { value } = condition;
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    !value.every((bound) => typeof bound === 'number' && Number.isFinite(bound))
  ) {
    fail(`${path}.value`, 'expected [low, high], two numbers');
  }
  const [low, high] = value as [number, number];
  return low <= high ? [low, high] : [high, low];
}

function daysMember(condition: Record<string, unknown>, path: string): number {
  const days = condition.days_ago ?? condition.value;
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 0 || days > 36_500) {
    fail(`${path}.days_ago`, 'expected a whole number of days from 0 to 36500');
  }
  return days;
}

function instantMember(value: unknown, path: string): number {
  const ms = timeOf(value);
  if (ms === undefined) fail(path, 'expected a date or time (ISO 8601, e.g. "2025-01-31")');
  return ms;
}

const constant = (matches: boolean): Evaluation => ({ matches });

/** Text comparisons ignore case; any of the value's texts may match (a list, a geo name). */
function textOperator(test: (actual: string, expected: string) => boolean, negate = false) {
  return {
    types: TEXT,
    build: (condition: Record<string, unknown>, path: string) => {
      const expected = stringMember(condition, path).toLowerCase();
      return (value: unknown) => {
        const any = textsOf(value).some((text) => test(text.toLowerCase(), expected));
        return constant(negate ? !any : any);
      };
    },
  } satisfies OperatorSpec;
}

function numberOf(value: unknown, condition: Record<string, unknown>): number | undefined {
  if (typeof value === 'number') return value;
  return condition.not_existing_as_zero === true && !hasValue(value) ? 0 : undefined;
}

function intOperator(test: (actual: number, expected: number) => boolean): OperatorSpec {
  return {
    types: ['int'],
    build: (condition, path) => {
      const expected = numberMember(condition, path);
      return (value) => {
        const actual = numberOf(value, condition);
        return constant(actual !== undefined && test(actual, expected));
      };
    },
  };
}

function intRange(inside: boolean): OperatorSpec {
  return {
    types: ['int'],
    build: (condition, path) => {
      const [low, high] = rangeMember(condition, path);
      return (value) => {
        const actual = numberOf(value, condition);
        if (actual === undefined) return constant(false);
        return constant((actual >= low && actual <= high) === inside);
      };
    },
  };
}

/**
 * `relative_more_than`: the time is more than N days before now (so it starts to match N days
 * after it); `relative_less_than`: within the last N days (it stops matching N days after it);
 * `relative_exactly`: on the UTC day N days before today.
 */
function relative(kind: 'more' | 'less' | 'exactly'): OperatorSpec {
  return {
    types: TIME,
    build: (condition, path) => {
      const days = daysMember(condition, path);
      return (value, now) => {
        const at = timeOf(value);
        if (at === undefined) return constant(false);
        const threshold = at + days * DAY_MS;
        if (kind === 'more') {
          return now > threshold ? constant(true) : { matches: false, changesAt: threshold + 1 };
        }
        if (kind === 'less') {
          return now > threshold ? constant(false) : { matches: true, changesAt: threshold + 1 };
        }
        const start = dayOf(at) + days * DAY_MS;
        const end = start + DAY_MS;
        if (now < start) return { matches: false, changesAt: start };
        return now < end ? { matches: true, changesAt: end } : constant(false);
      };
    },
  };
}

function absolute(test: (at: number, bound: number) => boolean): OperatorSpec {
  return {
    types: TIME,
    build: (condition, path) => {
      const bound = instantMember(condition.value, `${path}.value`);
      return (value) => {
        const at = timeOf(value);
        return constant(at !== undefined && test(at, bound));
      };
    },
  };
}

const ABSOLUTE_BETWEEN: OperatorSpec = {
  types: TIME,
  build: (condition, path) => {
    const { value } = condition;
    if (!Array.isArray(value) || value.length !== 2) fail(`${path}.value`, 'expected [from, to]');
    const from = instantMember(value[0], `${path}.value[0]`);
    const to = instantMember(value[1], `${path}.value[1]`);
    return (actual) => {
      const at = timeOf(actual);
      return constant(at !== undefined && at >= Math.min(from, to) && at <= Math.max(from, to));
    };
  },
};

function tagOperator(negate: boolean): OperatorSpec {
  return {
    types: ['u4s'],
    build: (condition, path, context) => {
      const { value } = condition;
      if (typeof value !== 'number' && typeof value !== 'string') {
        fail(`${path}.value`, 'expected a tag ID (a number) or a tag name');
      }
      const name = context.tagName
        ? context.tagName(value)
        : typeof value === 'string'
          ? value
          : undefined;
      // An unknown tag is held by nobody: the filter is valid, it matches no one.
      const wanted = name?.toLowerCase();
      return (actual) => {
        const held =
          wanted !== undefined && textsOf(actual).some((tag) => tag.toLowerCase() === wanted);
        return constant(negate ? !held : held);
      };
    },
  };
}

function phoneOperator(
  test: (actual: string, expected: string) => boolean,
  negate = false,
): OperatorSpec {
  return {
    types: ['phn'],
    build: (condition, path) => {
      const expected = phoneOf(stringMember(condition, path)) ?? '';
      return (value) => {
        const actual = phoneOf(value);
        const matches = actual !== undefined && test(actual, expected);
        return constant(negate ? !matches : matches);
      };
    },
  };
}

function idOperator(negate: boolean): OperatorSpec {
  return {
    types: ['idt'],
    build: (condition, path) => {
      const expected = stringMember(condition, path);
      return (value) => constant((value === expected) !== negate);
    },
  };
}

/** Every operator, by its exact name. */
const OPERATORS: Readonly<Record<string, OperatorSpec>> = {
  $has_any_value: { types: ANY, build: () => (value) => constant(hasValue(value)) },
  $has_no_value: { types: ANY, build: () => (value) => constant(!hasValue(value)) },
  '$bol::is': {
    types: ['bol'],
    build: (condition, path) => {
      const { value } = condition;
      if (typeof value !== 'boolean') fail(`${path}.value`, 'expected true or false');
      return (actual) => constant(actual === value);
    },
  },
  '$str::is': textOperator((actual, expected) => actual === expected),
  '$str::is_not': textOperator((actual, expected) => actual === expected, true),
  '$str::contains': textOperator((actual, expected) => actual.includes(expected)),
  '$str::does_not_contains': textOperator((actual, expected) => actual.includes(expected), true),
  '$str::starts': textOperator((actual, expected) => actual.startsWith(expected)),
  '$str::ends': textOperator((actual, expected) => actual.endsWith(expected)),
  // This API's earlier name for `$str::starts`, kept for the filters written with it.
  '$str::starts_with': textOperator((actual, expected) => actual.startsWith(expected)),
  '$int::is': intOperator((actual, expected) => actual === expected),
  '$int::is_not': intOperator((actual, expected) => actual !== expected),
  '$int::greater_than': intOperator((actual, expected) => actual > expected),
  '$int::less_than': intOperator((actual, expected) => actual < expected),
  '$int::between': intRange(true),
  '$int::not_between': intRange(false),
  '$tme::relative_more_than': relative('more'),
  '$tme::relative_less_than': relative('less'),
  '$tme::relative_exactly': relative('exactly'),
  '$tme::absolute_after': absolute((at, bound) => at > bound),
  '$tme::absolute_before': absolute((at, bound) => at < bound),
  '$tme::absolute_on': absolute((at, bound) => dayOf(at) === dayOf(bound)),
  '$tme::absolute_between': ABSOLUTE_BETWEEN,
  '$dtz::absolute_after': absolute((at, bound) => at > bound),
  '$dtz::absolute_before': absolute((at, bound) => at < bound),
  '$dtz::absolute_on': absolute((at, bound) => dayOf(at) === dayOf(bound)),
  '$dtz::absolute_between': ABSOLUTE_BETWEEN,
  '$geo::is': { ...textOperator((actual, expected) => actual === expected), types: ['geo'] },
  '$geo::is_not': {
    ...textOperator((actual, expected) => actual === expected, true),
    types: ['geo'],
  },
  '$phn::iis': phoneOperator((actual, expected) => actual === expected),
  '$phn::iis_not': phoneOperator((actual, expected) => actual === expected, true),
  '$phn::starts': phoneOperator((actual, expected) => actual.startsWith(expected)),
  '$u4s::is': tagOperator(false),
  '$u4s::is_not': tagOperator(true),
  $id_is: idOperator(false),
  $id_is_not: idOperator(true),
};

/** The family of values an operator reads: a field type, or the tags (`u4s`). */
export type FilterFieldType = Families;

/** The condition operators that can read a field of this type (the console's filter builder). */
export function operatorsFor(type: FilterFieldType): string[] {
  return Object.entries(OPERATORS)
    .filter(([, spec]) => spec.types.includes(type))
    .map(([operator]) => operator);
}

/**
 * The fields a filter of the instance can name, with the type its operators must fit: the
 * system fields (created, last seen, tags, organization, the person's ID) and every stored
 * person field. What `compileFilter` reads, listed (the legacy `tags` name aside).
 */
export function filterableFields(
  fields: FieldCatalog,
): { id: string; label: string; type: FilterFieldType }[] {
  const system = [
    { id: CREATED, label: 'Created' },
    { id: LAST_SEEN, label: 'Last seen' },
    { id: TAGS, label: 'Tags' },
    { id: ORGANIZATION, label: 'Organization ID' },
    { id: PERSON_ID, label: 'Person ID' },
  ];
  const named = new Set(system.map((field) => field.id));
  const stored = [...fields.fields]
    .filter((field) => field.stored && !named.has(field.id))
    .map((field) => ({ id: field.id, label: field.label }));
  return [...system, ...stored].flatMap(({ id, label }) => {
    const field = readableField(id, { fields });
    return field ? [{ id, label, type: field.type }] : [];
  });
}

/** The operators of the language, for messages and the documentation. */
export const FILTER_OPERATORS = ['$and', '$or', '$andgroup', '$orgroup', ...Object.keys(OPERATORS)];

const LOGICAL: Readonly<Record<string, 'and' | 'or'>> = {
  $and: 'and',
  $andgroup: 'and',
  $or: 'or',
  $orgroup: 'or',
};

/** Combines children: the earliest time any of them could change is when the whole could. */
function combine(kind: 'and' | 'or', results: Evaluation[]): Evaluation {
  const matches =
    kind === 'and' ? results.every((result) => result.matches) : results.some((r) => r.matches);
  const times = results.flatMap((result) =>
    result.changesAt === undefined ? [] : [result.changesAt],
  );
  return times.length > 0 ? { matches, changesAt: Math.min(...times) } : { matches };
}

/** Checks a filter and compiles it; a bad filter is a 400 naming where (`path` first). */
export function compileFilter(
  filter: unknown,
  context: FilterContext,
  path = 'filter',
): CompiledFilter {
  let conditions = 0;
  const compile = (node: unknown, at: string, depth: number): CompiledFilter => {
    if (depth > MAX_DEPTH) fail(at, `nested deeper than ${MAX_DEPTH} levels`);
    if (!isObject(node)) fail(at, 'expected an object such as {"$and": [...]}');
    const entries = Object.entries(node);
    if (entries.length !== 1) fail(at, 'expected exactly one operator');
    const [[operator, argument]] = entries as [[string, unknown]];
    const logical = LOGICAL[operator];
    if (logical) {
      if (!Array.isArray(argument) || argument.length === 0) {
        fail(`${at}.${operator}`, 'expected a non-empty array of filters');
      }
      const parts = argument.map((part, index) =>
        compile(part, `${at}.${operator}[${index}]`, depth + 1),
      );
      return (subject, now) =>
        combine(
          logical,
          parts.map((part) => part(subject, now)),
        );
    }
    const spec = OPERATORS[operator];
    if (!spec) {
      fail(at, `unknown operator "${operator}" (operators: ${FILTER_OPERATORS.join(', ')})`);
    }
    conditions += 1;
    if (conditions > MAX_CONDITIONS) fail(at, `more than ${MAX_CONDITIONS} conditions`);
    const condition = `${at}.${operator}`;
    if (!isObject(argument) || typeof argument.field_id !== 'string') {
      fail(condition, 'expected {"field_id": "...", ...}');
    }
    const fieldId = argument.field_id;
    const field = readableField(fieldId, context);
    if (!field)
      fail(`${condition}.field_id`, `"${fieldId}" is not a person field that can be filtered on`);
    if (!spec.types.includes(field.type)) {
      fail(
        `${condition}.field_id`,
        `${operator} cannot read "${fieldId}", a ${field.type} field (it reads ${spec.types.join(', ')} fields)`,
      );
    }
    const test = spec.build(argument, condition, context);
    return (subject, now) => test(field.read(subject), now);
  };
  return compile(filter, path, 0);
}

/** A condition of a filter: its operator and its members (`field_id`, `value`, …). */
export interface Condition {
  operator: string;
  members: Record<string, unknown>;
}

/**
 * The conditions a person must meet for a (compiled, so well-formed) filter to match: the
 * filter itself if it is one condition, or the conditions of its `$and` (nested `$and`s
 * included). An `$or` among them is one condition whose `members.any` holds its filters.
 */
export function conjunctsOf(filter: unknown): Condition[] {
  if (!isObject(filter)) return [];
  const [entry] = Object.entries(filter);
  if (!entry) return [];
  const [operator, argument] = entry;
  if (LOGICAL[operator] === 'and') {
    return Array.isArray(argument) ? argument.flatMap(conjunctsOf) : [];
  }
  if (LOGICAL[operator] === 'or') {
    if (!Array.isArray(argument)) return [];
    // An `$or` of one member is that member; of more, one condition (`members.any`).
    return argument.length === 1
      ? conjunctsOf(argument[0])
      : [{ operator: '$or', members: { any: argument } }];
  }
  return isObject(argument) ? [{ operator, members: argument }] : [];
}

/** The tag IDs a filter names (`$u4s::…` with a number), to resolve to names before compiling. */
export function tagIdsOf(filter: unknown): number[] {
  if (Array.isArray(filter)) return filter.flatMap(tagIdsOf);
  if (!isObject(filter)) return [];
  return Object.entries(filter).flatMap(([operator, argument]) => {
    if (operator in LOGICAL) return tagIdsOf(argument);
    if (operator.startsWith('$u4s::') && isObject(argument) && typeof argument.value === 'number') {
      return [argument.value];
    }
    return [];
  });
}

/** Whether a filter's answer can change with time alone (it has a relative time condition). */
export function dependsOnTime(filter: unknown): boolean {
  if (Array.isArray(filter)) return filter.some(dependsOnTime);
  if (!isObject(filter)) return false;
  return Object.entries(filter).some(
    ([key, value]) =>
      /^\$(tme|dtz)::relative_/.test(key) || (key in LOGICAL && dependsOnTime(value)),
  );
}
