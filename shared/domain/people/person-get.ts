import { z } from 'zod';
import { checkOffset, type CursorCodec } from '../cursor.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { sortKeyOf, type FieldValue } from '../fields/field-values.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import { compileFilter, tagIdsOf } from '../filters/filter.js';
import { CREATED_FIELD, LAST_SEEN_FIELD, systemValue, TAGS_FIELD_ID } from './system-fields.js';
import {
  searchRange,
  searchTokens,
  SEARCH_INDEXES,
  SORT_INDEXES,
  type SearchIndex,
} from './person-index.js';
import type { Person } from './person.js';

/** Listings answer 1 to 500 records a page, as the real API documents (API.md says 100). */
export const MAX_PAGE = 500;

/** `POST /v1/person/get` (API.md). */
export const PersonGetRequest = z.object({
  limit: z.number().int().min(1).max(MAX_PAGE).default(50),
  offset: z.number().int().min(0).max(10_000_000).default(0),
  cursor_id: z.string().max(2000).optional(),
  sort_by_field_id: z.string().nullable().optional(),
  sort_order: z.enum(['asc', 'desc']).default('desc'),
  fields: z.array(z.string()).max(300).optional(),
  q: z.string().max(255).optional(),
  filter: z.unknown().optional(),
  /** The members of one audience (the real API's member; docs/audiences.md). */
  audience_id: z
    .string()
    .regex(ID_PATTERN, 'expected an audience ID (24 hexadecimal characters)')
    .optional(),
});
export type PersonGetRequest = z.infer<typeof PersonGetRequest>;

export const DEFAULT_PERSON_FIELDS = ['str::first', 'str::last', 'str::email'];
export const TAGS_FIELD = 'tags';
export const ORGANIZATION_FIELD = 'idt::o';

export type ListIndex = 'list' | SearchIndex;

export interface PersonListing {
  /**
   * The next `count` sort keys after `after` (exclusive) of an index, in order: `list` sorts
   * by creation (its keys are the IDs), the others by token (`<token>#<id>`).
   */
  indexPage(
    instanceId: string,
    index: ListIndex,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ): Promise<{ keys: string[]; hasMore: boolean }>;
  /** The next `count` search matches after `after`, in token order (see `searchPage`). */
  searchPage(
    instanceId: string,
    q: string,
    after: string | undefined,
    count: number,
  ): Promise<{ keys: string[]; hasMore: boolean }>;
  /** How many people match a search, counting at most `cap` (so the cost is bounded). */
  countSearch(instanceId: string, q: string, cap: number): Promise<number>;
  /** The names of tags by their IDs (IDs of no tag of the instance are left out). */
  tagNames(instanceId: string, ids: number[]): Promise<Map<number, string>>;
  /** Every person ID of the instance (for filters and sorts no index answers). */
  allIds(instanceId: string): Promise<string[]>;
  getPeople(instanceId: string, ids: string[]): Promise<Map<string, Person>>;
  counters(
    instanceId: string,
  ): Promise<{ contacts: number; subscribers: number; organizations: number }>;
}

/** An audience's members in person ID order (its members index). */
export interface AudienceMembers {
  /** The audience's member count, or undefined when the instance has no such audience. */
  size(instanceId: string, audienceId: string): Promise<number | undefined>;
  membersPage(
    instanceId: string,
    audienceId: string,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ): Promise<{ keys: string[]; hasMore: boolean }>;
}

/** Filters and sorts that no index answers read the whole instance: up to this many people. */
export const MAX_SCANNED_PEOPLE = 20_000;

/**
 * `total_matches` of a `q` search is counted on its first page, at most this far (beyond,
 * it reports this number), and carried in the cursor: a later page costs the same whatever
 * the number of people.
 */
export const MAX_COUNTED_MATCHES = 10_000;

const Cursor = z.discriminatedUnion('mode', [
  z.object({
    v: z.literal(3),
    mode: z.literal('index'),
    index: z.enum(['list', 'email', 'first', 'last']),
    order: z.enum(['asc', 'desc']),
    after: z.string().min(1),
  }),
  z.object({
    v: z.literal(3),
    mode: z.literal('search'),
    q: z.string(),
    after: z.string().min(1),
    matches: z.number().int().min(0),
  }),
  z.object({ v: z.literal(3), mode: z.literal('scan'), offset: z.number().int().min(0) }),
  z.object({
    v: z.literal(3),
    mode: z.literal('audience'),
    audience: z.string(),
    order: z.enum(['asc', 'desc']),
    after: z.string().min(1),
  }),
]);
type Cursor = z.infer<typeof Cursor>;

