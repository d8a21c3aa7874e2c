import { createHash } from 'node:crypto';
import { z } from 'zod';
import { MAX_OFFSET, type CursorCodec } from '../cursor.js';
import { ValidationError } from '../errors.js';
import type { FieldValue } from '../fields/field-values.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import { compileFilter, tagIdsOf } from '../filters/filter.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { CREATED_FIELD, LAST_SEEN_FIELD, systemValue, TAGS_FIELD_ID } from './system-fields.js';
import type { EntryRange } from './field-index.js';
import { planListing } from './listing-plan.js';
import { fromPlan, idOf, MAX_CANDIDATES, noAudience, otherListing } from './planned-listing.js';
import { SORT_INDEXES, type SearchIndex } from './person-index.js';
import type { Person } from './person.js';

export { MAX_CANDIDATES };

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

export type Keys = { keys: string[]; hasMore: boolean };

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
  ): Promise<Keys>;
  /** The next `count` search matches after `after`, in token order (see `searchPage`). */
  searchPage(
    instanceId: string,
    q: string,
    after: string | undefined,
    count: number,
  ): Promise<Keys>;
  /** How many people match a search, counting at most `cap` (so the cost is bounded). */
  countSearch(instanceId: string, q: string, cap: number): Promise<number>;
  /** The names of tags by their IDs (IDs of no tag of the instance are left out). */
  tagNames(instanceId: string, ids: number[]): Promise<Map<number, string>>;
  /** The person holding a key value (its claim, read strongly consistent), if anyone does. */
  claimOwner(instanceId: string, field: string, value: string): Promise<string | undefined>;
  getPeople(instanceId: string, ids: string[]): Promise<Map<string, Person>>;
  counters(
    instanceId: string,
  ): Promise<{ contacts: number; subscribers: number; organizations: number }>;
}

/** The field index (field-index.ts): entries of one field, in key order. */
export interface FieldIndexReader {
  /** The next `count` entry sort keys of a range after `after` (exclusive), in order. */
  fieldPage(
    instanceId: string,
    range: EntryRange,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ): Promise<Keys>;
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
  ): Promise<Keys>;
}

/**
 * Where listings paged by `offset` alone got to: the cursor of the page that ended at an
 * offset, by listing (its settings' fingerprint), so that the next offset continues from
 * there instead of walking from the start.
 */
export interface OffsetCheckpoints {
  /** The saved position at or before `offset` nearest to it. */
  nearest(
    instanceId: string,
    listing: string,
    offset: number,
  ): Promise<{ offset: number; cursor: string } | undefined>;
  save(instanceId: string, listing: string, offset: number, cursor: string): Promise<void>;
}

/** What a listing reads. */
export interface ListingPorts {
  listing: PersonListing;
  fields: FieldIndexReader;
  audiences?: AudienceMembers;
  checkpoints?: OffsetCheckpoints;
}

/**
 * `total_matches` of a `q` search is counted on its first page, at most this far (beyond,
 * it reports this number), and carried in the cursor: a page costs about the same whatever
 * the number of people.
 */
export const MAX_COUNTED_MATCHES = 250;

const Order = z.enum(['asc', 'desc']);

const Cursor = z.discriminatedUnion('mode', [
  z.object({
    v: z.literal(3),
    mode: z.literal('index'),
    index: z.enum(['list', 'email', 'first', 'last']),
    order: Order,
    after: z.string().min(1),
  }),
  z.object({
    v: z.literal(3),
    mode: z.literal('search'),
    q: z.string(),
    after: z.string().min(1),
    matches: z.number().int().min(0),
  }),
  z.object({
    v: z.literal(3),
    mode: z.literal('audience'),
    audience: z.string(),
    order: Order,
    after: z.string().min(1),
  }),
  z.object({
    v: z.literal(3),
    mode: z.literal('plan'),
    /** The listing's fingerprint (its settings and plan). */
    listing: z.string(),
    phase: z.number().int().min(0),
    after: z.string().optional(),
    /** Matches found from the start of the listing through the page. */
    found: z.number().int().min(0),
  }),
]);
type Cursor = z.infer<typeof Cursor>;
/** A listing's position, as its `cursor_id` carries it (signed). */
export type ListingCursor = Cursor;

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

/** Where a page starts: after a cursor's position (if any), skipping `skip` entries. */
export interface Start {
  cursor?: Cursor;
  skip: number;
  /** The offset the position stands at (the cursor's, or 0 from the start). */
  at: number;
}

export type Found = {
  /**
   * The offset the cursor stands at, where it is not `offset` + the page (a planned listing
   * that ran out of its budget while skipping to the offset).
   */
  position?: number;
  ids: string[];
  hasMore: boolean;
  cursor: Cursor;
  matches?: number;
  /** The people, where finding them read them already. */
  people?: Map<string, Person>;
};

