import { beforeAll, describe, expect, it } from '@jest/globals';
import { KEYS, call } from './stack.js';
import { idsEventually, merge } from './people.js';

const key = KEYS.finder;

interface Page {
  contacts: { id: string; fields?: Record<string, unknown> }[];
  meta: Record<string, number>;
  next_offset: number;
  cursor_id: string;
  has_more: boolean;
}

async function page(body: Record<string, unknown>): Promise<Page> {
  const response = await call('/v1/person/get', { key, body });
  expect({ status: response.status, error: response.body.error }).toEqual({
    status: 200,
    error: undefined,
  });
  return response.body as unknown as Page;
}

/** Every contact of a listing, page by page with cursor_id. */
async function walk(body: Record<string, unknown>, limit: number) {
  const ids: string[] = [];
  let request: Record<string, unknown> = { ...body, limit };
  for (let i = 0; i < 100; i += 1) {
    const result = await page(request);
    ids.push(...result.contacts.map((c) => c.id));
    if (!result.has_more) return { ids, meta: result.meta };
    request = { ...body, limit, offset: result.next_offset, cursor_id: result.cursor_id };
  }
  throw new Error('too many pages');
}

const people: { id: string; email: string; first: string; last: string; score: number }[] = [];

beforeAll(async () => {
  const firsts = ['Ann', 'Anna', 'Bob', 'Carla', 'Dan'];
  const lasts = ['Anders', 'Brown', 'Annandale', 'Smith', 'Stone'];
  const records = [];
  for (let i = 0; i < 250; i += 1) {
    const first = firsts[i % 5] ?? '';
    const last = lasts[Math.floor(i / 5) % 5] ?? '';
    const email = `${['an', 'bo', 'zed'][i % 3] ?? ''}${i}@Search.test`;
    records.push({ email, first, last, score: i % 7 });
  }
  for (let start = 0; start < records.length; start += 100) {
    const batch = records.slice(start, start + 100);
    const entries = await merge(key, {
      people: batch.map((r) => ({
        fields: {
          'str::email': r.email,
          'str::first': r.first,
          'str::last': r.last,
          'int:cm:score': r.score,
        },
        tags: r.score === 0 ? ['zero'] : [],
      })),
    });
    entries.forEach((entry, i) => {
      const record = batch[i];
      if (record) people.push({ id: entry.person_id ?? '', ...record });
    });
  }
  // Filters and sorts by field read the field index, a moment behind the merges.
  await idsEventually(
    key,
    {
      limit: 500,
      sort_by_field_id: 'int:cm:score',
      filter: { '$int::greater_than': { field_id: 'int:cm:score', value: -1 } },
    },
    people.map((p) => p.id),
  );
});

const lower = (s: string) => s.toLowerCase();
function expectedMatches(q: string) {
  const prefix = lower(q);
  return people.filter(
    (p) =>
      lower(p.email).startsWith(prefix) ||
      lower(`${p.first} ${p.last}`).startsWith(prefix) ||
      lower(`${p.last} ${p.first}`).startsWith(prefix),
  );
}

describe('person get: q', () => {
  it.each([['an'], ['AN'], ['ann'], ['anna anders'], ['smith'], ['bo1'], ['nobody-here']])(
    'finds every person whose email or name starts with %p exactly once, across pages',
    async (q) => {
      const expected = expectedMatches(q)
        .map((p) => p.id)
        .sort();
      const { ids, meta } = await walk({ q }, 37);
      expect(ids.length).toBe(new Set(ids).size);
      expect([...ids].sort()).toEqual(expected);
      expect(meta.total_matches).toBe(expected.length);
      expect(meta.total_contacts).toBe(250);
    },
  );

  it('pages q by offset alone as well', async () => {
    const first = await page({ q: 'an', limit: 20 });
    const second = await page({ q: 'an', limit: 20, offset: 20 });
    const both = await page({ q: 'an', limit: 40 });
    expect([...first.contacts, ...second.contacts].map((c) => c.id)).toEqual(
      both.contacts.map((c) => c.id),
    );
  });

  it('refuses a cursor of another listing', async () => {
    const result = await page({ q: 'an', limit: 5 });
    const response = await call('/v1/person/get', {
      key,
      body: { q: 'bo', cursor_id: result.cursor_id },
    });
    expect(response.status).toBe(400);
    const other = await call('/v1/person/get', { key, body: { cursor_id: result.cursor_id } });
    expect(other.status).toBe(400);
  });
});

