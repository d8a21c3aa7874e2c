import { beforeAll, describe, expect, it } from '@jest/globals';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tableName } from '../../shared/resources.js';
import { KEYS, call, stackDb } from './stack.js';
import {
  idsEventually,
  listAll,
  listedEventually,
  mergeRepeating,
  type Contact,
} from './people.js';

/**
 * Finding people from the indexes (docs/api.md, Listing): lookups by email, person ID, custom
 * field, tag and organization return exactly the right people, also right after a merge moves
 * the value looked up; other filters page to every match within their budget; sorts by any
 * field and offsets paged in turn work whatever the instance's size.
 */
const key = KEYS.lookup;
const PLANS = ['gold', 'silver', 'bronze'];
const SIZE = 240;

interface Made {
  id: string;
  email: string;
  userId: string;
  plan: string;
  score: number | undefined;
  tags: string[];
}

const people: Made[] = [];
let organization = '';
const run = Date.now().toString(36);

beforeAll(async () => {
  const merged = await call('/v1/organizations/merge', {
    key,
    body: {
      merge_by: ['str:o:name'],
      organizations: [{ fields: { 'str:o:name': `Lookup ${run}` } }],
    },
  });
  organization =
    (merged.body.organizations as { organization_id: string }[])[0]?.organization_id ?? '';
  for (let start = 0; start < SIZE; start += 100) {
    const records = Array.from({ length: Math.min(100, SIZE - start) }, (_, i) => {
      const n = start + i;
      return {
        email: `look${n}-${run}@lookup.test`,
        userId: `U-${run}-${n}`,
        plan: PLANS[n % 3] ?? '',
        score: n % 6 === 0 ? undefined : (n * 13) % 50,
        tags: n % 9 === 0 ? [`vip-${run}`] : [],
      };
    });
    const entries = await mergeRepeating(key, {
      people: records.map((r) => ({
        fields: {
          'str::email': r.email,
          'str:cm:user-id': r.userId,
          'str:cm:plan': r.plan,
          ...(r.score === undefined ? {} : { 'int:cm:score': r.score }),
        },
        tags: r.tags,
      })),
    });
    entries.forEach((entry, i) => {
      const record = records[i];
      if (record) people.push({ id: entry.person_id ?? '', ...record });
    });
  }
  const linked = people.filter((_, n) => n % 10 === 3).map((p) => p.id);
  const added = await call('/v1/organizations/contacts/add', {
    key,
    method: 'PUT',
    body: { organization_id: organization, inclusion_ids: linked },
  });
  expect(added.status).toBe(200);
  // The field index is kept from the people's stream: wait until it holds everyone.
  await idsEventually(
    key,
    { limit: 500, filter: { '$str::is': { field_id: 'idt::o', value: organization } } },
    linked,
  );
  await idsEventually(
    key,
    {
      limit: 500,
      filter: { '$str::starts': { field_id: 'str:cm:user-id', value: `U-${run}` } },
      sort_by_field_id: 'str:cm:user-id',
    },
    people.map((p) => p.id),
  );
});

const newestFirst = (list: Made[]) =>
  [...list].sort((a, b) => (a.id < b.id ? 1 : -1)).map((p) => p.id);
const ids = (contacts: Contact[]) => contacts.map((c) => c.id);