export type PersonPredicate = (person: Person) => boolean;

/** What the request asks, resolved against the instance. */
export interface Listing {
  instanceId: string;
  q: string | undefined;
  /** The sort field, unless it is creation order (`c`). */
  sortField: string | undefined;
  predicate: PersonPredicate | undefined;
  /** Identifies the listing (its settings) for cursors and offset positions. */
  fingerprint: string;
}

/** A listing's settings as a short key (cursors and kept positions are bound to it). */
export const fingerprintOf = (settings: unknown) =>
  createHash('sha256').update(canonicalJson(settings)).digest('base64url').slice(0, 22);

/**
 * Lists people. Creation order and sorting by email, first or last name are answered from
 * indexes, and so is `q` (a case-insensitive prefix of the email, "first last" or "last
 * first"). A `filter`, or a sort by any other field, is planned (listing-plan.ts): candidates
 * come from the most selective index that answers a condition of the filter, or from an
 * index in the listing's order, and at most `MAX_CANDIDATES` are examined a request. Every
 * page costs the same whatever the instance's size, and so does an `offset` that continues
 * where the previous page of the same listing ended (its position is kept).
 */
export async function getPeople(
  request: PersonGetRequest,
  tenant: Tenant,
  ports: ListingPorts,
  cursors: CursorCodec,
) {
  const fields = selectableFields(request.fields, tenant);
  const instanceId = tenant.instance.id;
  const { listing: people } = ports;
  // One moment for the whole request: relative time conditions and their index ranges agree.
  const now = Date.now();
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
  const tagNames = tagIds.length > 0 ? await people.tagNames(instanceId, tagIds) : undefined;
  const tagName = (idOrName: number | string) =>
    typeof idOrName === 'number' ? tagNames?.get(idOrName) : idOrName;
  const predicate: PersonPredicate | undefined = hasFilter
    ? personPredicate(request.filter, tenant, tagName, now)
    : undefined;
  const sortIndex = sortField === undefined ? 'list' : SORT_INDEXES[sortField];
  const totals = people.counters(instanceId);
  const listing: Listing = {
    instanceId,
    q,
    sortField,
    predicate,
    fingerprint: fingerprintOf({
      v: 1,
      q: q ?? null,
      sort: sortField ?? null,
      order: request.sort_order,
      filter: hasFilter ? request.filter : null,
      audience: request.audience_id ?? null,
    }),
  };
  if (request.audience_id !== undefined && sortField !== undefined) {
    // Sorting an audience's members by a field would read every member.
    throw new ValidationError('sort_by_field_id: cannot be combined with audience_id', [
      { field: 'sort_by_field_id', error: 'not with audience_id' },
    ]);
  }
  const start = await startOf(request, listing, ports.checkpoints, cursors);

  let found: Found;
  if (request.audience_id !== undefined && !predicate && !q) {
    found = await fromAudience(request, request.audience_id, ports, listing, start);
  } else if (request.audience_id === undefined && !predicate && !q && sortIndex) {
    found = await fromIndex(request, people, instanceId, sortIndex, start);
  } else if (request.audience_id === undefined && !predicate && q && !sortField) {
    found = await fromSearch(request, people, instanceId, q, start);
  } else {
    if (request.audience_id !== undefined) await audienceOf(request.audience_id, ports, listing);
    const plan = planListing(
      {
        filter: hasFilter ? request.filter : undefined,
        q,
        sort: sortOf(sortField),
        audienceId: request.audience_id,
      },
      {
        fieldType: (id) => (tenant.personFields.get(id)?.stored ? id.slice(0, 3) : undefined),
        tagName,
        now,
      },
    );
    found = await fromPlan(request, plan, ports, listing, start);
  }
  const read = found.people ?? (await people.getPeople(instanceId, found.ids));
  const contacts = found.ids.flatMap((id) => {
    const person = read.get(id);
    // Indexes are eventually consistent: a person archived a moment ago may still be listed.
    return person && person.archived_at === undefined ? [projectPerson(person, fields)] : [];
  });
  const counts = await totals;
  const cursorId = await cursors.encode(found.cursor);
  const nextOffset = request.offset + found.ids.length;
  if (found.hasMore && request.cursor_id === undefined && ports.checkpoints) {
    // The position keeps the signed state itself: it outlives the ID.
    const at = found.position ?? nextOffset;
    await ports.checkpoints.save(
      instanceId,
      listing.fingerprint,
      at,
      cursors.signed.encode(found.cursor),
    );
  }
  return {
    contacts,
    meta: {
      total_contacts: counts.contacts,
      total_organizations: counts.organizations,
      total_matches: found.matches ?? counts.contacts,
      total_subscribers: counts.subscribers,
    },
    offset: request.offset,
    next_offset: nextOffset,
    cursor_id: cursorId,
    has_more: found.hasMore,
  };
}

