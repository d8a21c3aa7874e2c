import { describe, expect, it } from '@jest/globals';
import { issuedCursors, memoryCursorStore } from '../../../shared/domain/cursor.js';
import { ValidationError } from '../../../shared/domain/errors.js';
import { newId } from '../../../shared/domain/ids.js';
import {
  entryChanges,
  indexedNumber,
  indexEntriesOf,
} from '../../../shared/domain/people/field-index.js';
import { planListing, type PlanContext } from '../../../shared/domain/people/listing-plan.js';
import {
  getPeople,
  MAX_CANDIDATES,
  PersonGetRequest,
} from '../../../shared/domain/people/person-get.js';
import type { Person } from '../../../shared/domain/people/person.js';
import { singleKeyring } from '../../../shared/domain/signing-keys.js';
import { testTenant } from '../fixtures.js';
import { MemoryCheckpoints, MemoryListing } from './memory-listing.js';

const tenant = testTenant({
  person_fields: [
    { id: 'int:cm:score', name: 'Score' },
    { id: 'str:cm:plan', name: 'Plan' },
  ],
});
const cursors = issuedCursors(
  singleKeyring('secret'),
  tenant.instance.id,
  'person/get',
  memoryCursorStore(),
);
const PLANS = ['gold', 'silver', 'bronze'];
const ORGANIZATION = 'a0a0a0a0a0a0a0a0a0a0a0a0';

function makePerson(n: number): Person {
  const at = new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString();
  return {
    id: newId(Date.UTC(2026, 0, 1) + n),
    fields: {
      'str::email': `p${n}@list.test`,
      'str::first': ['Ann', 'Bob', 'Cid'][n % 3] ?? '',
      'str::last': `L${n}`,
      'bol::p': n % 2 === 0,
      'str:cm:plan': PLANS[n % 3] ?? '',
      ...(n % 5 === 0 ? {} : { 'int:cm:score': ((n * 37) % 101) - 50 }),
      ...(n % 4 === 0 ? { 'tme::last-seen': at } : {}),
    },
    tags: n % 7 === 0 ? ['VIP', 'early'] : [],
    ...(n % 10 === 3 ? { organization_id: ORGANIZATION } : {}),
    created_at: at,
    updated_at: at,
  };
}

function population(size: number): MemoryListing {
  const listing = new MemoryListing();
  listing.add(...Array.from({ length: size }, (_, n) => makePerson(n)));
  return listing;
}

type Page = Awaited<ReturnType<typeof getPeople>>;

async function ask(
  listing: MemoryListing,
  body: Record<string, unknown>,
  checkpoints?: MemoryCheckpoints,
) {
  return getPeople(
    PersonGetRequest.parse(body),
    tenant,
    { listing, fields: listing, ...(checkpoints ? { checkpoints } : {}) },
    cursors,
  );
}

/** Every page of a listing by its cursors: the IDs in order, and the last page. */
async function walk(listing: MemoryListing, body: Record<string, unknown>) {
  const ids: string[] = [];
  let page: Page = await ask(listing, body);
  ids.push(...page.contacts.map((c) => c.id));
  for (let n = 0; page.has_more; n += 1) {
    if (n > 500) throw new Error('too many pages');
    page = await ask(listing, { ...body, cursor_id: page.cursor_id });
    ids.push(...page.contacts.map((c) => c.id));
  }
  return { ids, last: page };
}

const lastName = (p: Person) => p.fields['str::last'] as string;

const byId = (order: 'asc' | 'desc') => (a: Person, b: Person) =>
  order === 'asc' ? (a.id < b.id ? -1 : 1) : a.id < b.id ? 1 : -1;

