import { beforeAll, describe, expect, it } from '@jest/globals';
import { KEYS, call } from './stack.js';
import { merge, uniqueEmail } from './people.js';

const key = KEYS.pager;

interface Page {
  contacts: { id: string; fields?: Record<string, unknown> }[];
  meta: Record<string, number>;
  offset: number;
  next_offset: number;
  cursor_id: string;
  has_more: boolean;
}

async function page(body: Record<string, unknown>): Promise<Page> {
  const response = await call('/v1/person/get', { key, body });
  expect(response.status).toBe(200);
  return response.body as unknown as Page;
}

const created: string[] = [];

beforeAll(async () => {
  for (let batch = 0; batch < 3; batch += 1) {
    const people = Array.from({ length: batch < 2 ? 100 : 50 }, (_, i) => ({
      fields: {
        'str::email': uniqueEmail(`page${batch}-${i}`),
        'str::first': `P${batch * 100 + i}`,
      },
    }));
    const entries = await merge(key, { people });
    created.push(...entries.map((entry) => entry.person_id ?? ''));
  }
});

describe('person get', () => {
  it('walks every person exactly once with cursor_id, newest first, while others are added', async () => {
    const seen: string[] = [];
    let body: Record<string, unknown> = { limit: 100, fields: ['str::email'] };
    for (let round = 0; round < 10; round += 1) {
      const result = await page(body);
      seen.push(...result.contacts.map((contact) => contact.id));
      expect(result.offset).toBe(body.offset ?? 0);
      expect(result.next_offset).toBe(result.offset + result.contacts.length);
      // Someone keeps adding people while we page.
      await merge(key, { people: [{ fields: { 'str::email': uniqueEmail('late') } }] });
      if (!result.has_more) break;
      body = {
        limit: 100,
        fields: ['str::email'],
        offset: result.next_offset,
        cursor_id: result.cursor_id,
      };
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => created.includes(id)).sort()).toEqual([...created].sort());
    const order = seen.filter((id) => created.includes(id));
    expect(order).toEqual([...created].reverse());
  });

  it('pages by offset alone too', async () => {
    const first = await page({ limit: 40, sort_order: 'asc' });
    const second = await page({ limit: 40, sort_order: 'asc', offset: 40 });
    expect(first.contacts.map((c) => c.id)).toEqual(created.slice(0, 40));
    expect(second.contacts.map((c) => c.id)).toEqual(created.slice(40, 80));
    expect(second.has_more).toBe(true);
  });

  it('answers an offset past the end with an empty page and the real totals', async () => {
    const result = await page({ limit: 10, offset: 5000 });
    expect(result.contacts).toEqual([]);
    expect(result.has_more).toBe(false);
    expect(result.meta.total_contacts).toBeGreaterThanOrEqual(250);
    expect(result.meta.total_matches).toBe(result.meta.total_contacts);
    expect(result.meta.total_subscribers).toBe(result.meta.total_contacts);
    expect(result.meta.total_organizations).toBe(0);
  });

  it('walks an offset at most 10,000 past where the listing was paged to, and points to the cursor beyond it', async () => {
    const deepest = await page({ limit: 10, offset: 10_000 });
    expect(deepest.contacts).toEqual([]);
    // Nothing of this listing was answered near 20,000: too far to walk.
    const refused = await call('/v1/person/get', { key, body: { limit: 10, offset: 20_000 } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(
      /^offset: 20000 is more than 10000 past where this listing was last paged to; page on by next_offset from the previous page, or with cursor_id \(the previous page's cursor\), which cost the same at any depth$/,
    );
    expect(refused.body.details).toEqual([
      { field: 'offset', error: 'over 10000 past the nearest known position' },
    ]);
    // With a cursor the offset only numbers the page: the cursor says where it starts.
    const first = await page({ limit: 5, sort_order: 'asc' });
    const next = await page({
      limit: 5,
      sort_order: 'asc',
      offset: 50_000,
      cursor_id: first.cursor_id,
    });
    expect(next.contacts.map((c) => c.id)).toEqual(created.slice(5, 10));
    const organizations = await call('/v1/organizations/get', {
      key,
      body: { limit: 10, offset: 10_001 },
    });
    expect(organizations.status).toBe(400);
    expect(organizations.body.error).toMatch(/^offset: at most 10000 without a cursor_id/);
  });

  it('returns the requested fields, 50 people by default', async () => {
    const result = await page({ fields: ['str::first', 'tags'], sort_order: 'asc' });
    expect(result.contacts).toHaveLength(50);
    expect(result.contacts[0]).toEqual({
      id: created[0],
      fields: { 'str::first': 'P0', tags: [] },
    });
    const none = await page({ limit: 1, fields: ['str::last'] });
    expect(none.contacts[0]).toEqual({ id: expect.any(String) as unknown });
  });

  it.each([
    [{ limit: 0 }, /limit/],
    // 1 to 500, as the real API documents.
    [{ limit: 501 }, /limit/],
    [{ offset: 10_000_001 }, /offset/],
    [{ offset: -1 }, /offset/],
    [{ sort_order: 'up' }, /sort_order/],
    [{ fields: ['str::nope'] }, /fields\[0\]: "str::nope" is not a person field/],
    // The context fields are selectable; an activity's conversion value is not.
    [{ fields: ['int::v'] }, /fields\[0\]: "int::v" cannot be selected/],
    [{ cursor_id: 'not-a-cursor' }, /cursor_id/],
  ])('refuses %p', async (body, message) => {
    const response = await call('/v1/person/get', { key, body });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(message);
  });

  it('never shows people of another instance', async () => {
    const response = await call('/v1/person/get-by-ids', {
      key: KEYS.acme,
      body: { contact_ids: created.slice(0, 5) },
    });
    expect(response.body).toEqual({ contacts: {} });
    const activities = await call('/v1/person/get/activities', {
      key: KEYS.acme,
      body: { person_id: created[0] },
    });
    expect(activities.status).toBe(400);
  });
});

describe('person get-by-ids and activities', () => {
  it('answers people by ID, leaving out unknown IDs', async () => {
    const ids = [created[0] ?? '', 'ffffffffffffffffffffffff'];
    const response = await call('/v1/person/get-by-ids', {
      key,
      body: { contact_ids: ids, fields: ['str::first'] },
    });
    expect(response.body).toEqual({
      contacts: { [ids[0] ?? '']: { id: ids[0], fields: { 'str::first': 'P0' } } },
    });
  });

  it('pages through a person timeline newest first', async () => {
    const email = uniqueEmail();
    const [entry] = await merge(key, { people: [{ fields: { 'str::email': email } }] });
    const id = entry?.person_id ?? '';
    for (const p of [false, true, false])
      await merge(key, { people: [{ fields: { 'str::email': email, 'bol::p': p } }] });
    const first = await call('/v1/person/get/activities', {
      key,
      body: { person_id: id, limit: 3 },
    });
    const firstBody = first.body as {
      activities: { field_id: string }[];
      cursor_id: string;
      has_more: boolean;
    };
    expect(firstBody.activities.map((a) => a.field_id)).toEqual([
      'act::u-all',
      'act::s-all',
      'act::u-all',
    ]);
    expect(firstBody.has_more).toBe(true);
    const second = await call('/v1/person/get/activities', {
      key,
      body: { person_id: id, limit: 3, cursor_id: firstBody.cursor_id },
    });
    expect(second.body).toMatchObject({
      activities: [{ field_id: 'act::s-all' }],
      has_more: false,
      cursor_id: null,
    });
    expect(firstBody.cursor_id).toMatch(/^[0-9a-f]{24}$/);
    // The real API's paging: by offset, `next_offset` and `meta`.
    expect(first.body).toMatchObject({
      meta: { total_activities: 4, field_ids: null, has_more: true },
      offset: 0,
      next_offset: 3,
    });
    const byOffset = await call('/v1/person/get/activities', {
      key,
      body: { person_id: id, limit: 3, offset: 3 },
    });
    expect(byOffset.body).toMatchObject({
      activities: [
        {
          field_id: 'act::s-all',
          render_cmds: [{ content: 'Subscribed to email' }, { content: '.' }],
        },
      ],
      meta: { total_activities: 4, has_more: false },
      offset: 3,
      next_offset: 4,
    });
    // A period: everything happened today; nothing yesterday.
    const today = await call('/v1/person/get/activities', {
      key,
      body: { person_id: id, timeframe: { type: 'today' }, activities: ['act::u-all'] },
    });
    expect(today.body).toMatchObject({ meta: { total_activities: 2, field_ids: ['act::u-all'] } });
    const yesterday = await call('/v1/person/get/activities', {
      key,
      body: { person_id: id, timeframe: { type: 'yesterday' } },
    });
    expect(yesterday.body).toMatchObject({
      activities: [],
      meta: { total_activities: 0, has_more: false },
      next_offset: 0,
    });
    const unknown = await call('/v1/person/get/activities', {
      key,
      body: { person_id: id, timeframe: { type: 'tomorrow' } },
    });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('timeframe');
    const filtered = await call('/v1/person/get/activities', {
      key,
      body: { person_id: id, activities: ['act::s-all'] },
    });
    expect((filtered.body.activities as unknown[]).length).toBe(2);
  });
});
