import { ID_PATTERN } from '../ids.js';
import { conjunctsOf, timeOf, phoneOf, type Condition } from '../filters/filter.js';
import {
  indexedFieldOf,
  indexedNumber,
  indexedText,
  numberRange,
  prefixRange,
  valueRange,
  wholeField,
  type EntryRange,
} from './field-index.js';
import { EMAIL } from './person.js';
import type { SearchIndex } from './person-index.js';
import { LAST_SEEN_FIELD, TAGS_FIELD_ID } from './system-fields.js';

/**
 * How a listing with a filter or a sort that the listing indexes do not answer finds its
 * people (docs/api.md, Listing): from one source of candidates, in the listing's order, each
 * candidate read and checked against the whole filter. The source is the most selective
 * condition of the filter that an index answers (a key's claim, an equal value, a tag, an
 * organization), the audience, the `q` search, or else the listing index itself; a read
 * examines at most a budget of candidates, so its cost never depends on the instance's size.
 */
export type Source =
  /**
   * A few people named by the filter: by ID (`str::person_id`), and as the owners of key
   * claims (email addresses: strongly consistent, one read each), or nobody.
   */
  | { kind: 'people'; ids: string[]; claims: { field: string; value: string }[] }
  /** The listing index (`list`, creation order) or a sort index (email, names). */
  | { kind: 'index'; index: 'list' | SearchIndex }
  /** The `q` search indexes. */
  | { kind: 'search'; q: string }
  /** A range of the field index: one value (ID order) or values in order. */
  | { kind: 'field'; range: EntryRange }
  /** An audience's members index. */
  | { kind: 'audience'; audienceId: string };

export interface Phase {
  source: Source;
  /** A candidate must also hold no value of this field (people without one, sorted last). */
  lacking?: string;
}

export interface ListingPlan {
  phases: Phase[];
  /** What the plan reads, for a cursor to check it is continued by the same plan. */
  shape: string;
}

/** What planning needs of the instance and the moment. */
export interface PlanContext {
  /** The type of a person field (`str`, `int`, …), if it is a stored field. */
  fieldType(fieldId: string): string | undefined;
  /** A tag's name from its ID or name, or undefined if the instance has no such tag. */
  tagName(idOrName: number | string): string | undefined;
  now: number;
}

/** A condition an index answers, and how selective it is likely to be (lower is better). */
interface Lookup {
  rank: number;
  source: Source;
  /** Its candidates come in ID order (one value), not value order. */
  idOrdered: boolean;
  /** The field its range is on, for a sort by that field. */
  field?: string;
}

const DAY_MS = 86_400_000;
const MAX_NUMBER = 2 ** 53;
const dayOf = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;

/** Ranks: a key names one person; an organization holds at most 3,000; a boolean half. */
const RANK = { one: 0, organization: 1, value: 2, tag: 3, audience: 4, boolean: 5 } as const;

const named = (ids: string[], claims: { field: string; value: string }[] = []): Lookup => ({
  rank: RANK.one,
  source: { kind: 'people', ids, claims },
  idOrdered: true,
});
const nobody = named([]);

function exact(field: string, value: string, rank: number): Lookup {
  return {
    rank,
    source: { kind: 'field', range: valueRange(field, value) },
    idOrdered: true,
    field,
  };
}

function ranged(range: EntryRange): Lookup {
  return {
    rank: RANK.value,
    source: { kind: 'field', range },
    idOrdered: false,
    field: range.field,
  };
}

function numbers(field: string, low: number, high: number): Lookup | undefined {
  const from = Math.max(low, -MAX_NUMBER);
  const to = Math.min(high, MAX_NUMBER);
  return from > to ? nobody : ranged(numberRange(field, from, to));
}

const numberMember = (members: Record<string, unknown>) =>
  typeof members.value === 'number' ? members.value : undefined;

/** Whether a number condition also matches people without a value (as zero). */
const zeroForMissing = (members: Record<string, unknown>, low: number, high: number) =>
  members.not_existing_as_zero === true && low <= 0 && high >= 0;

