import { z } from 'zod';
import type { Tenant } from '../tenancy.js';

/**
 * `POST /v1/tags/get`: the instance's tags in the real API's recorded shape, a bare array;
 * `q` keeps those whose name contains it (case-insensitive). Counts come from counters kept
 * by the writes that tag, untag, change permissions, archive, restore and erase people
 * (`tag-counts.ts`), never from reading people.
 */
export const TagsGetRequest = z.object({ q: z.string().max(255).optional() });
export type TagsGetRequest = z.infer<typeof TagsGetRequest>;

export interface TagView {
  id: number;
  name: string;
  created_at: string;
  last_used: string;
  count: number;
  subscribers: number;
  sms_opted_in: number;
}

export interface TagListing {
  /** Every tag of the instance with its counts, in the order of their IDs. */
  listTags(instanceId: string): Promise<TagView[]>;
}

/** Tags are made by the API (merges): no user made them, as the recorded answers show. */
const NOBODY = '000000000000000000000000';

export async function getTags(request: TagsGetRequest, tenant: Tenant, listing: TagListing) {
  const q = request.q?.trim().toLowerCase();
  const tags = await listing.listTags(tenant.instance.id);
  return tags
    .filter((tag) => !q || tag.name.toLowerCase().includes(q))
    .map((tag) => ({
      id: tag.id,
      instance_id: tenant.instance.id,
      name: tag.name,
      source: 'api',
      created_by_id: NOBODY,
      created_by_name: '',
      created_by_email: '',
      created_at: tag.created_at,
      last_used: tag.last_used,
      count: tag.count,
      subscribers: tag.subscribers,
      sms_opted_in: tag.sms_opted_in,
      type: '',
    }));
}
