import { describe, expect, it } from '@jest/globals';
import { KEYS, call } from './stack.js';
import { activitiesOf, fieldsOf, merge, meta, mergeOne, uniqueEmail } from './people.js';

const key = KEYS.people;

describe('person merge: create and find', () => {
  it('creates a person, then finds it by email case-insensitively', async () => {
    const email = uniqueEmail('Case');
    const created = await mergeOne(key, { fields: { 'str::email': email, 'str::first': 'Ann' } });
    expect(created).toEqual({
      person_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
      status: 'created',
    });
    const merged = await mergeOne(key, {
      fields: { 'str::email': `  ${email.toUpperCase()} `, 'str::last': 'Lee' },
    });
    expect(merged).toEqual({ person_id: created.person_id, status: 'merged' });
    expect(await fieldsOf(key, created.person_id ?? '', ['str::first', 'str::last'])).toEqual({
      'str::first': 'Ann',
      'str::last': 'Lee',
    });
  });

  it('stores every built-in type and custom fields, and returns them as stored', async () => {
    const email = uniqueEmail();
    const fields = {
      'str::email': email,
      'str::first': 'Zoë',
      'phn::phone': { c: '61', n: '0400 000 000' },
      'geo::city': { name: 'Sydney' },
      'geo::country': { name: 'Australia' },
      'geo::region': { name: 'NSW' },
      'dtz::b': { year: 1990, month: 2, day: 28, timezone: 'Australia/Sydney' },
      'str::postal': '2000',
      'str::ei': `ei-${email}`,
      'bol::gdpr': true,
      'str::language': 'en',
      'str:cm:favourite-colour': 'teal',
      'int:cm:shoe-size': 42,
    };
    const { person_id } = await mergeOne(key, { fields });
    const stored = await fieldsOf(key, person_id ?? '', Object.keys(fields));
    expect(stored).toEqual({ ...fields, 'phn::phone': { c: '61', n: '400000000' } });
  });

  it('requires str::email or str::ei unless merging by ID', async () => {
    const [entry] = await merge(key, {
      people: [{ fields: { 'str::first': 'Nobody' } }, { fields: { 'str::email': uniqueEmail() } }],
    });
    expect(entry).toEqual({
      status: 'invalid',
      error: 'people[0].fields: str::email or str::ei is required',
    });
  });

  it('applies records of one request that share an email in order', async () => {
    const email = uniqueEmail();
    const entries = await merge(key, {
      people: [
        { fields: { 'str::email': email, 'str::first': 'One' } },
        { fields: { 'str::email': email, 'str::first': 'Two' } },
      ],
    });
    expect(entries.map((e) => e.status)).toEqual(['created', 'merged']);
    expect(entries[1]?.person_id).toBe(entries[0]?.person_id);
    expect(await fieldsOf(key, entries[0]?.person_id ?? '', ['str::first'])).toEqual({
      'str::first': 'Two',
    });
  });
});