const idOf = (key: string) => key.slice(-24);

/** Fields a listing can select besides the person fields: the tags and the system fields. */
const DERIVED_FIELDS = new Set([TAGS_FIELD, TAGS_FIELD_ID, CREATED_FIELD, LAST_SEEN_FIELD]);

/**
 * Checks requested field IDs: built-in selectable fields (context messages included),
 * custom fields, the tags (`tags`, `u4s::t`), `idt::o`, and `c` and `l`.
 */
export function selectableFields(requested: string[] | undefined, tenant: Tenant): string[] {
  const fields = requested ?? DEFAULT_PERSON_FIELDS;
  fields.forEach((id, index) => {
    if (DERIVED_FIELDS.has(id)) return;
    const field = tenant.personFields.get(id);
    if (!field?.selectable) {
      const problem = field ? 'cannot be selected' : 'is not a person field of this instance';
      throw new ValidationError(`fields[${index}]: "${id}" ${problem}`, [
        { field: `fields[${index}]`, error: problem },
      ]);
    }
  });
  return fields;
}

/** The `fields` object of a person in a listing: requested values that are set, and `idt::o`. */
export function projectPerson(person: Person, fields: string[]) {
  const projected: Record<string, FieldValue> = {};
  for (const id of fields) {
    if (id === ORGANIZATION_FIELD) continue;
    const value = DERIVED_FIELDS.has(id) ? systemValue(person, id) : person.fields[id];
    if (value !== undefined) projected[id] = value;
  }
  if (person.organization_id) projected[ORGANIZATION_FIELD] = person.organization_id;
  return Object.keys(projected).length > 0
    ? { id: person.id, fields: projected }
    : { id: person.id };
}

function cursorFor(
  request: PersonGetRequest,
  expected: Cursor['mode'],
  cursors: CursorCodec,
): Cursor | undefined {
  if (request.cursor_id === undefined) return undefined;
  const cursor = cursors.decode(Cursor, request.cursor_id);
  if (cursor.mode !== expected) {
    throw new ValidationError(
      'cursor_id: it belongs to a listing with other q, filter or sort settings',
      [{ field: 'cursor_id', error: 'issued for another listing' }],
    );
  }
  return cursor;
}

type Found = { ids: string[]; hasMore: boolean; cursor: Cursor; matches?: number };

/**
 * Lists people. Creation order and sorting by email, first or last name are answered from
 * indexes, and so is `q` (a case-insensitive prefix of the email, "first last" or "last
 * first"): with `cursor_id` such a page costs the same whatever the instance's size. A
 * `filter`, or a sort by any other field, reads the whole instance (at most 20,000 people).
 * An `offset` without a cursor is walked from the start.
 */
export async function getPeople(
  request: PersonGetRequest,
  tenant: Tenant,
  listing: PersonListing,
  cursors: CursorCodec,
  audiences?: AudienceMembers,
) {
  checkOffset(request);
  const fields = selectableFields(request.fields, tenant);
  const instanceId = tenant.instance.id;
  const q = request.q?.trim() ? request.q : undefined;
  // `c` (created) is the order of the listing index itself.
  const sortField =
    request.sort_by_field_id === CREATED_FIELD
      ? undefined
      : (request.sort_by_field_id ?? undefined);
  if (
    sortField !== undefined &&
    sortField !== LAST_SEEN_FIELD &&
    !tenant.personFields.get(sortField)?.stored
  ) {
    throw new ValidationError(
      `sort_by_field_id: "${sortField}" is not a person field that can be sorted by`,
      [{ field: 'sort_by_field_id', error: 'not a sortable person field' }],
    );
  }
  const hasFilter = request.filter !== undefined && request.filter !== null;
  const tagIds = hasFilter ? tagIdsOf(request.filter) : [];
  const tagNames = tagIds.length > 0 ? await listing.tagNames(instanceId, tagIds) : undefined;
  const predicate: PersonPredicate | undefined = hasFilter
    ? personPredicate(request.filter, tenant, tagNames)
    : undefined;
  const sortIndex = sortField === undefined ? 'list' : SORT_INDEXES[sortField];
  const totals = listing.counters(instanceId);

  let found: Found;
  if (request.audience_id !== undefined) {
    found = await fromAudience(request, request.audience_id, audiences, instanceId, cursors, {
      q,
      predicate,
      sortField,
    });
  } else if (!predicate && !q && sortIndex) {
    found = await fromIndex(request, listing, instanceId, sortIndex, cursors);
  } else if (!predicate && q && !sortField) {
    found = await fromSearch(request, listing, instanceId, q, cursors);
  } else {
    found = await fromScan(request, listing, instanceId, (await totals).contacts, cursors, {
      q,
      predicate,
      sortField,
      tenant,
    });
  }
  const people = await listing.getPeople(instanceId, found.ids);
  const contacts = found.ids.flatMap((id) => {
    const person = people.get(id);
    // Indexes are eventually consistent: a person archived a moment ago may still be listed.
    return person && person.archived_at === undefined ? [projectPerson(person, fields)] : [];
  });
  const counts = await totals;
  return {
    contacts,
    meta: {
      total_contacts: counts.contacts,
      total_organizations: counts.organizations,
      total_matches: found.matches ?? counts.contacts,
      total_subscribers: counts.subscribers,
    },
    offset: request.offset,
    next_offset: request.offset + found.ids.length,
    cursor_id: cursors.encode(found.cursor),
    has_more: found.hasMore,
  };
}

