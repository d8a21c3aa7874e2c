import { describe, expect, it } from '@jest/globals';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { tableName } from '../../shared/resources.js';
import { KEYS, call, stackDb } from './stack.js';
import { activitiesOf, fieldsOf, mergeOne, uniqueEmail } from './people.js';

/**
 * Write safety over HTTP, as a client sees it. This file also runs against the stack whose
 * DynamoDB calls meet conflicts, throttling and stale reads (jest project
 * integration-faults): every answer must be the same there.
 */
const key = KEYS.safety;
const { db } = stackDb();
const PEOPLE = tableName('default', 'people');
const ACTIVITIES = tableName('default', 'activities');

const idempotent = (idempotencyKey: string) => ({ 'idempotency-key': idempotencyKey });
const unique = (label: string) => `${label}-${Date.now().toString(36)}-${Math.random()}`;

describe('Idempotency-Key', () => {
  it('replays the first answer to a repeat and changes nothing', async () => {
    const headers = idempotent(unique('merge'));
    const email = uniqueEmail('idem');
    const body = { people: [{ fields: { 'str::email': email, 'str::first': 'Ida' } }] };
    const first = await call('/v1/person/merge', { key, body, headers });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const [created] = first.body.people as { person_id: string; status: string }[];
    expect(created?.status).toBe('created');

    // Meanwhile the person changes; the repeat must not write Ida back.
    await mergeOne(key, { fields: { 'str::email': email, 'str::first': 'Changed' } });
    const repeat = await call('/v1/person/merge', { key, body, headers });
    expect(repeat.status).toBe(200);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body).toEqual(first.body);
    expect(await fieldsOf(key, created?.person_id ?? '', ['str::first'])).toEqual({
      'str::first': 'Changed',
    });
  });

  it('refuses the key with another body (422) and keeps answering the first with it', async () => {
    const headers = idempotent(unique('other-body'));
    const first = await call('/v1/person/merge', {
      key,
      headers,
      body: { people: [{ fields: { 'str::email': uniqueEmail('one') } }] },
    });
    expect(first.status).toBe(200);
    const other = await call('/v1/person/merge', {
      key,
      headers,
      body: { people: [{ fields: { 'str::email': uniqueEmail('two') } }] },
    });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({
      code: 422,
      error: expect.stringMatching(/^Idempotency-Key: .*different request/) as unknown,
    });
    // The same key on another endpoint is another request too.
    const elsewhere = await call('/v1/person/get', { key, headers, body: { limit: 1 } });
    expect(elsewhere.status).toBe(422);
  });

  it('answers 409 to a repeat while the first is still running', async () => {
    // The first request waits for an activity key another request holds (for six seconds:
    // long enough that a loaded machine still sends the repeat while it waits).
    const activityKey = unique('held');
    await db.send(
      new PutCommand({
        TableName: ACTIVITIES,
        Item: {
          pk: `safety#KEY#${activityKey}`,
          sk: 'KEY',
          key: activityKey,
          status: 'pending',
          token: 'another-request',
          lease_until: Date.now() + 6000,
        },
      }),
    );
    const headers = idempotent(unique('slow'));
    const body = {
      activities: [
        {
          activity_id: 'act:cm:signed-up',
          key: activityKey,
          fields: { 'str::email': uniqueEmail('slow') },
        },
      ],
    };
    const first = call('/v1/activities/create', { key, headers, body });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const concurrent = await call('/v1/activities/create', { key, headers, body });
    expect(concurrent.status).toBe(409);
    expect(concurrent.body.error).toMatch(/^Idempotency-Key: a request with this key is still/);
    // The held key's lease ran out: the first request took it over and recorded the activity.
    const answered = await first;
    expect(answered.status).toBe(200);
    const [entry] = answered.body.activities as { status: string; activity_id: string }[];
    expect(entry?.status).toBe('ingested');
    const repeat = await call('/v1/activities/create', { key, headers, body });
    expect(repeat.body).toEqual(answered.body);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
  });

  it('keeps keys per instance: the same key of another instance is another request', async () => {
    const headers = idempotent(unique('tenant'));
    const body = { people: [{ fields: { 'str::email': uniqueEmail('tenant') } }] };
    const mine = await call('/v1/person/merge', { key, headers, body });
    const theirs = await call('/v1/person/merge', { key: KEYS.cursors, headers, body });
    expect(mine.status).toBe(200);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    const ids = [mine, theirs].map((r) => (r.body.people as { person_id: string }[])[0]?.person_id);
    expect(ids[0]).not.toBe(ids[1]);
  });
});