describe('person merge: strategies', () => {
  async function existing() {
    const email = uniqueEmail('strategy');
    const { person_id } = await mergeOne(key, {
      fields: { 'str::email': email, 'str::first': 'Old', 'str::postal': '1000' },
    });
    return { email, id: person_id ?? '' };
  }

  it('1 (append only) fills empty fields and keeps set ones', async () => {
    const { email, id } = await existing();
    const entry = await mergeOne(
      key,
      {
        fields: {
          'str::email': email,
          'str::first': 'New',
          'str::last': 'Added',
          'str::postal': null,
        },
      },
      { merge_strategy: 1 },
    );
    expect(entry).toEqual({ person_id: id, status: 'merged' });
    expect(await fieldsOf(key, id, ['str::first', 'str::last', 'str::postal'])).toEqual({
      'str::first': 'Old',
      'str::last': 'Added',
      'str::postal': '1000',
    });
  });

  it('2 (overwrite) writes every field sent and clears fields sent as null', async () => {
    const { email, id } = await existing();
    await mergeOne(
      key,
      { fields: { 'str::email': email, 'str::first': 'New', 'str::postal': null } },
      { merge_strategy: 2 },
    );
    expect(await fieldsOf(key, id, ['str::first', 'str::postal'])).toEqual({ 'str::first': 'New' });
  });

  it('2 with clear_fields false keeps that field', async () => {
    const { email, id } = await existing();
    await mergeOne(key, {
      fields: { 'str::email': email, 'str::first': 'New', 'str::postal': '9999' },
      clear_fields: { 'str::first': false },
    });
    expect(await fieldsOf(key, id, ['str::first', 'str::postal'])).toEqual({
      'str::first': 'Old',
      'str::postal': '9999',
    });
  });

  it('3 (ignore) skips an existing person and still creates a missing one', async () => {
    const { email, id } = await existing();
    expect(
      await mergeOne(
        key,
        { fields: { 'str::email': email, 'str::first': 'New' } },
        { merge_strategy: 3 },
      ),
    ).toEqual({
      person_id: id,
      status: 'skipped',
    });
    expect(await fieldsOf(key, id, ['str::first'])).toEqual({ 'str::first': 'Old' });
    const fresh = await mergeOne(
      key,
      { fields: { 'str::email': uniqueEmail() } },
      { merge_strategy: 3 },
    );
    expect(fresh.status).toBe('created');
  });

  it.each([
    [1, true],
    [2, true],
    [3, true],
  ])('(%i, skip_non_existing %s) creates nobody', async (strategy, skip) => {
    const before = await meta(key);
    const entry = await mergeOne(
      key,
      { fields: { 'str::email': uniqueEmail() } },
      { merge_strategy: strategy, skip_non_existing: skip },
    );
    expect(entry).toEqual({ status: 'skipped' });
    expect((await meta(key)).total_contacts).toBeGreaterThanOrEqual(before.total_contacts ?? 0);
  });

  it.each([
    [1, true, 'Old'],
    [2, true, 'New'],
  ])(
    '(%i, skip_non_existing %s) updates an existing person per the strategy',
    async (strategy, skip, first) => {
      const { email, id } = await existing();
      const entry = await mergeOne(
        key,
        { fields: { 'str::email': email, 'str::first': 'New' } },
        { merge_strategy: strategy, skip_non_existing: skip },
      );
      expect(entry).toEqual({ person_id: id, status: 'merged' });
      expect(await fieldsOf(key, id, ['str::first'])).toEqual({ 'str::first': first });
    },
  );

  it('uses the data source merge strategy when the request gives none', async () => {
    const email = uniqueEmail();
    const { person_id } = await mergeOne(KEYS.peopleCareful, {
      fields: { 'str::email': email, 'str::first': 'Kept' },
    });
    await mergeOne(KEYS.peopleCareful, {
      fields: { 'str::email': email, 'str::first': 'Ignored' },
    });
    expect(await fieldsOf(key, person_id ?? '', ['str::first'])).toEqual({ 'str::first': 'Kept' });
  });
});