type PersonPredicate = (person: Person) => boolean;

/** `filter` in the one filter language (audiences' too), read at the time of the request. */
function personPredicate(
  filter: unknown,
  tenant: Tenant,
  tagNames: ReadonlyMap<number, string> | undefined,
): PersonPredicate {
  const compiled = compileFilter(filter, {
    fields: tenant.personFields,
    tagName: (idOrName) => (typeof idOrName === 'number' ? tagNames?.get(idOrName) : idOrName),
  });
  const now = Date.now();
  return (person) => compiled({ person }, now).matches;
}

/** Past the end of a key-based listing, the cursor stays at the end. */
const END = { asc: '\u{10FFFF}', desc: '0' } as const;

/**
 * The members of an audience from its members index, newest person first by default: the
 * same 16 queries per page as the default listing, whatever the audience's size. Members
 * are selected by the audience's filter already, so `q`, `filter` and `sort_by_field_id`
 * (which would read every member) are refused with it.
 */
async function fromAudience(
  request: PersonGetRequest,
  audienceId: string,
  audiences: AudienceMembers | undefined,
  instanceId: string,
  cursors: CursorCodec,
  others: { q: string | undefined; predicate: unknown; sortField: string | undefined },
): Promise<Found> {
  const other = others.q !== undefined ? 'q' : others.predicate ? 'filter' : undefined;
  const refused = other ?? (others.sortField !== undefined ? 'sort_by_field_id' : undefined);
  if (refused) {
    throw new ValidationError(`${refused}: cannot be combined with audience_id`, [
      { field: refused, error: 'not with audience_id' },
    ]);
  }
  const size = await audiences?.size(instanceId, audienceId);
  if (size === undefined || !audiences) {
    throw new NotFoundError(`audience_id: no audience ${audienceId}`, [
      { field: 'audience_id', error: 'no such audience' },
    ]);
  }
  const order = request.sort_order;
  const cursor = cursorFor(request, 'audience', cursors);
  if (cursor?.mode === 'audience' && (cursor.audience !== audienceId || cursor.order !== order)) {
    throw new ValidationError('cursor_id: it was issued for another audience or sort', [
      { field: 'cursor_id', error: 'issued for another listing' },
    ]);
  }
  const after = cursor?.mode === 'audience' ? cursor.after : undefined;
  const skip = cursor ? 0 : request.offset;
  const page = await audiences.membersPage(
    instanceId,
    audienceId,
    order,
    after,
    skip + request.limit,
  );
  const keys = page.keys.slice(skip);
  return {
    ids: keys,
    hasMore: page.hasMore,
    matches: size,
    cursor: {
      v: 3,
      mode: 'audience',
      audience: audienceId,
      order,
      after: keys.at(-1) ?? after ?? END[order],
    },
  };
}

async function fromIndex(
  request: PersonGetRequest,
  listing: PersonListing,
  instanceId: string,
  index: ListIndex,
  cursors: CursorCodec,
): Promise<Found> {
  const order = request.sort_order;
  const cursor = cursorFor(request, 'index', cursors);
  if (cursor?.mode === 'index' && (cursor.index !== index || cursor.order !== order)) {
    throw new ValidationError('cursor_id: it was issued for another sort', [
      { field: 'cursor_id', error: 'issued for another sort' },
    ]);
  }
  const after = cursor?.mode === 'index' ? cursor.after : undefined;
  const skip = cursor ? 0 : request.offset;
  const page = await listing.indexPage(instanceId, index, order, after, skip + request.limit);
  const keys = page.keys.slice(skip);
  return {
    ids: keys.map(idOf),
    hasMore: page.hasMore,
    cursor: { v: 3, mode: 'index', index, order, after: keys.at(-1) ?? after ?? END[order] },
  };
}