describe('keyed activities', () => {
  it('records one activity for 20 parallel requests with the same key, and answers all 200', async () => {
    const email = uniqueEmail('parallel');
    const { person_id: personId } = await mergeOne(key, { fields: { 'str::email': email } });
    const activityKey = unique('signup');
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call('/v1/activities/create', {
          key,
          body: {
            activities: [
              {
                activity_id: 'act:cm:signed-up',
                key: activityKey,
                fields: { 'str::email': email, 'str::first': `Attempt ${i}` },
                attributes: { 'str:cm:plan': 'gold' },
              },
            ],
          },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));
    const entries = answers.map(
      (a) => (a.body.activities as { activity_id: string; status: string }[])[0],
    );
    const ids = new Set(entries.map((e) => e?.activity_id));
    expect(ids.size).toBe(1);
    expect(entries.every((e) => e?.status === 'ingested')).toBe(true);
    const timeline = await activitiesOf(key, personId ?? '');
    expect(timeline.filter((a) => a.field_id === 'act:cm:signed-up')).toHaveLength(1);
    // Only the request that recorded the activity merged its person fields.
    const { Item } = await db.send(
      new GetCommand({
        TableName: PEOPLE,
        Key: { pk: `safety#P#${personId ?? ''}`, sk: 'P' },
        ConsistentRead: true,
      }),
    );
    const first = (Item?.fields as Record<string, string>)['str::first'];
    expect(first).toMatch(/^Attempt \d+$/);
  });

  it('applies nothing of an activity whose key was already recorded', async () => {
    const email = uniqueEmail('once');
    const activityKey = unique('once');
    const record = (first: string) =>
      call('/v1/activities/create', {
        key,
        body: {
          activities: [
            {
              activity_id: 'act:cm:signed-up',
              key: activityKey,
              fields: { 'str::email': email, 'str::first': first },
            },
          ],
        },
      });
    const first = await record('Original');
    const retry = await record('Retried');
    expect(retry.body.activities).toEqual(first.body.activities);
    const [entry] = first.body.activities as { person_id: string }[];
    expect(await fieldsOf(key, entry?.person_id ?? '', ['str::first'])).toEqual({
      'str::first': 'Original',
    });
  });
});

describe('cursors', () => {
  // Its own instance: a listing walked to its end and read past it again expects an empty
  // page, which a person another suite creates meanwhile on a shared instance would fill.
  const key = KEYS.cursors;

  async function seedPeople(prefix: string, count: number) {
    const people = Array.from({ length: count }, (_, i) => ({
      fields: { 'str::email': `${prefix}${i}@cursor.test`, 'str::first': `Cur${i}` },
    }));
    const response = await call('/v1/person/merge', { key, body: { people } });
    expect(response.status).toBe(200);
  }

  it('refuses a forged or altered cursor with 400 naming cursor_id', async () => {
    await seedPeople(`zf${Date.now().toString(36)}`, 2);
    const page = await call('/v1/person/get', { key, body: { limit: 1 } });
    const cursor = String(page.body.cursor_id);
    // 24 hexadecimal characters naming the page's state, kept server-side (docs/api.md, "Cursors").
    expect(cursor).toMatch(/^[0-9a-f]{24}$/);
    const flipped = `${cursor.slice(0, -1)}${cursor.endsWith('0') ? '1' : '0'}`;
    // An ID of the right length nobody issued, and signed cursors that do not verify.
    for (const forged of [flipped, 'f'.repeat(24), 'z'.repeat(24), 'k1.e30.AAAA', 'a.b']) {
      const response = await call('/v1/person/get', { key, body: { limit: 1, cursor_id: forged } });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        code: 400,
        error: expect.stringMatching(/^cursor_id: /) as unknown,
        details: [{ field: 'cursor_id', error: 'not a valid cursor' }],
      });
    }
    // Another length: the real API's answer.
    const short = await call('/v1/person/get', {
      key,
      body: { limit: 1, cursor_id: '0069061b5bda4060a576' },
    });
    expect(short.status).toBe(400);
    expect(short.body).toMatchObject({
      error: 'cursor_id: the length must be 12 or 24',
      details: [{ field: 'cursor_id', error: 'the length must be 12 or 24' }],
    });
  });

  it("refuses another instance's cursor", async () => {
    const theirs = await call('/v1/person/get', { key: KEYS.ledger, body: { limit: 1 } });
    const response = await call('/v1/person/get', {
      key,
      body: { limit: 1, cursor_id: theirs.body.cursor_id },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(/^cursor_id: /);
  });

  it('answers a cursor past the end with an empty page, for listings and q searches', async () => {
    const prefix = `zq${Date.now().toString(36)}`;
    await seedPeople(prefix, 3);
    for (const body of [
      { q: prefix, limit: 2 },
      { limit: 100, sort_order: 'asc' },
      { limit: 100, sort_by_field_id: 'str::email', sort_order: 'asc' },
    ]) {
      let page = await call('/v1/person/get', { key, body });
      let seen = (page.body.contacts as unknown[]).length;
      for (let guard = 0; page.body.has_more === true && guard < 100; guard += 1) {
        page = await call('/v1/person/get', {
          key,
          body: { ...body, cursor_id: page.body.cursor_id, offset: page.body.next_offset },
        });
        seen += (page.body.contacts as unknown[]).length;
      }
      if (body.q) expect(seen).toBe(3);
      // Past the end, and past it again.
      for (let again = 0; again < 2; again += 1) {
        page = await call('/v1/person/get', {
          key,
          body: { ...body, cursor_id: page.body.cursor_id, offset: page.body.next_offset },
        });
        expect(page.status).toBe(200);
        expect(page.body.contacts).toEqual([]);
        expect(page.body.has_more).toBe(false);
      }
    }
  });

  it('counts the matches of q once and carries them to later pages', async () => {
    const prefix = `zc${Date.now().toString(36)}`;
    await seedPeople(prefix, 5);
    const first = await call('/v1/person/get', { key, body: { q: prefix, limit: 2 } });
    expect((first.body.meta as Record<string, number>).total_matches).toBe(5);
    // A person added after the first page does not change the count the listing carries.
    await seedPeople(`${prefix}x`, 1);
    const next = await call('/v1/person/get', {
      key,
      body: { q: prefix, limit: 2, cursor_id: first.body.cursor_id, offset: 2 },
    });
    expect((next.body.meta as Record<string, number>).total_matches).toBe(5);
  });
});

