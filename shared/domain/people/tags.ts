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
  /** Whether the instance ever had a tag of this kind (one small read; absent: assume so). */
  hasTags?(instanceId: string): Promise<boolean>;
  /** The tags after `after` in name order that `keep` keeps, within the bounds given. */
  tagsPage(
    instanceId: string,
    options: { after?: string; limit: number; scan: number; keep: (name: string) => boolean },
  ): Promise<TagPage>;
}

/** Tags are made by the API (merges): no user made them, as the recorded answers show. */
const NOBODY = '000000000000000000000000';

/** Where the next page starts: person tags (`p`), then organizations' (`o`), by name. */
const Cursor = z.object({ kind: z.enum(['p', 'o']).default('p'), after: z.string().optional() });
type Cursor = z.infer<typeof Cursor>;

function cursorOf(cursor: string | undefined): Cursor {
  if (cursor === undefined) return { kind: 'p' };
  try {
    return Cursor.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    throw new ValidationError(
      'cursor_id: not a cursor of tags/get (send the X-Next-Cursor header)',
      [{ field: 'cursor_id', error: 'not a valid cursor' }],
    );
  }
}

const encode = (cursor: Cursor) =>
  Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');

/**
 * The instance's tags: its people's (`type` ""), then its organizations' (`type`
 * "organization", numbered apart and without the subscription counts, as recorded).
 */
export async function getTags(
  request: TagsGetRequest,
  tenant: Tenant,
  listings: { people: TagListing; organizations?: TagListing },
) {
  const words = (request.q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const keep = (name: string) => words.every((word) => name.toLowerCase().includes(word));
  const start = cursorOf(request.cursor_id);
  const view = (tag: TagView, type: '' | 'organization') => ({
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
    ...(type === '' ? { subscribers: tag.subscribers, sms_opted_in: tag.sms_opted_in } : {}),
    type,
  });
  const tags: ReturnType<typeof view>[] = [];
  let next: Cursor | undefined;
  if (start.kind === 'p') {
    const page = await listings.people.tagsPage(tenant.instance.id, {
      ...(start.after === undefined ? {} : { after: start.after }),
      limit: request.limit,
      scan: MAX_TAGS_SCANNED,
      keep,
    });
    tags.push(...page.tags.map((tag) => view(tag, '')));
    if (page.after !== undefined) next = { kind: 'p', after: page.after };
    else if (
      listings.organizations &&
      tags.length >= request.limit &&
      ((await listings.organizations.hasTags?.(tenant.instance.id)) ?? true)
    ) {
      next = { kind: 'o' };
    }
  }
  const room = request.limit - tags.length;
  const organizations =
    listings.organizations &&
    next === undefined &&
    room > 0 &&
    ((await listings.organizations.hasTags?.(tenant.instance.id)) ?? true)
      ? listings.organizations
      : undefined;
  if (organizations) {
    const after = start.kind === 'o' ? start.after : undefined;
    const page = await organizations.tagsPage(tenant.instance.id, {
      ...(after === undefined ? {} : { after }),
      limit: room,
      scan: MAX_TAGS_SCANNED,
      keep,
    });
    tags.push(...page.tags.map((tag) => view(tag, 'organization')));
    if (page.after !== undefined) next = { kind: 'o', after: page.after };
  }
  return { tags, ...(next === undefined ? {} : { next: encode(next) }) };
}