function textLookup(field: string, type: string | undefined, value: unknown): Lookup | undefined {
  if (typeof value !== 'string') return undefined;
  if (field === 'str::person_id') {
    const id = value.toLowerCase();
    return ID_PATTERN.test(id) ? named([id]) : nobody;
  }
  if (field === EMAIL) return named([], [{ field: EMAIL, value: value.trim().toLowerCase() }]);
  if (field === TAGS_FIELD_ID) return exact(field, indexedText(value), RANK.tag);
  if (field === 'idt::o') return exact(field, indexedText(value), RANK.organization);
  return type === undefined ? undefined : exact(field, indexedText(value), RANK.value);
}

function timeLookup(
  field: string,
  operator: string,
  members: Record<string, unknown>,
  now: number,
): Lookup | undefined {
  const kind = operator.slice(6);
  const days = typeof members.days_ago === 'number' ? members.days_ago : numberMember(members);
  switch (kind) {
    case 'relative_more_than':
      return days === undefined ? undefined : numbers(field, -MAX_NUMBER, now - days * DAY_MS - 1);
    case 'relative_less_than':
      return days === undefined ? undefined : numbers(field, now - days * DAY_MS, MAX_NUMBER);
    case 'relative_exactly': {
      if (days === undefined) return undefined;
      const day = dayOf(now) - days * DAY_MS;
      return numbers(field, day, day + DAY_MS - 1);
    }
    case 'absolute_after':
    case 'absolute_before':
    case 'absolute_on': {
      const bound = timeOf(members.value);
      if (bound === undefined) return undefined;
      if (kind === 'absolute_after') return numbers(field, bound + 1, MAX_NUMBER);
      if (kind === 'absolute_before') return numbers(field, -MAX_NUMBER, bound - 1);
      return numbers(field, dayOf(bound), dayOf(bound) + DAY_MS - 1);
    }
    case 'absolute_between': {
      const [from, to] = Array.isArray(members.value)
        ? members.value.map((bound) => timeOf(bound))
        : [];
      if (from === undefined || to === undefined) return undefined;
      return numbers(field, Math.min(from, to), Math.max(from, to));
    }
    default:
      return undefined;
  }
}

function intLookup(
  field: string,
  operator: string,
  members: Record<string, unknown>,
): Lookup | undefined {
  const within = (low: number, high: number) =>
    zeroForMissing(members, low, high) ? undefined : numbers(field, low, high);
  const value = numberMember(members);
  switch (operator) {
    case '$int::is':
      if (value === undefined) return undefined;
      if (!Number.isInteger(value)) return nobody;
      return zeroForMissing(members, value, value)
        ? undefined
        : exact(field, indexedNumber(value), RANK.value);
    case '$int::greater_than':
      return value === undefined ? undefined : within(Math.floor(value) + 1, MAX_NUMBER);
    case '$int::less_than':
      return value === undefined ? undefined : within(-MAX_NUMBER, Math.ceil(value) - 1);
    case '$int::between': {
      const bounds = Array.isArray(members.value) ? members.value : [];
      const [a, b] = bounds.filter((bound): bound is number => typeof bound === 'number');
      if (a === undefined || b === undefined) return undefined;
      return within(Math.ceil(Math.min(a, b)), Math.floor(Math.max(a, b)));
    }
    default:
      return undefined;
  }
}

/** An `$or` whose every member names a few people (emails, IDs): all of those people. */
function eitherLookup(members: unknown[], context: PlanContext): Lookup | undefined {
  const ids: string[] = [];
  const claims: { field: string; value: string }[] = [];
  for (const member of members) {
    const lookup = best(lookupsOf(member, context));
    if (lookup?.source.kind !== 'people') return undefined;
    ids.push(...lookup.source.ids);
    claims.push(...lookup.source.claims);
  }
  return named(ids, claims);
}

/** The index lookups that answer conditions of a filter. */
function lookupsOf(filter: unknown, context: PlanContext): Lookup[] {
  return conjunctsOf(filter).flatMap((condition) => {
    const lookup = lookupOf(condition, context);
    return lookup ? [lookup] : [];
  });
}