describe('record budgets', () => {
  it('refuses tags past 500 with a 400 naming them, and the person stays writable', async () => {
    const email = uniqueEmail('tags');
    const long = (batch: number) =>
      Array.from({ length: 100 }, (_, i) => `${'t'.repeat(200)}-${batch}-${i}`);
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    let batch = 0;
    for (; batch < 10 && !refused; batch += 1) {
      const response = await call('/v1/person/merge', {
        key,
        body: { people: [{ fields: { 'str::email': email }, tags: long(batch) }] },
      });
      if (response.status !== 200) refused = response;
    }
    expect(batch).toBe(6);
    expect(refused?.status).toBe(400);
    expect(refused?.body).toMatchObject({
      code: 400,
      details: [
        {
          index: 0,
          status: 'invalid',
          error: expect.stringMatching(
            /^people\[0\]\.tags: the person would hold 600 tags; at most 500/,
          ) as unknown,
        },
      ],
    });
    const renamed = await mergeOne(key, { fields: { 'str::email': email, 'str::first': 'Still' } });
    expect(renamed.status).toBe('merged');
    const fields = await fieldsOf(key, renamed.person_id ?? '', ['tags', 'str::first']);
    expect((fields.tags as string[]).length).toBe(500);
    expect(fields['str::first']).toBe('Still');
  });

  it('refuses field values past the size budget with a 400, before writing', async () => {
    const email = uniqueEmail('big');
    const huge = '😀'.repeat(65_535);
    const response = await call('/v1/person/merge', {
      key,
      body: {
        people: [{ fields: { 'str::email': email, 'txt:cm:notes': huge, 'txt:cm:bio': huge } }],
      },
    });
    expect(response.status).toBe(400);
    expect((response.body.details as { error: string }[])[0]?.error).toMatch(
      /^people\[0\]: the person's values would take \d+ bytes; at most 307200/,
    );
    const { Items = [] } = await db.send(
      new QueryCommand({
        TableName: PEOPLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `safety#K#str::email#${email}` },
        ConsistentRead: true,
      }),
    );
    expect(Items).toEqual([]);
  });
});

describe('updates too large for field-level expressions', () => {
  it('writes 100 fields at once (past the 4 KB expression limit) under strategy 1', async () => {
    const email = uniqueEmail('wide');
    const created = await mergeOne(KEYS.wide, { fields: { 'str::email': email } });
    const fields: Record<string, string> = { 'str::email': email };
    for (let n = 1; n <= 100; n += 1) fields[`str:cm:field-${n}`] = `value ${n} ${'x'.repeat(20)}`;
    const merged = await mergeOne(KEYS.wide, { fields });
    expect(merged).toEqual({ person_id: created.person_id, status: 'merged' });
    const stored = await fieldsOf(KEYS.wide, created.person_id ?? '', [
      'str:cm:field-1',
      'str:cm:field-100',
    ]);
    expect(stored).toEqual({
      'str:cm:field-1': fields['str:cm:field-1'],
      'str:cm:field-100': fields['str:cm:field-100'],
    });
    // Strategy 1 never overwrites: a second merge changes nothing.
    const again = await mergeOne(KEYS.wide, {
      fields: { ...fields, 'str:cm:field-1': 'other' },
    });
    expect(again.status).toBe('merged');
    expect(
      (await fieldsOf(KEYS.wide, created.person_id ?? '', ['str:cm:field-1']))['str:cm:field-1'],
    ).toBe(fields['str:cm:field-1']);
  });
});