describe('the field index', () => {
  it('encodes whole numbers so that their text sorts as they do', () => {
    const numbers = [2 ** 40, -7, 0, -(2 ** 45), 3, 10, -1, 1_700_000_000_000];
    const encoded = numbers.map(indexedNumber);
    expect([...encoded].sort()).toEqual([...numbers].sort((a, b) => a - b).map(indexedNumber));
  });

  it('indexes every stored value, tags without case, the organization; nothing of the archived', () => {
    const person = makePerson(3);
    const entries = indexEntriesOf({ ...person, tags: ['VIP', 'vip', 'Early'] });
    expect(entries).toEqual(
      expect.arrayContaining([
        { field: 'str::email', value: 'p3@list.test' },
        { field: 'bol::p', value: '0' },
        { field: 'int:cm:score', value: indexedNumber(-40) },
        { field: 'u4s::t', value: 'vip' },
        { field: 'u4s::t', value: 'early' },
        { field: 'idt::o', value: ORGANIZATION },
      ]),
    );
    expect(entries.filter((entry) => entry.field === 'u4s::t')).toHaveLength(2);
    expect(indexEntriesOf({ ...person, archived_at: person.created_at })).toEqual([]);
  });

  it('moves only the entries of values that changed', () => {
    const before = makePerson(1);
    const after = { ...before, fields: { ...before.fields, 'str:cm:plan': 'gold' } };
    expect(entryChanges(before, after)).toEqual({
      removed: [{ field: 'str:cm:plan', value: 'silver' }],
      added: [{ field: 'str:cm:plan', value: 'gold' }],
    });
    expect(entryChanges(after, after)).toEqual({ removed: [], added: [] });
  });
});

describe('planning a listing', () => {
  const context: PlanContext = {
    fieldType: (id) => (tenant.personFields.get(id)?.stored ? id.slice(0, 3) : undefined),
    tagName: (idOrName) => (typeof idOrName === 'number' ? `tag-${idOrName}` : idOrName),
    now: Date.UTC(2026, 5, 1),
  };
  const sourceOf = (filter: unknown, sort?: { field: string }) =>
    planListing({ filter, sort }, context).phases.map(({ source, lacking }) => ({
      kind: source.kind,
      ...(source.kind === 'field' ? { field: source.range.field } : {}),
      ...(lacking ? { lacking } : {}),
    }));
  const is = (field_id: string, value: unknown) => ({ '$str::is': { field_id, value } });

  it.each([
    ['an email, from its claim', is('str::email', 'A@B.test'), [{ kind: 'people' }]],
    ['a person ID, read by key', is('str::person_id', 'A'.repeat(24)), [{ kind: 'people' }]],
    [
      'several emails of an $or, from their claims',
      { $or: [is('str::email', 'a@b.test'), is('str::email', 'c@d.test')] },
      [{ kind: 'people' }],
    ],
    [
      'the most selective equal value of an $and',
      {
        $and: [
          { '$bol::is': { field_id: 'bol::p', value: true } },
          { '$u4s::is': { field_id: 'u4s::t', value: 4 } },
          is('str:cm:plan', 'gold'),
        ],
      },
      [{ kind: 'field', field: 'str:cm:plan' }],
    ],
    [
      'an organization before a value',
      {
        $and: [is('str:cm:plan', 'gold'), { $id_is: { field_id: 'idt::o', value: ORGANIZATION } }],
      },
      [{ kind: 'field', field: 'idt::o' }],
    ],
    [
      'a tag',
      { '$u4s::is': { field_id: 'u4s::t', value: 'vip' } },
      [{ kind: 'field', field: 'u4s::t' }],
    ],
    [
      'a range, in creation order: the listing index',
      { '$int::greater_than': { field_id: 'int:cm:score', value: 3 } },
      [{ kind: 'index' }],
    ],
    [
      'an $or: the listing index',
      { $or: [is('str:cm:plan', 'a'), is('str:cm:plan', 'b')] },
      [{ kind: 'index' }],
    ],
  ])('finds %s', (_name, filter, expected) => {
    expect(sourceOf(filter)).toEqual(expected);
  });

  it('sorts by a field from its entries, then everyone without a value', () => {
    expect(sourceOf(undefined, { field: 'int:cm:score' })).toEqual([
      { kind: 'field', field: 'int:cm:score' },
      { kind: 'index', lacking: 'int:cm:score' },
    ]);
    // A range of the sort field: only its range (people without a value do not match it).
    expect(
      sourceOf(
        { '$int::between': { field_id: 'int:cm:score', value: [0, 9] } },
        {
          field: 'int:cm:score',
        },
      ),
    ).toEqual([{ kind: 'field', field: 'int:cm:score' }]);
    expect(sourceOf(undefined, { field: 'l' })).toEqual([
      { kind: 'field', field: 'tme::last-seen' },
      { kind: 'index', lacking: 'tme::last-seen' },
    ]);
  });
});