/**
 * Where a page starts. A cursor says so itself. An `offset` alone continues from the nearest
 * position this listing saved at or before it (the end of an earlier page), walking what lies
 * between: at most `MAX_OFFSET` entries, so a client that pages by `next_offset` costs the same
 * at any depth, and a jump far past every saved position is refused.
 */
async function startOf(
  request: PersonGetRequest,
  listing: Listing,
  checkpoints: OffsetCheckpoints | undefined,
  cursors: CursorCodec,
): Promise<Start> {
  if (request.cursor_id !== undefined) {
    return {
      cursor: await cursors.decode(Cursor, request.cursor_id),
      skip: 0,
      at: request.offset,
    };
  }
  if (request.offset === 0) return { skip: 0, at: 0 };
  const known = await checkpoints?.nearest(listing.instanceId, listing.fingerprint, request.offset);
  let cursor: Cursor | undefined;
  try {
    cursor = known ? cursors.signed.decode(Cursor, known.cursor) : undefined;
  } catch {
    // A position signed with a key retired since: as if there were none.
  }
  const from = cursor ? (known?.offset ?? 0) : 0;
  const skip = request.offset - from;
  if (skip > MAX_OFFSET) {
    throw new ValidationError(
      `offset: ${request.offset} is more than ${MAX_OFFSET} past where this listing was last paged to; page on by next_offset from the previous page, or with cursor_id (the previous page's cursor), which cost the same at any depth`,
      [{ field: 'offset', error: `over ${MAX_OFFSET} past the nearest known position` }],
    );
  }
  return cursor ? { cursor, skip, at: from } : { skip, at: 0 };
}

/** `filter` in the one filter language (audiences' too), read at the time of the request. */
function personPredicate(
  filter: unknown,
  tenant: Tenant,
  tagName: (idOrName: number | string) => string | undefined,
  now: number,
): PersonPredicate {
  const compiled = compileFilter(filter, { fields: tenant.personFields, tagName });
  return (person) => compiled({ person }, now).matches;
}

/** How a plan sorts: creation order, a sort index (email, names), or the field index. */
function sortOf(sortField: string | undefined) {
  if (sortField === undefined) return undefined;
  const index = SORT_INDEXES[sortField];
  return index ? { index } : { field: sortField };
}

/** Past the end of a key-based listing, the cursor stays at the end. */
const END = { asc: '\u{10FFFF}', desc: '0' } as const;

/** The audiences port, and the audience's member count; an unknown audience is a 404. */
async function audienceOf(audienceId: string, ports: ListingPorts, listing: Listing) {
  const members = ports.audiences;
  const size = await members?.size(listing.instanceId, audienceId);
  if (!members || size === undefined) throw noAudience(audienceId);
  return { members, size };
}

/**
 * The members of an audience from its members index, newest person first by default: the
 * same 16 queries per page as the default listing, whatever the audience's size. With `q` or
 * a `filter`, the members are the candidates of a planned listing. A sort by a field is
 * refused with it (it would read every member).
 */
async function fromAudience(
  request: PersonGetRequest,
  audienceId: string,
  ports: ListingPorts,
  listing: Listing,
  start: Start,
): Promise<Found> {
  const { members, size } = await audienceOf(audienceId, ports, listing);
  const order = request.sort_order;
  const { cursor, skip } = start;
  if (
    cursor &&
    (cursor.mode !== 'audience' || cursor.audience !== audienceId || cursor.order !== order)
  ) {
    throw new ValidationError('cursor_id: it was issued for another audience or sort', [
      { field: 'cursor_id', error: 'issued for another listing' },
    ]);
  }
  const after = cursor?.mode === 'audience' ? cursor.after : undefined;
  const page = await members.membersPage(
    listing.instanceId,
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
  start: Start,
): Promise<Found> {
  const order = request.sort_order;
  const { cursor, skip } = start;
  if (cursor && cursor.mode !== 'index') throw otherListing();
  if (cursor?.mode === 'index' && (cursor.index !== index || cursor.order !== order)) {
    throw new ValidationError('cursor_id: it was issued for another sort', [
      { field: 'cursor_id', error: 'issued for another sort' },
    ]);
  }
  const after = cursor?.mode === 'index' ? cursor.after : undefined;
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
  start: Start,
): Promise<Found> {
  const { cursor, skip } = start;
  if (cursor && cursor.mode !== 'search') throw otherListing();
  if (cursor?.mode === 'search' && cursor.q !== q) {
    throw new ValidationError('cursor_id: it was issued for another q', [
      { field: 'cursor_id', error: 'issued for another q' },
    ]);
  }
  const after = cursor?.mode === 'search' ? cursor.after : undefined;
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