describe('lookups from the indexes', () => {
  it('finds a person by email (any case) from its claim, and by person ID', async () => {
    const person = people[17];
    const byEmail = await listAll(key, {
      limit: 1,
      filter: { '$str::is': { field_id: 'str::email', value: person?.email.toUpperCase() } },
    });
    expect(ids(byEmail)).toEqual([person?.id]);
    const byId = await listAll(key, {
      filter: { '$str::is': { field_id: 'str::person_id', value: person?.id } },
    });
    expect(ids(byId)).toEqual([person?.id]);
    const nobody = await call('/v1/person/get', {
      key,
      body: { filter: { '$str::is': { field_id: 'str::email', value: 'nobody@lookup.test' } } },
    });
    expect(nobody.body).toMatchObject({
      contacts: [],
      has_more: false,
      meta: { total_matches: 0 },
    });
  });

  it.each([
    [
      'a custom field',
      () => ({ '$str::is': { field_id: 'str:cm:user-id', value: people[33]?.userId } }),
      (p: Made) => p.id === people[33]?.id,
    ],
    [
      'a custom field shared by many',
      () => ({ '$str::is': { field_id: 'str:cm:plan', value: 'SILVER' } }),
      (p: Made) => p.plan === 'silver',
    ],
    [
      'a tag',
      () => ({ '$u4s::is': { field_id: 'u4s::t', value: `vip-${run}` } }),
      (p: Made) => p.tags.length > 0,
    ],
    [
      'an organization',
      () => ({ $id_is: { field_id: 'idt::o', value: organization } }),
      (p: Made) => people.indexOf(p) % 10 === 3,
    ],
    [
      'a value and a range',
      () => ({
        $and: [
          { '$str::is': { field_id: 'str:cm:plan', value: 'gold' } },
          { '$int::greater_than': { field_id: 'int:cm:score', value: 25 } },
        ],
      }),
      (p: Made) => p.plan === 'gold' && (p.score ?? 0) > 25,
    ],
    [
      'a range alone, in bounded pages',
      () => ({ '$int::between': { field_id: 'int:cm:score', value: [10, 19] } }),
      (p: Made) => p.score !== undefined && p.score >= 10 && p.score <= 19,
    ],
    [
      'a negation',
      () => ({
        $and: [
          { '$str::starts': { field_id: 'str::email', value: 'look1' } },
          { '$str::is_not': { field_id: 'str:cm:plan', value: 'gold' } },
        ],
      }),
      (p: Made) => p.email.startsWith('look1') && p.plan !== 'gold',
    ],
  ])(
    'lists exactly the people matching %s, each once, newest first',
    async (_name, filter, matches) => {
      const listed = await listAll(key, { limit: 13, filter: filter() });
      const expected = newestFirst(people.filter(matches));
      expect(expected.length).toBeGreaterThan(0);
      // People of other runs of this file may match the shared ones: ours, in order.
      expect(ids(listed).filter((id) => people.some((p) => p.id === id))).toEqual(expected);
    },
  );

  it('finds a person by the new value once a merge moves it, and never by the old one', async () => {
    const person = people[41] as Made;
    const moved = `moved-${run}`;
    const [entry] = await mergeRepeating(key, {
      people: [{ fields: { 'str::email': person.email, 'str:cm:user-id': moved } }],
    });
    expect(entry?.status).toBe('merged');
    // The old value's entry may still be in the index: the person read now no longer holds it.
    const old = await listAll(key, {
      filter: { '$str::is': { field_id: 'str:cm:user-id', value: person.userId } },
    });
    expect(old).toEqual([]);
    const found = await listedEventually(
      key,
      { filter: { '$str::is': { field_id: 'str:cm:user-id', value: moved } } },
      (listed) => listed.length > 0,
    );
    expect(ids(found)).toEqual([person.id]);
    person.userId = moved;
  });

  it('pages a filter no index answers to every match, once', async () => {
    const filter = { '$str::contains': { field_id: 'str::email', value: `7-${run}` } };
    const listed = await listAll(key, { limit: 4, filter });
    expect(ids(listed)).toEqual(newestFirst(people.filter((p) => p.email.includes(`7-${run}`))));
  });
});