describe('person/get from the indexes', () => {
  const listing = population(600);
  const everyone = [...listing.people.values()];
  const score = (p: Person) => p.fields['int:cm:score'] as number | undefined;

  it.each([
    [
      'an email',
      { '$str::is': { field_id: 'str::email', value: 'P42@list.test' } },
      (p: Person) => p.fields['str::email'] === 'p42@list.test',
    ],
    [
      'a person ID',
      { '$str::is': { field_id: 'str::person_id', value: everyone[9]?.id } },
      (p: Person) => p.id === everyone[9]?.id,
    ],
    [
      'a custom field',
      { '$str::is': { field_id: 'str:cm:plan', value: 'GOLD' } },
      (p: Person) => p.fields['str:cm:plan'] === 'gold',
    ],
    [
      'a tag',
      { '$u4s::is': { field_id: 'u4s::t', value: 'vip' } },
      (p: Person) => p.tags.includes('VIP'),
    ],
    [
      'an organization',
      { $id_is: { field_id: 'idt::o', value: ORGANIZATION } },
      (p: Person) => p.organization_id === ORGANIZATION,
    ],
    [
      'a value and a range',
      {
        $and: [
          { '$str::is': { field_id: 'str:cm:plan', value: 'silver' } },
          { '$int::less_than': { field_id: 'int:cm:score', value: 0 } },
        ],
      },
      (p: Person) => p.fields['str:cm:plan'] === 'silver' && (score(p) ?? 0) < 0,
    ],
    [
      'a range alone (bounded reads of the listing index)',
      { '$int::between': { field_id: 'int:cm:score', value: [10, 20] } },
      (p: Person) => (score(p) ?? -99) >= 10 && (score(p) ?? -99) <= 20,
    ],
    [
      'an $or',
      {
        $or: [
          { '$u4s::is': { field_id: 'u4s::t', value: 'early' } },
          { '$str::starts': { field_id: 'str::last', value: 'l59' } },
        ],
      },
      (p: Person) => p.tags.includes('early') || lastName(p).startsWith('L59'),
    ],
  ])('lists every person matching %s once, newest first', async (_name, filter, matches) => {
    const { ids, last } = await walk(listing, { limit: 17, filter });
    const expected = everyone
      .filter(matches)
      .sort(byId('desc'))
      .map((p) => p.id);
    expect(expected.length).toBeGreaterThan(0);
    expect(ids).toEqual(expected);
    expect(last.meta.total_matches).toBe(expected.length);
  });

  it.each(['asc', 'desc'] as const)(
    'sorts the people an $or of emails names by a field (%s), those without a value last',
    async (order) => {
      const named = [0, 1, 2, 5, 10].map((n) => everyone[n]).filter((p) => p !== undefined);
      const { ids, last } = await walk(listing, {
        limit: 2,
        sort_by_field_id: 'int:cm:score',
        sort_order: order,
        filter: {
          $or: named.map((p) => ({
            '$str::is': { field_id: 'str::email', value: p.fields['str::email'] },
          })),
        },
      });
      const valued = named
        .filter((p) => score(p) !== undefined)
        .sort((a, b) => ((score(a) ?? 0) - (score(b) ?? 0)) * (order === 'asc' ? 1 : -1));
      const rest = named.filter((p) => score(p) === undefined).sort(byId(order));
      expect(ids).toEqual([...valued, ...rest].map((p) => p.id));
      expect(last.meta.total_matches).toBe(5);
    },
  );

  it.each(['asc', 'desc'] as const)(
    'sorts by a custom field (%s), then lists the people without a value',
    async (order) => {
      const { ids } = await walk(listing, {
        limit: 50,
        sort_by_field_id: 'int:cm:score',
        sort_order: order,
      });
      const valued = everyone
        .filter((p) => score(p) !== undefined)
        .sort((a, b) =>
          score(a) === score(b)
            ? byId(order)(a, b)
            : ((score(a) ?? 0) - (score(b) ?? 0)) * (order === 'asc' ? 1 : -1),
        );
      const rest = everyone.filter((p) => score(p) === undefined).sort(byId(order));
      expect(ids).toEqual([...valued, ...rest].map((p) => p.id));
    },
  );

  it('lists nobody for an entry the person no longer holds (the index behind a change)', async () => {
    const stale = new MemoryListing();
    const person = makePerson(0);
    stale.add(person);
    stale.people.set(person.id, {
      ...person,
      fields: { ...person.fields, 'str:cm:plan': 'silver' },
    });
    const page = await ask(stale, {
      filter: { '$str::is': { field_id: 'str:cm:plan', value: 'gold' } },
    });
    expect(page.contacts).toEqual([]);
    expect(page.has_more).toBe(false);
  });
});

