import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { NotImplementedError, ValidationError } from '../errors.js';
import type { FieldValue } from '../fields/field-values.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import type { Person } from './person.js';

/** `POST /v1/person/get` (API.md). */
export const PersonGetRequest = z.object({
  limit: z.number().int().min(1).max(100).default(50),
  offset: z.number().int().min(0).max(10_000_000).default(0),
  cursor_id: z.string().max(2000).optional(),
  sort_by_field_id: z.string().nullable().optional(),
  sort_order: z.enum(['asc', 'desc']).default('desc'),
  fields: z.array(z.string()).max(300).optional(),
  q: z.string().max(255).optional(),
  filter: z.unknown().optional(),
});
export type PersonGetRequest = z.infer<typeof PersonGetRequest>;

export const DEFAULT_PERSON_FIELDS = ['str::first', 'str::last', 'str::email'];
export const TAGS_FIELD = 'tags';
export const ORGANIZATION_FIELD = 'idt::o';

export interface PersonListing {
  /** The next `count` person IDs after `after` (exclusive) in creation order, and whether more follow. */
  page(
    instanceId: string,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ): Promise<{ ids: string[]; hasMore: boolean }>;
  getPeople(instanceId: string, ids: string[]): Promise<Map<string, Person>>;
  counters(
    instanceId: string,
  ): Promise<{ contacts: number; subscribers: number; organizations: number }>;
}

const Cursor = z.object({
  v: z.literal(1),
  after: z.string().regex(ID_PATTERN),
  order: z.enum(['asc', 'desc']),
});

/** Checks requested field IDs: built-in selectable fields, custom fields, `tags`, `idt::o`. */
export function selectableFields(requested: string[] | undefined, tenant: Tenant): string[] {
  const fields = requested ?? DEFAULT_PERSON_FIELDS;
  fields.forEach((id, index) => {
    if (id === TAGS_FIELD) return;
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
  const projected: Record<string, FieldValue | string[]> = {};
  for (const id of fields) {
    if (id === TAGS_FIELD) projected[id] = person.tags;
    else if (id !== ORGANIZATION_FIELD) {
      const value = person.fields[id];
      if (value !== undefined) projected[id] = value;
    }
  }
  if (person.organization_id) projected[ORGANIZATION_FIELD] = person.organization_id;
  return Object.keys(projected).length > 0
    ? { id: person.id, fields: projected }
    : { id: person.id };
}

/**
 * Lists people in creation order. With `cursor_id` a page costs the same whatever the
 * instance's size (a query per listing shard from the cursor on); an `offset` without a
 * cursor is walked from the start, so it costs in proportion to the offset.
 */
export async function getPeople(request: PersonGetRequest, tenant: Tenant, listing: PersonListing) {
  if (request.q !== undefined && request.q.trim() !== '')
    throw new NotImplementedError('Person search (q)');
  if (request.filter !== undefined && request.filter !== null)
    throw new NotImplementedError('Person filters');
  if (request.sort_by_field_id) throw new NotImplementedError('Sorting by a field');
  const fields = selectableFields(request.fields, tenant);
  const instanceId = tenant.instance.id;
  const order = request.sort_order;
  let after: string | undefined;
  let skip = request.offset;
  if (request.cursor_id !== undefined) {
    const cursor = decodeCursor(Cursor, request.cursor_id);
    if (cursor.order !== order) {
      throw new ValidationError('cursor_id: it was issued for the other sort_order', [
        { field: 'cursor_id', error: 'sort order differs' },
      ]);
    }
    after = cursor.after;
    skip = 0;
  }
  const [page, totals] = await Promise.all([
    listing.page(instanceId, order, after, skip + request.limit),
    listing.counters(instanceId),
  ]);
  const ids = page.ids.slice(skip);
  const people = await listing.getPeople(instanceId, ids);
  const contacts = ids.flatMap((id) => {
    const person = people.get(id);
    return person ? [projectPerson(person, fields)] : [];
  });
  // Past the end, the cursor points at the end, so that following it stays there.
  const last = ids.at(-1) ?? after ?? (order === 'desc' ? '0'.repeat(24) : 'f'.repeat(24));
  return {
    contacts,
    meta: {
      total_contacts: totals.contacts,
      total_organizations: totals.organizations,
      total_matches: totals.contacts,
      total_subscribers: totals.subscribers,
    },
    offset: request.offset,
    next_offset: request.offset + ids.length,
    cursor_id: encodeCursor({ v: 1, after: last, order }),
    has_more: page.hasMore,
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