describe('sorts and offsets', () => {
  it.each(['asc', 'desc'] as const)(
    'sorts by a custom field (%s) from the field index, people without a value last',
    async (order) => {
      const listed = await listAll(key, {
        limit: 50,
        sort_by_field_id: 'int:cm:score',
        sort_order: order,
        filter: { '$str::starts': { field_id: 'str:cm:user-id', value: `U-${run}` } },
      });
      const direction = order === 'asc' ? 1 : -1;
      const mine = people.filter((p) => p.userId.startsWith(`U-${run}`));
      const valued = mine
        .filter((p) => p.score !== undefined)
        .sort((a, b) =>
          a.score === b.score
            ? direction * (a.id < b.id ? -1 : 1)
            : direction * ((a.score ?? 0) - (b.score ?? 0)),
        );
      const rest = mine
        .filter((p) => p.score === undefined)
        .sort((a, b) => direction * (a.id < b.id ? -1 : 1));
      expect(ids(listed)).toEqual([...valued, ...rest].map((p) => p.id));
    },
  );

  it('pages by offset alone from each next_offset as a cursor does', async () => {
    const body = { limit: 9, filter: { '$str::is': { field_id: 'str:cm:plan', value: 'bronze' } } };
    const byCursor = ids(await listAll(key, body));
    const byOffset: string[] = [];
    let offset = 0;
    for (let page = 0; page < 100; page += 1) {
      const response = await call('/v1/person/get', { key, body: { ...body, offset } });
      expect(response.status).toBe(200);
      byOffset.push(...ids(response.body.contacts as Contact[]));
      if (!response.body.has_more) break;
      offset = response.body.next_offset as number;
    }
    expect(byOffset).toEqual(byCursor);
  });

  it('refuses a jump far past every page it answered with a 400 that names cursor_id', async () => {
    const response = await call('/v1/person/get', {
      key,
      body: { offset: 20_000, filter: { '$str::is': { field_id: 'str:cm:plan', value: 'gold' } } },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(/^offset: .*cursor_id/);
  });
});

describe('at any size', () => {
  it('answers filters, sorts and offsets for an instance of a million people', async () => {
    // The counters say a million: nothing may be refused for the instance's size.
    const { db } = stackDb();
    await db.send(
      new UpdateCommand({
        TableName: tableName('default', 'people'),
        Key: { pk: 'lookup#C', sk: '15' },
        UpdateExpression: 'ADD contacts :n',
        ExpressionAttributeValues: { ':n': 1_000_000 },
      }),
    );
    try {
      for (const body of [
        { filter: { '$str::contains': { field_id: 'str::email', value: 'look' } } },
        { sort_by_field_id: 'int:cm:score' },
        { sort_by_field_id: 'l', sort_order: 'asc' },
        { filter: { $has_any_value: { field_id: 'str:cm:plan' } }, offset: 9_000 },
      ]) {
        const response = await call('/v1/person/get', { key, body: { limit: 5, ...body } });
        expect({ body, status: response.status }).toEqual({ body, status: 200 });
        expect(response.body.meta).toMatchObject({ total_contacts: expect.any(Number) });
      }
    } finally {
      await db.send(
        new UpdateCommand({
          TableName: tableName('default', 'people'),
          Key: { pk: 'lookup#C', sk: '15' },
          UpdateExpression: 'ADD contacts :n',
          ExpressionAttributeValues: { ':n': -1_000_000 },
        }),
      );
    }
  });
});

describe('tags/get at any number of tags', () => {
  it('answers pages in name order, the next one named by X-Next-Cursor, q by its words', async () => {
    const names = Array.from(
      { length: 23 },
      (_, n) => `Page ${run} #${String(n).padStart(2, '0')}`,
    );
    await mergeRepeating(key, {
      people: [{ fields: { 'str::email': `tagged-${run}@lookup.test` }, tags: names }],
    });
    const listed: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page += 1) {
      const response = await call('/v1/tags/get', {
        key,
        body: { q: `page ${run}`, limit: 5, ...(cursor ? { cursor_id: cursor } : {}) },
      });
      expect(response.status).toBe(200);
      const tags = response.body as unknown as { name: string; count: number }[];
      expect(tags.length).toBeLessThanOrEqual(5);
      expect(tags.every((tag) => tag.count === 1)).toBe(true);
      listed.push(...tags.map((tag) => tag.name));
      cursor = response.headers.get('x-next-cursor') ?? undefined;
      if (!cursor) break;
    }
    expect(listed).toEqual(names);
    // Each word of q, in any case and order.
    const words = await call('/v1/tags/get', { key, body: { q: `#17 PAGE ${run}` } });
    expect((words.body as unknown as { name: string }[]).map((tag) => tag.name)).toEqual([
      names[17],
    ]);
    // What real clients send: no body at all, and q alone.
    const everything = await call('/v1/tags/get', { key });
    expect(everything.status).toBe(200);
    const all = (everything.body as unknown as { name: string }[]).map((tag) => tag.name);
    expect(all).toEqual(expect.arrayContaining(names));
    expect([...all].sort()).toEqual(all);
    const forged = await call('/v1/tags/get', { key, body: { cursor_id: 'not-a-cursor' } });
    expect(forged.status).toBe(400);
    expect(forged.body.error).toMatch(/^cursor_id: /);
  });

  it('pages every tag once while merges add tags concurrently, with exact counts at the end', async () => {
    const prefix = `Busy ${run}`;
    const tagOf = (n: number) => `${prefix} #${String(n).padStart(2, '0')}`;
    const pageAll = async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 30; page += 1) {
        const response = await call('/v1/tags/get', {
          key,
          body: { q: prefix, limit: 4, ...(cursor ? { cursor_id: cursor } : {}) },
        });
        expect(response.status).toBe(200);
        seen.push(...(response.body as unknown as { name: string }[]).map((tag) => tag.name));
        cursor = response.headers.get('x-next-cursor') ?? undefined;
        if (!cursor) break;
      }
      return seen;
    };
    // 20 people merged at once, person n holding tags 0..n % 5 and n: counts known.
    const merging = Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        mergeRepeating(key, {
          people: [
            {
              fields: { 'str::email': `busy-${n}-${run}@lookup.test` },
              tags: [...new Set([tagOf(20 + (n % 5)), tagOf(n)])],
            },
          ],
        }),
      ),
    );
    // Paged meanwhile: whatever it sees is in order, each tag once.
    const during = await pageAll();
    expect(new Set(during).size).toBe(during.length);
    expect([...during].sort()).toEqual(during);
    await merging;
    const after = await call('/v1/tags/get', { key, body: { q: prefix } });
    const counts = Object.fromEntries(
      (after.body as unknown as { name: string; count: number }[]).map((tag) => [
        tag.name,
        tag.count,
      ]),
    );
    const expected: Record<string, number> = Object.fromEntries([
      ...Array.from({ length: 20 }, (_, n): [string, number] => [tagOf(n), 1]),
      ...Array.from({ length: 5 }, (_, n): [string, number] => [tagOf(20 + n), 4]),
    ]);
    expect(counts).toEqual(expected);
    expect(await pageAll()).toEqual(Object.keys(expected).sort());
  });
});