describe('person merge: find strategies and merge keys', () => {
  it('find_strategy 0 falls through to the second merge field', async () => {
    const email = uniqueEmail();
    const { person_id } = await mergeOne(key, { fields: { 'str::email': email } });
    const ei = `ei-${email}`;
    const entry = await mergeOne(
      KEYS.peopleByEi,
      { fields: { 'str::ei': ei, 'str::email': email } },
      { find_strategy: 0 },
    );
    expect(entry).toEqual({ person_id, status: 'merged' });
    expect(await fieldsOf(key, person_id ?? '', ['str::ei'])).toEqual({ 'str::ei': ei });
  });

  it('find_strategy 1 does not fall through when the first field is given', async () => {
    const email = uniqueEmail();
    await mergeOne(key, { fields: { 'str::email': email } });
    const response = await call('/v1/person/merge', {
      key: KEYS.peopleByEi,
      body: {
        people: [{ fields: { 'str::ei': `other-${email}`, 'str::email': email } }],
        find_strategy: 1,
      },
    });
    // A new person would need the email, which another person holds: the only record is
    // invalid, so the request is a 400.
    expect(response.status).toBe(400);
    const [entry] = response.body.details as { status: string; error: string }[];
    expect(entry?.status).toBe('invalid');
    expect(entry?.error).toMatch(
      /people\[0\]\.fields\.str::email: the value ".*" already belongs to another person/,
    );
  });

  it('find_strategy 1 uses the second field when the first is not given', async () => {
    const email = uniqueEmail();
    const { person_id } = await mergeOne(key, { fields: { 'str::email': email } });
    const entry = await mergeOne(
      KEYS.peopleByEi,
      { fields: { 'str::email': email, 'str::first': 'Via email' } },
      { find_strategy: 1 },
    );
    expect(entry).toEqual({ person_id, status: 'merged' });
  });

  it('merges by person ID', async () => {
    const { person_id } = await mergeOne(key, { fields: { 'str::email': uniqueEmail() } });
    const entry = await mergeOne(
      key,
      { fields: { 'str::person_id': person_id, 'str::first': 'ById' } },
      { merge_by: ['str::person_id'] },
    );
    expect(entry).toEqual({ person_id, status: 'merged' });
    expect(await fieldsOf(key, person_id ?? '', ['str::first'])).toEqual({ 'str::first': 'ById' });
    const unknown = await call('/v1/person/merge', {
      key,
      body: {
        people: [{ fields: { 'str::person_id': 'ffffffffffffffffffffffff' } }],
        merge_by: ['str::person_id'],
      },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details).toEqual([
      {
        index: 0,
        status: 'invalid',
        error: 'people[0].fields.str::person_id: no person has this ID',
      },
    ]);
    const skipped = await mergeOne(
      key,
      { fields: { 'str::person_id': 'ffffffffffffffffffffffff' } },
      { merge_by: ['str::person_id'], skip_non_existing: true },
    );
    expect(skipped).toEqual({ status: 'skipped' });
  });

  it('refuses str::person_id beside another merge field, and fields that cannot be merge keys', async () => {
    const both = await call('/v1/person/merge', {
      key,
      body: {
        merge_by: ['str::person_id', 'str::email'],
        people: [{ fields: { 'str::email': uniqueEmail() } }],
      },
    });
    expect(both.status).toBe(400);
    expect(both.body.error).toMatch(/merge_by/);
    const first = await call('/v1/person/merge', {
      key,
      body: { merge_by: ['str::first'], people: [{ fields: { 'str::email': uniqueEmail() } }] },
    });
    expect(first.status).toBe(400);
    expect(first.body.error).toMatch(/merge_by\[0\]: "str::first" cannot be a merge field/);
  });

  it('moves a key value: the old one is released, a value someone else holds is refused', async () => {
    const [a, b] = [uniqueEmail('a'), uniqueEmail('b')];
    const { person_id: personA } = await mergeOne(key, {
      fields: { 'str::email': a, 'str::ei': `ei-${a}` },
    });
    const { person_id: personB } = await mergeOne(key, { fields: { 'str::email': b } });
    const moved = uniqueEmail('moved');
    expect(
      await mergeOne(KEYS.peopleByEi, { fields: { 'str::ei': `ei-${a}`, 'str::email': moved } }),
    ).toEqual({ person_id: personA, status: 'merged' });
    // The old address is free again: it makes a new person.
    expect((await mergeOne(key, { fields: { 'str::email': a } })).status).toBe('created');
    // The new one finds A.
    expect(await mergeOne(key, { fields: { 'str::email': moved } })).toEqual({
      person_id: personA,
      status: 'merged',
    });
    // B's address cannot move to A.
    const [refused] = await merge(KEYS.peopleByEi, {
      people: [
        { fields: { 'str::ei': `ei-${a}`, 'str::email': b } },
        { fields: { 'str::email': uniqueEmail('beside') } },
      ],
    });
    expect(refused?.status).toBe('invalid');
    expect(refused?.error).toContain(`already belongs to another person (${personB})`);
    expect(await fieldsOf(key, personA ?? '', ['str::email'])).toEqual({ 'str::email': moved });
  });
});

describe('person merge: validation writes nothing', () => {
  it('reports invalid records beside valid ones, naming the field and the problem', async () => {
    const before = await meta(KEYS.ledger);
    const entries = await merge(KEYS.ledger, {
      people: [
        { fields: { 'str::email': uniqueEmail(), 'bol::gdpr': 'yes' } },
        { fields: { 'str::email': uniqueEmail(), 'str:cm:nope': 1 } },
        { fields: { 'str::email': 'not-an-email' } },
        { fields: { 'str::email': uniqueEmail() }, tags: 'vip' },
        { fields: { 'str::email': uniqueEmail() } },
      ],
    });
    expect(entries.slice(0, 4)).toEqual([
      {
        status: 'invalid',
        error: 'people[0].fields.bol::gdpr: expected true or false, got a string',
      },
      {
        status: 'invalid',
        error: 'people[1].fields.str:cm:nope: is not a custom field of this instance',
      },
      { status: 'invalid', error: 'people[2].fields.str::email: expected an email address' },
      {
        status: 'invalid',
        error: expect.stringMatching(/^people\[3\]\.tags: /) as unknown as string,
      },
    ]);
    expect(entries[4]?.status).toBe('created');
    expect((await meta(KEYS.ledger)).total_contacts).toBe((before.total_contacts ?? 0) + 1);
  });

  it('answers 400 with details when every record is invalid', async () => {
    const response = await call('/v1/person/merge', {
      key,
      body: {
        people: [
          { fields: { 'str::first': 'x' } },
          { fields: { 'int:cm:shoe-size': 4.5, 'str::email': uniqueEmail() } },
        ],
      },
    });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([
      { index: 0, status: 'invalid', error: 'people[0].fields: str::email or str::ei is required' },
      {
        index: 1,
        status: 'invalid',
        error: expect.stringMatching(
          /^people\[1\]\.fields\.int:cm:shoe-size: expected a whole number/,
        ) as unknown,
      },
    ]);
  });

  it('answers an invalid time zone with 500 Internal Server Error and writes no record of the request', async () => {
    const email = uniqueEmail('tz');
    const response = await call('/v1/person/merge', {
      key,
      body: {
        people: [
          { fields: { 'str::email': email } },
          {
            fields: {
              'str::email': uniqueEmail(),
              'dtz::b': { year: 2000, month: 1, day: 1, timezone: 'Mars/Olympus_Mons' },
            },
          },
        ],
      },
    });
    expect(response.status).toBe(500);
    expect(response.body).toMatchObject({ code: 500, error: 'Internal Server Error' });
    // The valid record was not written either: the email is still free.
    expect((await mergeOne(key, { fields: { 'str::email': email } })).status).toBe('created');
  });

  it.each([
    [{ people: [] }, /people: expected 1 to 100 people/],
    [
      { people: Array.from({ length: 101 }, () => ({ fields: {} })) },
      /people: expected 1 to 100 people/,
    ],
    [{ people: [{ fields: {} }], merge_strategy: 4 }, /merge_strategy/],
    [{ people: [{ fields: {} }], find_strategy: 3 }, /find_strategy/],
  ])('refuses a malformed request %#', async (body, message) => {
    const response = await call('/v1/person/merge', { key, body });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(message);
  });
});

describe('person merge: tags', () => {
  it('applies tags on create and update, removes unset ones, ignores unsetting absent ones', async () => {
    const email = uniqueEmail();
    const { person_id } = await mergeOne(key, {
      fields: { 'str::email': email },
      tags: ['vip', 'beta'],
    });
    const id = person_id ?? '';
    expect(await fieldsOf(key, id, ['tags'])).toEqual({ tags: ['beta', 'vip'] });
    await mergeOne(key, {
      fields: { 'str::email': email },
      tags: ['gold'],
      unset_tags: ['beta', 'never-had'],
    });
    expect(await fieldsOf(key, id, ['tags'])).toEqual({ tags: ['gold', 'vip'] });
    // Strategy 1 applies tags too.
    await mergeOne(key, { fields: { 'str::email': email }, tags: ['late'] }, { merge_strategy: 1 });
    expect(await fieldsOf(key, id, ['tags'])).toEqual({ tags: ['gold', 'late', 'vip'] });
  });
});

describe('person merge: subscription permissions', () => {
  it('subscribes a new person to email by default and records it with the default context', async () => {
    const { person_id } = await mergeOne(key, { fields: { 'str::email': uniqueEmail() } });
    const id = person_id ?? '';
    expect(await fieldsOf(key, id, ['bol::p', 'bol::sp'])).toEqual({
      'bol::p': true,
      'bol::sp': false,
    });
    const activities = await activitiesOf(key, id);
    expect(activities.map(({ field_id, attr }) => ({ field_id, attr }))).toEqual([
      { field_id: 'act::s-all', attr: { 'str::s-ctx': 'Subscribed via API' } },
    ]);
  });

  it('records every actual change with its context message, and no repeats', async () => {
    const email = uniqueEmail();
    const { person_id } = await mergeOne(key, {
      fields: {
        'str::email': email,
        'bol::p': false,
        'str::u-ctx': 'Asked by phone',
        'bol::sp': true,
      },
    });
    const id = person_id ?? '';
    await mergeOne(key, { fields: { 'str::email': email, 'bol::p': false, 'bol::sp': true } });
    await mergeOne(key, {
      fields: { 'str::email': email, 'bol::p': true, 'str::s-ctx': 'Came back' },
    });
    await mergeOne(key, { fields: { 'str::email': email, 'bol::sp': false } });
    await mergeOne(key, {
      fields: { 'str::email': email, 'bol::sp': true, 'str::soi-ctx': 'Texted YES' },
    });
    await mergeOne(key, {
      fields: { 'str::email': email, 'bol::sp': false, 'str::soo-ctx': 'Texted STOP' },
    });
    const activities = (await activitiesOf(key, id)).reverse();
    expect(activities.map(({ field_id, attr }) => ({ field_id, attr }))).toEqual([
      { field_id: 'act::u-all', attr: { 'str::u-ctx': 'Asked by phone' } },
      { field_id: 'act::ois-all', attr: { 'str::soi-ctx': 'Subscribed via API' } },
      { field_id: 'act::s-all', attr: { 'str::s-ctx': 'Came back' } },
      { field_id: 'act::oos-all', attr: { 'str::soo-ctx': 'Unsubscribed via API' } },
      { field_id: 'act::ois-all', attr: { 'str::soi-ctx': 'Texted YES' } },
      { field_id: 'act::oos-all', attr: { 'str::soo-ctx': 'Texted STOP' } },
    ]);
    expect(await fieldsOf(key, id, ['bol::p', 'bol::sp'])).toEqual({
      'bol::p': true,
      'bol::sp': false,
    });
  });

  it('refuses to clear a permission', async () => {
    const response = await call('/v1/person/merge', {
      key,
      body: { people: [{ fields: { 'str::email': uniqueEmail(), 'bol::p': null } }] },
    });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([
      {
        index: 0,
        status: 'invalid',
        error: 'people[0].fields.bol::p: cannot be cleared; send true or false',
      },
    ]);
  });
});

describe('person merge: counters and concurrency', () => {
  it('keeps total_contacts and total_subscribers right through creates, updates and unsubscribes', async () => {
    const before = await meta(KEYS.ledger);
    const [a, b, c] = [uniqueEmail(), uniqueEmail(), uniqueEmail()];
    await merge(KEYS.ledger, {
      people: [
        { fields: { 'str::email': a } },
        { fields: { 'str::email': b, 'bol::p': false } },
        { fields: { 'str::email': c } },
      ],
    });
    await mergeOne(KEYS.ledger, { fields: { 'str::email': a, 'bol::p': false } });
    await mergeOne(KEYS.ledger, { fields: { 'str::email': b, 'bol::p': true } });
    await mergeOne(KEYS.ledger, { fields: { 'str::email': c, 'str::first': 'Same permission' } });
    const after = await meta(KEYS.ledger);
    expect(after.total_contacts).toBe((before.total_contacts ?? 0) + 3);
    expect(after.total_subscribers).toBe((before.total_subscribers ?? 0) + 2);
    expect(after.total_matches).toBe(after.total_contacts);
  });

  it('makes one person of 50 simultaneous merges introducing the same email', async () => {
    const email = uniqueEmail('race');
    const before = await meta(KEYS.race);
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call('/v1/person/merge', {
          key: KEYS.race,
          body: {
            people: [{ fields: { 'str::email': email, 'str::first': `R${i}` }, tags: [`t${i}`] }],
          },
        }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 50 }, () => 200));
    const entries = responses.map(
      (r) => (r.body.people as { person_id: string; status: string }[])[0],
    );
    expect(entries.filter((e) => e?.status === 'created')).toHaveLength(1);
    expect(entries.filter((e) => e?.status === 'merged')).toHaveLength(49);
    expect(new Set(entries.map((e) => e?.person_id)).size).toBe(1);
    expect((await meta(KEYS.race)).total_contacts).toBe((before.total_contacts ?? 0) + 1);
    // No update was lost: every request's tag is on the person.
    const tags = (await fieldsOf(KEYS.race, entries[0]?.person_id ?? '', ['tags']))
      .tags as string[];
    expect(tags).toHaveLength(50);
  });

  it('merges 100 people in one request', async () => {
    const people = Array.from({ length: 100 }, (_, i) => ({
      fields: { 'str::email': uniqueEmail(`bulk${i}`), 'int:cm:shoe-size': i },
    }));
    const entries = await merge(key, { people });
    expect(entries.filter((e) => e.status === 'created')).toHaveLength(100);
    const again = await merge(key, { people });
    expect(again.map((e) => e.person_id)).toEqual(entries.map((e) => e.person_id));
    expect(again.every((e) => e.status === 'merged')).toBe(true);
  });

  it('answers async requests in the queued shape', async () => {
    const response = await call('/v1/person/merge', {
      key,
      body: { async: true, people: [{ fields: { 'str::email': uniqueEmail() } }] },
    });
    expect(response.body).toEqual({
      people: [{ status: 'queued' }],
      request_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
    });
  });
});