/** The index lookup that answers a condition, where one does. */
function lookupOf(condition: Condition, context: PlanContext): Lookup | undefined {
  const { operator, members } = condition;
  if (operator === '$or') {
    return Array.isArray(members.any) ? eitherLookup(members.any, context) : undefined;
  }
  if (typeof members.field_id !== 'string') return undefined;
  const named = members.field_id === LAST_SEEN_FIELD ? 'tme::last-seen' : members.field_id;
  const field = indexedFieldOf(named);
  const type = context.fieldType(field);
  switch (operator) {
    case '$str::is':
    case '$geo::is':
      return textLookup(field, type, members.value);
    case '$str::starts':
    case '$str::starts_with':
      // A person holds several tags: a range of them would list a person more than once.
      if (typeof members.value !== 'string' || field === TAGS_FIELD_ID) return undefined;
      if (type === undefined && field !== 'idt::o') return undefined;
      return ranged(prefixRange(field, indexedText(members.value)));
    case '$bol::is':
      return typeof members.value === 'boolean'
        ? exact(field, members.value ? '1' : '0', RANK.boolean)
        : undefined;
    case '$phn::iis': {
      const phone = typeof members.value === 'string' ? phoneOf(members.value) : undefined;
      return phone === undefined ? undefined : exact(field, phone, RANK.value);
    }
    case '$phn::starts': {
      const phone = typeof members.value === 'string' ? phoneOf(members.value) : undefined;
      return phone === undefined ? undefined : ranged(prefixRange(field, phone));
    }
    case '$u4s::is': {
      const value = members.value;
      const name =
        typeof value === 'number' || typeof value === 'string' ? context.tagName(value) : undefined;
      return name === undefined ? nobody : exact(TAGS_FIELD_ID, indexedText(name), RANK.tag);
    }
    case '$id_is':
      return typeof members.value === 'string'
        ? exact(field, indexedText(members.value), RANK.organization)
        : undefined;
    case '$has_any_value':
      return field === TAGS_FIELD_ID || type === undefined ? undefined : ranged(wholeField(field));
    default:
      if (type === undefined) return undefined;
      if (operator.startsWith('$int::')) return intLookup(field, operator, members);
      if (operator.startsWith('$tme::') || operator.startsWith('$dtz::')) {
        return timeLookup(field, operator, members, context.now);
      }
      return undefined;
  }
}

export interface PlanRequest {
  filter?: unknown;
  q?: string | undefined;
  /**
   * The sort: undefined for creation order, a sort index (email, names), or a field sorted
   * from the field index (`l` is `tme::last-seen`).
   */
  sort?: { index: SearchIndex } | { field: string } | undefined;
  audienceId?: string | undefined;
}

function best(lookups: Lookup[]): Lookup | undefined {
  return lookups.reduce<Lookup | undefined>(
    (chosen, lookup) => (chosen === undefined || lookup.rank < chosen.rank ? lookup : chosen),
    undefined,
  );
}

function shapeOf(phases: Phase[]): string {
  return phases
    .map(({ source, lacking }) => {
      const what =
        source.kind === 'field'
          ? `field:${source.range.field}`
          : source.kind === 'index'
            ? `index:${source.index}`
            : source.kind;
      return lacking ? `${what}-${lacking}` : what;
    })
    .join('+');
}

/** Plans a listing (the filter compiled already: it is well-formed). */
export function planListing(request: PlanRequest, context: PlanContext): ListingPlan {
  const lookups = lookupsOf(request.filter, context);
  const plan = (phases: Phase[]): ListingPlan => ({ phases, shape: shapeOf(phases) });
  // An audience's members are the candidates: only its index says who they are.
  if (request.audienceId !== undefined) {
    return plan([{ source: { kind: 'audience', audienceId: request.audienceId } }]);
  }
  const one = best(lookups.filter((lookup) => lookup.rank === RANK.one));
  if (one) return plan([{ source: one.source }]);
  const sort = request.sort;
  if (sort === undefined) {
    if (request.q !== undefined) return plan([{ source: { kind: 'search', q: request.q } }]);
    const chosen = best(lookups.filter((lookup) => lookup.idOrdered));
    return plan([{ source: chosen?.source ?? { kind: 'index', index: 'list' } }]);
  }
  if ('index' in sort) return plan([{ source: { kind: 'index', index: sort.index } }]);
  const field = indexedFieldOf(sort.field === LAST_SEEN_FIELD ? 'tme::last-seen' : sort.field);
  const onField = lookups.filter((lookup) => lookup.field === field);
  const narrowest = best(onField.filter((lookup) => lookup.idOrdered)) ?? onField[0];
  if (narrowest) return plan([{ source: narrowest.source }]);
  // Everyone with a value in the field's order, then (either way) everyone without one.
  return plan([
    { source: { kind: 'field', range: wholeField(field) } },
    { source: { kind: 'index', index: 'list' }, lacking: field },
  ]);
}
