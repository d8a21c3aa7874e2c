import { z } from 'zod';
import { ValidationError } from '../errors.js';
import type { Tenant } from '../tenancy.js';

/**
 * `POST /v1/tags/get`: the instance's tags in the real API's recorded shape, a bare array, in
 * name order; `q` keeps those whose name contains each of its words (any case). Counts come
 * from counters kept by the writes that tag, untag, change permissions, archive, restore and
 * erase people (`tag-counts.ts`), never from reading people. An answer holds at most `limit`
 * tags (1,000 by default and at most) after reading at most `MAX_TAGS_SCANNED` names: when
 * more may follow, `next` is the `cursor_id` of the next page, which the handler gives in the
 * `X-Next-Cursor` header (our addition: the real API answers every tag at once; docs/api.md).
 */
export const MAX_TAGS_ANSWERED = 1_000;
export const MAX_TAGS_SCANNED = 10_000;

export const TagsGetRequest = z.object({
  q: z.string().max(255).optional(),
  limit: z.number().int().min(1).max(MAX_TAGS_ANSWERED).default(MAX_TAGS_ANSWERED),
  cursor_id: z.string().max(2000).optional(),
});
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

/** A page of tags, and the name the next page starts after when more may follow. */
export interface TagPage {
  tags: TagView[];
  after?: string;
}

export interface TagListing {
  /** The tags after `after` in name order that `keep` keeps, within the bounds given. */
  tagsPage(
    instanceId: string,
    options: { after?: string; limit: number; scan: number; keep: (name: string) => boolean },
  ): Promise<TagPage>;
}

/** Tags are made by the API (merges): no user made them, as the recorded answers show. */
const NOBODY = '000000000000000000000000';

const Cursor = z.object({ after: z.string() });

function afterOf(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    return Cursor.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))).after;
  } catch {
    throw new ValidationError(
      'cursor_id: not a cursor of tags/get (send the X-Next-Cursor header)',
      [{ field: 'cursor_id', error: 'not a valid cursor' }],
    );
  }
}

export async function getTags(request: TagsGetRequest, tenant: Tenant, listing: TagListing) {
  const words = (request.q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const after = afterOf(request.cursor_id);
  const page = await listing.tagsPage(tenant.instance.id, {
    ...(after === undefined ? {} : { after }),
    limit: request.limit,
    scan: MAX_TAGS_SCANNED,
    keep: (name) => words.every((word) => name.toLowerCase().includes(word)),
  });
  const tags = page.tags.map((tag) => ({
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
  const next =
    page.after === undefined
      ? undefined
      : Buffer.from(JSON.stringify({ after: page.after }), 'utf8').toString('base64url');
  return { tags, ...(next === undefined ? {} : { next }) };
}