async function fromSearch(
  request: PersonGetRequest,
  listing: PersonListing,
  instanceId: string,
  q: string,
  cursors: CursorCodec,
): Promise<Found> {
  const cursor = cursorFor(request, 'search', cursors);
  if (cursor?.mode === 'search' && cursor.q !== q) {
    throw new ValidationError('cursor_id: it was issued for another q', [
      { field: 'cursor_id', error: 'issued for another q' },
    ]);
  }
  const after = cursor?.mode === 'search' ? cursor.after : undefined;
  const skip = cursor ? 0 : request.offset;
  // Counted once, on the first page, and carried in the cursor.
  const [page, matches] = await Promise.all([
    listing.searchPage(instanceId, q, after, skip + request.limit),
    cursor?.mode === 'search'
      ? cursor.matches
      : listing.countSearch(instanceId, q, MAX_COUNTED_MATCHES),
  ]);
  const keys = page.keys.slice(skip);
  return {
    ids: keys.map(idOf),
    hasMore: page.hasMore,
    matches,
    cursor: { v: 3, mode: 'search', q, after: keys.at(-1) ?? after ?? END.asc, matches },
  };
}

interface ScanOptions {
  q: string | undefined;
  predicate: PersonPredicate | undefined;
  sortField: string | undefined;
  tenant: Tenant;
}

async function fromScan(
  request: PersonGetRequest,
  listing: PersonListing,
  instanceId: string,
  size: number,
  cursors: CursorCodec,
  options: ScanOptions,
): Promise<Found> {
  if (size > MAX_SCANNED_PEOPLE) {
    throw new ValidationError(
      `This instance has more than ${MAX_SCANNED_PEOPLE} people: filter and sort_by_field_id other than str::email, str::first or str::last are not available; use q or an index sort`,
      [
        {
          field: options.predicate ? 'filter' : 'sort_by_field_id',
          error: 'instance too large for a full read',
        },
      ],
    );
  }
  const cursor = cursorFor(request, 'scan', cursors);
  const offset = cursor?.mode === 'scan' ? cursor.offset : request.offset;
  const everyone = await listing.getPeople(instanceId, await listing.allIds(instanceId));
  const prefix = options.q ? searchRange(options.q).from : undefined;
  const matches = [...everyone.values()].filter((person) => {
    if (person.archived_at !== undefined) return false;
    if (options.predicate && !options.predicate(person)) return false;
    if (!prefix) return true;
    const tokens = searchTokens(person.fields);
    return SEARCH_INDEXES.some((index) => tokens[index].startsWith(prefix));
  });
  const direction = request.sort_order === 'asc' ? 1 : -1;
  const sortField = options.sortField;
  matches.sort((a, b) =>
    sortField === undefined
      ? direction * a.id.localeCompare(b.id)
      : compareValues(systemValue(a, sortField), systemValue(b, sortField), direction) ||
        a.id.localeCompare(b.id),
  );
  const ids = matches.slice(offset, offset + request.limit).map((person) => person.id);
  return {
    ids,
    hasMore: offset + ids.length < matches.length,
    matches: matches.length,
    cursor: { v: 3, mode: 'scan', offset: offset + ids.length },
  };
}

/** Orders field values of one type; people without a value come last either way. */
function compareValues(
  a: FieldValue | undefined,
  b: FieldValue | undefined,
  direction: number,
): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? 1 : -1;
  return direction * (sortable(a) < sortable(b) ? -1 : sortable(a) > sortable(b) ? 1 : 0);
}

const sortable = sortKeyOf;

/** `POST /v1/person/get-by-ids` (DESIGN: our addition). */
export const PersonGetByIdsRequest = z.object({
  contact_ids: z.array(z.string().regex(ID_PATTERN, 'expected a person ID')).min(1).max(100),
  fields: z.array(z.string()).max(300).optional(),
});
export type PersonGetByIdsRequest = z.infer<typeof PersonGetByIdsRequest>;

/** People by ID, keyed by ID; IDs that name nobody in this instance are left out. */
export async function getPeopleByIds(
  request: PersonGetByIdsRequest,
  tenant: Tenant,
  listing: Pick<PersonListing, 'getPeople'>,
) {
  const fields = selectableFields(request.fields, tenant);
  const people = await listing.getPeople(tenant.instance.id, [...new Set(request.contact_ids)]);
  const contacts: Record<string, ReturnType<typeof projectPerson>> = {};
  for (const id of request.contact_ids) {
    const person = people.get(id);
    if (person) contacts[id] = projectPerson(person, fields);
  }
  return { contacts };
}
