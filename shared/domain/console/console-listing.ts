import type { CursorCodec } from '../cursor.js';
import { getPeople, type ListingPorts, type PersonGetRequest } from '../people/person-get.js';
import type { Tenant } from '../tenancy.js';

/** The people's columns the console's listings show (email and name). */
export const PEOPLE_COLUMNS = ['str::email', 'str::first', 'str::last'];

/** Where a page of people starts: an offset, or the cursor the previous page gave. */
export interface PageAsked {
  limit: number;
  offset: number;
  cursor_id?: string | undefined;
}

/** What narrows the people listed: a search, a filter, or one audience's members. */
export type PeopleNarrowing = Partial<Pick<PersonGetRequest, 'q' | 'filter' | 'audience_id'>>;

/**
 * A page of people as every console listing shows them (newest first, email and name),
 * read as the API's `person/get` reads it: the people page, an organization's people and
 * an audience's members differ only in what narrows them.
 */
export async function peoplePage(
  tenant: Tenant,
  page: PageAsked,
  narrowing: PeopleNarrowing,
  ports: ListingPorts,
  cursors: (instanceId: string) => Promise<CursorCodec>,
) {
  return getPeople(
    {
      limit: page.limit,
      offset: page.offset,
      sort_order: 'desc',
      fields: PEOPLE_COLUMNS,
      // Left out or empty, each narrows nothing (`person/get`'s own rule).
      ...narrowing,
      ...(page.cursor_id ? { cursor_id: page.cursor_id } : {}),
    },
    tenant,
    ports,
    await cursors(tenant.instance.id),
  );
}