describe('person get: sort', () => {
  it.each([
    ['str::email', 'asc', (p: (typeof people)[number]) => lower(p.email)],
    ['str::email', 'desc', (p: (typeof people)[number]) => lower(p.email)],
    ['str::first', 'asc', (p: (typeof people)[number]) => lower(`${p.first} ${p.last}`)],
    ['str::last', 'desc', (p: (typeof people)[number]) => lower(`${p.last} ${p.first}`)],
  ] as const)(
    'sorts by %s %s from an index, walking everyone once',
    async (field, order, keyOf) => {
      const { ids } = await walk(
        { sort_by_field_id: field, sort_order: order, fields: ['str::email'] },
        64,
      );
      const expected = [...people]
        .sort((a, b) =>
          keyOf(a) === keyOf(b) ? (a.id < b.id ? -1 : 1) : keyOf(a) < keyOf(b) ? -1 : 1,
        )
        .map((p) => p.id);
      expect(ids).toEqual(order === 'asc' ? expected : expected.reverse());
    },
  );

  it('sorts by any other field from the field index', async () => {
    const { ids } = await walk({ sort_by_field_id: 'int:cm:score', sort_order: 'desc' }, 100);
    const scores = ids.map((id) => people.find((p) => p.id === id)?.score ?? -1);
    expect(ids).toHaveLength(250);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it('refuses an unknown sort field', async () => {
    const response = await call('/v1/person/get', { key, body: { sort_by_field_id: 'str::nope' } });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(/sort_by_field_id/);
  });
});

describe('person get: filter', () => {
  it.each([
    [
      { '$str::is': { field_id: 'str::first', value: 'anna' } },
      (p: (typeof people)[number]) => p.first === 'Anna',
    ],
    [
      { '$str::contains': { field_id: 'str::last', value: 'AND' } },
      (p: (typeof people)[number]) => /and/i.test(p.last),
    ],
    [
      {
        $and: [
          { '$str::is': { field_id: 'str::first', value: 'Bob' } },
          { '$int::greater_than': { field_id: 'int:cm:score', value: 3 } },
        ],
      },
      (p: (typeof people)[number]) => p.first === 'Bob' && p.score > 3,
    ],
    [
      {
        $or: [
          { '$str::is': { field_id: 'tags', value: 'zero' } },
          { '$str::starts_with': { field_id: 'str::email', value: 'zed1' } },
        ],
      },
      (p: (typeof people)[number]) => p.score === 0 || lower(p.email).startsWith('zed1'),
    ],
    [{ $has_any_value: { field_id: 'int:cm:score' } }, () => true],
    [{ $has_any_value: { field_id: 'str::postal' } }, () => false],
  ])('filters with %j', async (filter, predicate) => {
    const { ids, meta } = await walk({ filter }, 70);
    const expected = people
      .filter(predicate)
      .map((p) => p.id)
      .sort();
    expect([...ids].sort()).toEqual(expected);
    expect(meta.total_matches).toBe(expected.length);
  });

  it('combines filter and q', async () => {
    const { ids } = await walk(
      { q: 'an', filter: { '$int::is': { field_id: 'int:cm:score', value: 2 } } },
      50,
    );
    expect([...ids].sort()).toEqual(
      expectedMatches('an')
        .filter((p) => p.score === 2)
        .map((p) => p.id)
        .sort(),
    );
  });

  it.each([
    [{ $nope: {} }, /filter: unknown operator "\$nope"/],
    [{ $and: [] }, /filter\.\$and: expected a non-empty array/],
    [{ '$str::is': { field_id: 'str::first' } }, /filter\.\$str::is\.value: expected a string/],
    [{ '$str::is': { field_id: 'str::zzz', value: 'x' } }, /filter\.\$str::is\.field_id/],
  ])('refuses the malformed filter %j', async (filter, message) => {
    const response = await call('/v1/person/get', { key, body: { filter } });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(message);
  });
});

describe('"has any value" and empty values', () => {
  it('matches 0 and the empty string but not null', async () => {
    const entries = await merge(key, {
      people: [
        { fields: { 'str::email': 'zero-empty-1@search.test', 'str::postal': '' } },
        { fields: { 'str::email': 'zero-empty-2@search.test', 'str::postal': '2000' } },
        { fields: { 'str::email': 'zero-empty-3@search.test', 'str::postal': null } },
      ],
    });
    const { ids } = await walk(
      { q: 'zero-empty', filter: { $has_any_value: { field_id: 'str::postal' } } },
      10,
    );
    expect([...ids].sort()).toEqual([entries[0]?.person_id, entries[1]?.person_id].sort());
  });
});