describe('a filter no index answers, at any size', () => {
  const listing = population(4_000);
  const rare = { '$int::is_not': { field_id: 'int:cm:score', value: 999 } };
  const selective = {
    $and: [rare, { '$str::ends': { field_id: 'str::last', value: '77' } }],
  };

  it('examines at most its budget a request, and pages to every match', async () => {
    listing.reads.people = 0;
    const first = await ask(listing, { limit: 50, filter: selective });
    expect(listing.reads.people).toBeLessThanOrEqual(MAX_CANDIDATES);
    expect(first.has_more).toBe(true);
    expect(first.contacts.length).toBeLessThan(50);
    const { ids } = await walk(listing, { limit: 50, filter: selective });
    const expected = [...listing.people.values()]
      .filter((p) => score(p) !== undefined && lastName(p).endsWith('77'))
      .sort(byId('desc'))
      .map((p) => p.id);
    expect(ids).toEqual(expected);
  });

  function score(p: Person) {
    return p.fields['int:cm:score'];
  }
});

describe('offsets', () => {
  const listing = population(12_000);

  it('continues where the previous page ended, at the cost of a cursor page, at any depth', async () => {
    const checkpoints = new MemoryCheckpoints();
    const filter = { '$bol::is': { field_id: 'bol::p', value: true } };
    const byOffset: string[] = [];
    const keysRead: number[] = [];
    let offset = 0;
    for (let n = 0; n < 130; n += 1) {
      listing.reads.keys = 0;
      const page = await ask(listing, { limit: 40, offset, filter }, checkpoints);
      keysRead.push(listing.reads.keys);
      byOffset.push(...page.contacts.map((c) => c.id));
      offset = page.next_offset;
      if (!page.has_more) break;
    }
    const { ids } = await walk(listing, { limit: 40, filter });
    expect(byOffset).toEqual(ids.slice(0, byOffset.length));
    expect(byOffset.length).toBe(130 * 40);
    // Page 120 reads what page 2 did.
    expect(keysRead[119]).toBe(keysRead[1]);
  });

  it('refuses a jump far past every known position, naming cursor_id', async () => {
    await expect(ask(listing, { offset: 11_000 }, new MemoryCheckpoints())).rejects.toThrow(
      ValidationError,
    );
    await expect(ask(listing, { offset: 11_000 }, new MemoryCheckpoints())).rejects.toThrow(
      /cursor_id/,
    );
    const near = await ask(listing, { offset: 9_990, limit: 5 }, new MemoryCheckpoints());
    expect(near.contacts).toHaveLength(5);
  });
});

describe('the review’s cases', () => {
  it('saves where a budget spent skipping to an offset got to, so a retry reaches it', async () => {
    const listing = population(20_000);
    const checkpoints = new MemoryCheckpoints();
    // One person in 50 matches: 300 matches lie beyond the first request's budget.
    const filter = { '$str::ends': { field_id: 'str::last', value: '7' } };
    const rare = { $and: [filter, { '$str::is': { field_id: 'str:cm:plan', value: 'gold' } }] };
    const { ids } = await walk(listing, { limit: 10, filter: rare });
    const wanted = ids.slice(300, 310);
    expect(wanted).toHaveLength(10);
    let page = await ask(listing, { limit: 10, offset: 300, filter: rare }, checkpoints);
    for (let n = 0; n < 20 && page.contacts.length === 0 && page.has_more; n += 1) {
      expect(page.next_offset).toBe(300);
      page = await ask(listing, { limit: 10, offset: 300, filter: rare }, checkpoints);
    }
    expect(page.contacts.map((c) => c.id)).toEqual(wanted);
  });

  it('sorts by the organization once each, people without one last', async () => {
    const listing = population(60);
    const { ids } = await walk(listing, { limit: 7, sort_by_field_id: 'idt::o' });
    expect(ids).toHaveLength(60);
    expect(new Set(ids).size).toBe(60);
    const members = [...listing.people.values()].filter((p) => p.organization_id);
    expect(new Set(ids.slice(0, members.length))).toEqual(new Set(members.map((p) => p.id)));
  });
});
