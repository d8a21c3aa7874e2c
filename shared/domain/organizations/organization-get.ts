import { z } from 'zod';
import { checkOffset, type CursorCodec } from '../cursor.js';
import { ValidationError } from '../errors.js';
import type { FieldValue } from '../fields/field-values.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import { searchRange } from '../people/person-index.js';
import { ORGANIZATION_NAME, type Organization } from './organization-merge.js';

/** `POST /v1/organizations/get`: the organization counterpart of person get. */
export const OrganizationGetRequest = z.object({
  // 1 to 500, as for people (`MAX_PAGE`, person-get.ts).
  limit: z.number().int().min(1).max(500).default(50),
  offset: z.number().int().min(0).max(10_000_000).default(0),
  cursor_id: z.string().max(2000).optional(),
  sort_by_field_id: z.literal(ORGANIZATION_NAME).nullable().optional(),
  sort_order: z.enum(['asc', 'desc']).default('desc'),
  fields: z.array(z.string()).max(200).optional(),
  q: z.string().max(255).optional(),
});
export type OrganizationGetRequest = z.infer<typeof OrganizationGetRequest>;

export type OrganizationIndex = 'list' | 'name';

export interface OrganizationListing {
  indexPage(
    instanceId: string,
    index: OrganizationIndex,
    order: 'asc' | 'desc',
    position: { after?: string; between?: [string, string] },
    count: number,
  ): Promise<{ keys: string[]; hasMore: boolean }>;
  /** How many names fall in a range, counting at most `cap`. */
  countRange(instanceId: string, between: [string, string], cap: number): Promise<number>;
  getOrganizations(
    instanceId: string,
    ids: string[],
  ): Promise<Map<string, Organization & { members: number }>>;
  total(instanceId: string): Promise<number>;
}

/** `total_matches` of a name search is counted on its first page (up to this many) and carried. */
export const MAX_COUNTED_MATCHES = 10_000;

const Cursor = z.object({
  v: z.literal(2),
  index: z.enum(['list', 'name']),
  order: z.enum(['asc', 'desc']),
  q: z.string().optional(),
  after: z.string().min(1),
  matches: z.number().int().min(0).optional(),
});

/** The fields asked for (the name by default), each one the instance's organizations have. */
function selectableFields(requested: string[] | undefined, tenant: Tenant): string[] {
  const fields = requested ?? [ORGANIZATION_NAME];
  fields.forEach((id, index) => {
    if (!tenant.organizationFields.get(id)?.selectable) {
      throw new ValidationError(
        `fields[${index}]: "${id}" is not an organization field of this instance`,
        [{ field: `fields[${index}]`, error: 'not an organization field' }],
      );
    }
  });
  return fields;
}

/** `{id, fields}` with the requested values that are set (no `fields` when none is). */
function projectOrganization(organization: Organization, fields: string[]) {
  const projected: Record<string, FieldValue> = {};
  for (const id of fields) {
    const value = organization.fields[id];
    if (value !== undefined) projected[id] = value;
  }
  return Object.keys(projected).length > 0
    ? { id: organization.id, fields: projected }
    : { id: organization.id };
}

/**
 * Creation order from the `list` index; `q` (a case-insensitive prefix of the name) and
 * sorting by name from the `name` index. With `cursor_id` a page costs 16 index queries.
 */
export async function getOrganizations(
  request: OrganizationGetRequest,
  tenant: Tenant,
  listing: OrganizationListing,
  cursors: CursorCodec,
) {
  checkOffset(request);
  const fields = selectableFields(request.fields, tenant);
  const instanceId = tenant.instance.id;
  const q = request.q?.trim() ? request.q : undefined;
  const index: OrganizationIndex = q || request.sort_by_field_id ? 'name' : 'list';
  const order = q ? 'asc' : request.sort_order;
  let after: string | undefined;
  let counted: number | undefined;
  if (request.cursor_id !== undefined) {
    const cursor = await cursors.decode(Cursor, request.cursor_id);
    if (cursor.index !== index || cursor.order !== order || cursor.q !== q) {
      throw new ValidationError(
        'cursor_id: it belongs to a listing with other q or sort settings',
        [{ field: 'cursor_id', error: 'issued for another listing' }],
      );
    }
    after = cursor.after;
    counted = cursor.matches;
  }
  const skip = after === undefined ? request.offset : 0;
  const range = q ? searchRange(q) : undefined;
  const between: [string, string] | undefined = range
    ? [after === undefined ? range.from : `${after} `, range.to]
    : undefined;
  const [page, total, matches] = await Promise.all([
    listing.indexPage(
      instanceId,
      index,
      order,
      between ? { between } : after === undefined ? {} : { after },
      skip + request.limit,
    ),
    listing.total(instanceId),
    range
      ? (counted ?? listing.countRange(instanceId, [range.from, range.to], MAX_COUNTED_MATCHES))
      : undefined,
  ]);
  const keys = page.keys.slice(skip);
  const organizations = await listing.getOrganizations(
    instanceId,
    keys.map((key) => key.slice(-24)),
  );
  const views = keys.flatMap((key) => {
    const organization = organizations.get(key.slice(-24));
    // Indexes are eventually consistent: one archived a moment ago may still be listed.
    if (!organization || organization.archived_at !== undefined) return [];
    return [projectOrganization(organization, fields)];
  });
  const end = order === 'asc' ? '\u{10FFFF}' : '0';
  return {
    organizations: views,
    meta: { total_organizations: total, total_matches: matches ?? total },
    offset: request.offset,
    next_offset: request.offset + keys.length,
    cursor_id: await cursors.encode({
      v: 2,
      index,
      order,
      ...(q ? { q } : {}),
      after: keys.at(-1) ?? after ?? end,
      ...(matches !== undefined ? { matches } : {}),
    }),
    has_more: page.hasMore,
  };
}

const organizationId = z.string().regex(ID_PATTERN, 'expected an organization ID');

/** `POST /v1/organizations/get-by-ids` (docs/api.md, Beyond the spec): the person one's twin. */
export const OrganizationGetByIdsRequest = z.object({
  organization_ids: z.array(organizationId).min(1).max(100),
  fields: z.array(z.string()).max(200).optional(),
});
export type OrganizationGetByIdsRequest = z.infer<typeof OrganizationGetByIdsRequest>;

/** `POST /v1/accounts/get-by-ids`: the same with `account_ids`. */
export const AccountGetByIdsRequest = z.object({
  account_ids: z.array(organizationId).min(1).max(100),
  fields: OrganizationGetByIdsRequest.shape.fields,
});
export type AccountGetByIdsRequest = z.infer<typeof AccountGetByIdsRequest>;

/**
 * Organizations by ID (strongly consistent reads, one batch), keyed by ID; IDs that name no
 * organization of this instance are left out, as `person/get-by-ids` leaves people out.
 */
export async function getOrganizationsByIds(
  request: { ids: string[]; fields?: string[] | undefined },
  tenant: Tenant,
  listing: Pick<OrganizationListing, 'getOrganizations'>,
) {
  const fields = selectableFields(request.fields, tenant);
  const found = await listing.getOrganizations(tenant.instance.id, [...new Set(request.ids)]);
  const organizations: Record<string, ReturnType<typeof projectOrganization>> = {};
  for (const id of request.ids) {
    const organization = found.get(id);
    if (organization) organizations[id] = projectOrganization(organization, fields);
  }
  return { organizations };
}
