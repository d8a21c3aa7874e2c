import { z } from 'zod';
import type { CursorCodec } from '../cursor.js';
import { NotFoundError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { getOrganizations, type OrganizationListing } from '../organizations/organization-get.js';
import { ORGANIZATION_NAME } from '../organizations/organization-merge.js';
import { ORGANIZATION_FIELD, type ListingPorts } from '../people/person-get.js';
import type { Region } from '../regions.js';
import { consoleTenant } from './console-activities.js';
import { type ConsoleCaller, ConsoleInstanceId, type ConsoleStore } from './console-keys.js';
import { peoplePage } from './console-listing.js';

/**
 * Organizations in the console: a search over the instance's organizations (the API's
 * `organizations/get`, its `q` by name prefix, paging and totals) and one organization's
 * profile: every field with its label, its tags, its member count (kept on the organization)
 * and a page of its people, found as the API's `person/get` finds them with the filter
 * `$id_is` on `idt::o` (the field index's organization entries, at most 3,000 people). Reads
 * only: nothing here changes an organization.
 */
type Store = Pick<ConsoleStore, 'getInstance'>;
const instanceId = ConsoleInstanceId;
const page = {
  limit: z.number().int().min(1).max(100).default(25),
  offset: z.number().int().min(0).max(10_000_000).default(0),
  cursor_id: z.string().max(2000).optional(),
};

export const ConsoleOrganizationsRequest = z.strictObject({
  instance_id: instanceId,
  q: z.string().max(255).optional(),
  ...page,
});
export const ConsoleOrganizationProfileRequest = z.strictObject({
  instance_id: instanceId,
  organization_id: z
    .string()
    .regex(ID_PATTERN, 'expected an organization ID (24 hexadecimal characters)'),
  /** The page of its people. */
  ...page,
});

const LISTED = [ORGANIZATION_NAME, 'str:o:website', 'str:o:industry'];

export async function organizationsOf(
  store: Store,
  listing: OrganizationListing,
  cursors: (instanceId: string) => Promise<CursorCodec>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleOrganizationsRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const found = await getOrganizations(
    {
      limit: request.limit,
      offset: request.offset,
      sort_order: 'desc',
      fields: LISTED,
      ...(request.q ? { q: request.q } : {}),
      ...(request.cursor_id ? { cursor_id: request.cursor_id } : {}),
    },
    tenant,
    listing,
    await cursors(tenant.instance.id),
  );
  return { instance_id: tenant.instance.id, ...found };
}

export async function organizationProfileOf(
  store: Store,
  listing: Pick<OrganizationListing, 'getOrganizations'>,
  people: ListingPorts,
  cursors: (instanceId: string) => Promise<CursorCodec>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleOrganizationProfileRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const id = request.organization_id;
  const organization = (await listing.getOrganizations(tenant.instance.id, [id])).get(id);
  if (!organization) {
    throw new NotFoundError(`organization_id: no organization ${id} in this instance`, [
      { field: 'organization_id', error: 'not found' },
    ]);
  }
  const definitions = [...tenant.organizationFields.fields].filter((field) => field.selectable);
  const members = await peoplePage(
    tenant,
    request,
    { filter: { $id_is: { field_id: ORGANIZATION_FIELD, value: id } } },
    people,
    cursors,
  );
  return {
    instance_id: tenant.instance.id,
    organization_id: id,
    fields: definitions.flatMap((field) => {
      const value = organization.fields[field.id];
      return value === undefined ? [] : [{ id: field.id, label: field.label, value }];
    }),
    tags: organization.tags,
    created: organization.created_at,
    archived_at: organization.archived_at ?? null,
    // Kept on the organization with every link and unlink (never counted).
    member_count: organization.members,
    people: {
      contacts: members.contacts,
      offset: members.offset,
      next_offset: members.next_offset,
      cursor_id: members.cursor_id,
      has_more: members.has_more,
    },
  };
}
