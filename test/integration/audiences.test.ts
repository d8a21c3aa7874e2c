import { describe, expect, it, jest } from '@jest/globals';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoAudienceStore } from '../../shared/adapters/audience-store.js';
import { tableName } from '../../shared/resources.js';
import { KEYS, WORKER_PATIENCE_MS, WORKER_TEST_TIMEOUT_MS, call, stackDb } from './stack.js';
import { activitiesOf, merge, mergeOne, uniqueEmail } from './people.js';

/**
 * Audiences end to end on the local stack: the API, the people table's stream fed to the
 * audience worker by the local stream poller, builds on the audience-jobs queue.
 */
const key = KEYS.audiences;
// Builds and the stream take seconds alone, minutes on a machine under heavy load.
jest.setTimeout(WORKER_TEST_TIMEOUT_MS);

interface Entry {
  id: string;
  name: string;
  building: boolean;
  ready: boolean;
  members: number;
  subscribers: number;
  sms_opted_in: number;
  filter: unknown;
  archived_at?: string;
  build_progress: { queued: number; evaluated: number; done_shards: number };
}

async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = Math.max(120_000, WORKER_PATIENCE_MS),
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(`not reached in ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The instance's audiences count and definitions version (the audience worker's check). */
const catalog = () =>
  new DynamoAudienceStore(stackDb().db, {
    config: tableName('default', 'config'),
    audiences: tableName('default', 'audiences'),
  }).catalog('audiences');

let counter = 0;
const uniqueName = (label: string) => `${label} ${Date.now().toString(36)}-${(counter += 1)}`;

async function create(body: Record<string, unknown>, apiKey = key): Promise<Entry> {
  const response = await call('/v1/audiences/create', { key: apiKey, body });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 200 });
  return response.body as unknown as Entry;
}

async function audience(id: string, apiKey = key): Promise<Entry | undefined> {
  for (const archived of [false, true]) {
    const response = await call('/v1/audiences/get', {
      key: apiKey,
      body: { archived, with_filter: true },
    });
    expect(response.status).toBe(200);
    const found = (response.body as unknown as Entry[]).find((entry) => entry.id === id);
    if (found) return found;
  }
  return undefined;
}

const built = (id: string) =>
  until(
    () => audience(id),
    (entry) => entry?.building === false,
  );

async function subscriptionsOf(personId: string) {
  const response = await call('/v1/person/subscriptions', {
    key,
    body: { people: [{ person_id: personId }] },
  });
  expect(response.status).toBe(200);
  const [entry] = response.body.people as {
    person_id: string;
    subscriptions: {
      audience_id: string;
      audience_name: string;
      member_from: string;
      subscribed: boolean;
      sms_opted_in: boolean;
    }[];
  }[];
  return entry?.subscriptions ?? [];
}

const memberOf = async (personId: string, audienceId: string) =>
  (await subscriptionsOf(personId)).some((entry) => entry.audience_id === audienceId);

/** A plan no other test's people have: each test's audiences see only its own people. */
const planFilter = (plan: string) => ({
  $and: [{ '$str::is': { field_id: 'str:cm:plan', value: plan } }],
});

describe('audiences', () => {
  it('creates an audience in the shape of an audiences/get entry, builds it over existing people, and lists it', async () => {
    const plan = uniqueName('gold');
    const before = await merge(key, {
      people: Array.from({ length: 5 }, (_, i) => ({
        fields: { 'str::email': uniqueEmail(`gold${i}`), 'str:cm:plan': plan },
      })),
    });
    await mergeOne(key, { fields: { 'str::email': uniqueEmail('silver'), 'str:cm:plan': 'x' } });
    const name = uniqueName('Gold customers');
    const created = await create({ name, filter: planFilter(plan), is_public: true });
    expect(created).toMatchObject({
      name,
      type: 'permanent',
      building: true,
      ready: false,
      members: 0,
      filter: planFilter(plan),
      is_public: true,
    });
    expect(created.id).toMatch(/^[0-9a-f]{24}$/);

    const done = await built(created.id);
    expect(done).toMatchObject({ members: 5, subscribers: 5, ready: true, building: false });
    for (const entry of before) {
      expect(await memberOf(entry.person_id ?? '', created.id)).toBe(true);
    }
    const activities = await activitiesOf(key, before[0]?.person_id ?? '');
    expect(activities).toContainEqual(
      expect.objectContaining({
        field_id: 'act::enter-audience',
        attr: expect.objectContaining({ 'idt::a': created.id, 'str::name': name }),
      }),
    );

    // person/get pages the members from the members index, with a cursor.
    const listed: string[] = [];
    let body: Record<string, unknown> = { audience_id: created.id, limit: 2 };
    for (let round = 0; round < 5; round += 1) {
      const page = await call('/v1/person/get', { key, body });
      expect(page.status).toBe(200);
      expect(page.body.meta).toMatchObject({ total_matches: 5 });
      listed.push(...(page.body.contacts as { id: string }[]).map((contact) => contact.id));
      if (!page.body.has_more) break;
      body = { audience_id: created.id, limit: 2, cursor_id: page.body.cursor_id };
    }
    expect(listed).toEqual(before.map((entry) => entry.person_id).reverse());
    const unknown = await call('/v1/person/get', {
      key,
      body: { audience_id: 'f'.repeat(24) },
    });
    expect(unknown.status).toBe(404);
    // With q or a filter, the members are the candidates they are checked on.
    const combined = await call('/v1/person/get', {
      key,
      body: { audience_id: created.id, q: 'gold1' },
    });
    expect(combined.status).toBe(200);
    expect((combined.body.contacts as { id: string }[]).map((c) => c.id)).toEqual([
      before[1]?.person_id,
    ]);
    const outsider = await call('/v1/person/get', {
      key,
      body: {
        audience_id: created.id,
        filter: { '$str::is': { field_id: 'str:cm:plan', value: 'x' } },
      },
    });
    expect(outsider.body).toMatchObject({ contacts: [], has_more: false });
    const sorted = await call('/v1/person/get', {
      key,
      body: { audience_id: created.id, sort_by_field_id: 'str::email' },
    });
    expect(sorted.status).toBe(400);
    expect(sorted.body.error).toContain('sort_by_field_id: cannot be combined with audience_id');

    const searched = await call('/v1/audiences/get', { key, body: { search_term: name } });
    expect(searched.body).toEqual([expect.objectContaining({ id: created.id, filter: null })]);
  });

  it('lets people in and out as merges, tags and activities change them', async () => {
    const plan = uniqueName('pro');
    const tag = uniqueName('vip');
    const byPlan = await create({ name: uniqueName('Pro'), filter: planFilter(plan) });
    const byTag = await create({
      name: uniqueName('VIP'),
      filter: { $and: [{ '$u4s::is': { field_id: 'u4s::t', value: tag } }] },
    });
    await built(byPlan.id);
    await built(byTag.id);

    const email = uniqueEmail('mover');
    const person = await mergeOne(key, { fields: { 'str::email': email, 'str:cm:plan': plan } });
    const id = person.person_id ?? '';
    await until(
      () => memberOf(id, byPlan.id),
      (member) => member,
    );

    await mergeOne(key, { fields: { 'str::email': email }, tags: [tag] });
    await until(
      () => memberOf(id, byTag.id),
      (member) => member,
    );
    // The same tag by its ID (as the recorded filters name tags): the build finds the person.
    const tags = await call('/v1/tags/get', { key, body: { q: tag } });
    const [{ id: tagId } = { id: 0 }] = tags.body as unknown as { id: number }[];
    expect(tagId).toBeGreaterThan(0);
    const byTagId = await create({
      name: uniqueName('VIP by ID'),
      filter: { $and: [{ '$u4s::is': { field_id: 'u4s::t', value: tagId } }] },
    });
    await built(byTagId.id);
    expect(await memberOf(id, byTagId.id)).toBe(true);

    // An activity mapped to the plan field moves the person out of the plan's audience.
    const activity = await call('/v1/activities/create', {
      key,
      body: {
        activities: [
          {
            activity_id: 'act:cm:upgraded',
            attributes: { 'str:cm:to': 'platinum' },
            fields: { 'str::email': email },
          },
        ],
      },
    });
    expect(activity.status).toBe(200);
    await until(
      () => memberOf(id, byPlan.id),
      (member) => !member,
    );
    await mergeOne(key, { fields: { 'str::email': email }, unset_tags: [tag] });
    await until(
      () => memberOf(id, byTag.id),
      (member) => !member,
    );
    await until(
      () => memberOf(id, byTagId.id),
      (member) => !member,
    );
    const fieldIds = (await activitiesOf(key, id)).map((entry) => entry.field_id);
    expect(fieldIds.filter((field) => field === 'act::enter-audience')).toHaveLength(3);
    expect(fieldIds.filter((field) => field === 'act::exit-audience')).toHaveLength(3);
    expect(await audience(byPlan.id)).toMatchObject({ members: 0 });
  });

  it('keeps a member until the exit filter matches when the audience has one', async () => {
    const plan = uniqueName('trial');
    const entered = await create({
      name: uniqueName('Trial until churned'),
      filter: planFilter(plan),
      exit_filter: { $and: [{ '$int::greater_than': { field_id: 'int:cm:score', value: 90 } }] },
    });
    await built(entered.id);
    const email = uniqueEmail('trial');
    const { person_id: id = '' } = await mergeOne(key, {
      fields: { 'str::email': email, 'str:cm:plan': plan, 'int:cm:score': 10 },
    });
    await until(
      () => memberOf(id, entered.id),
      (member) => member,
    );
    // No longer matching the entry filter is not leaving: only the exit filter is.
    await mergeOne(key, { fields: { 'str::email': email, 'str:cm:plan': 'other' } });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await memberOf(id, entered.id)).toBe(true);
    await mergeOne(key, { fields: { 'str::email': email, 'int:cm:score': 95 } });
    await until(
      () => memberOf(id, entered.id),
      (member) => !member,
    );
    // Matching the entry filter again while the exit filter matches is not entering.
    await mergeOne(key, { fields: { 'str::email': email, 'str:cm:plan': plan } });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await memberOf(id, entered.id)).toBe(false);
  });

  it('subscribes and unsubscribes members per audience, with exact counters after a concurrent mix', async () => {
    const plan = uniqueName('news');
    const entry = await create({ name: uniqueName('Newsletter'), filter: planFilter(plan) });
    const emails = Array.from({ length: 20 }, (_, i) => uniqueEmail(`news${i}`));
    const people = await merge(key, {
      people: emails.map((email) => ({
        fields: {
          'str::email': email,
          'str:cm:plan': plan,
          'bol::sp': true,
        },
      })),
    });
    await until(
      () => audience(entry.id),
      (found) => found?.building === false && found.members === 20,
    );
    const outsider = await mergeOne(key, { fields: { 'str::email': uniqueEmail('outsider') } });

    const answer = await call('/v1/audience/subscribe', {
      key,
      method: 'PUT',
      body: {
        audience_id: entry.id,
        people: [
          { person_id: people[0]?.person_id, subscribed: false },
          { person_id: outsider.person_id, subscribed: false },
        ],
      },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      audience_id: entry.id,
      people: [
        expect.objectContaining({ person_status: 'by-id', status: 'unsubscribed' }),
        expect.objectContaining({ person_status: 'by-id', status: 'not-member' }),
      ],
    });

    // Each person's final choice is its last request; the requests race each other.
    const final = new Map<string, { subscribed: boolean; sms: boolean }>();
    const requests = people.flatMap((person, i) =>
      [0, 1, 2].map((round) => {
        const subscribed = (i + round) % 3 !== 0;
        const sms = (i + round) % 2 === 0;
        return { id: person.person_id ?? '', subscribed, sms, round };
      }),
    );
    for (const request of requests.filter((r) => r.round === 2)) {
      final.set(request.id, { subscribed: request.subscribed, sms: request.sms });
    }
    for (const round of [0, 1, 2]) {
      const answers = await Promise.all(
        requests
          .filter((request) => request.round === round)
          .map((request) =>
            call('/v1/audience/subscribe', {
              key,
              method: 'PUT',
              body: {
                audience_id: entry.id,
                people: [
                  {
                    person_id: request.id,
                    subscribed: request.subscribed,
                    sms_opted_in: request.sms,
                  },
                ],
              },
            }),
          ),
      );
      expect(answers.map((response) => response.status)).toEqual(answers.map(() => 200));
    }
    // One member unsubscribes from everything: they no longer count as a subscriber.
    const globally = people[1]?.person_id ?? '';
    await mergeOne(key, { fields: { 'str::email': emails[1], 'bol::p': false } });
    const expected = {
      members: 20,
      subscribers: [...final].filter(([id, f]) => f.subscribed && id !== globally).length,
      sms_opted_in: [...final.values()].filter((f) => f.sms).length,
    };
    await until(
      () => audience(entry.id),
      (found) =>
        found?.subscribers === expected.subscribers && found.sms_opted_in === expected.sms_opted_in,
    );
    expect(await audience(entry.id)).toMatchObject(expected);
    const [mine] = (await subscriptionsOf(people[2]?.person_id ?? '')).filter(
      (subscription) => subscription.audience_id === entry.id,
    );
    const expectedMine = final.get(people[2]?.person_id ?? '');
    expect(mine).toMatchObject({
      audience_id: entry.id,
      subscribed: expectedMine?.subscribed,
      sms_opted_in: expectedMine?.sms,
    });
  });

  it('applies a subscribe sent with async: true through the ingest queue', async () => {
    const plan = uniqueName('async');
    const entry = await create({ name: uniqueName('Async'), filter: planFilter(plan) });
    await built(entry.id);
    const email = uniqueEmail('async');
    const { person_id: id = '' } = await mergeOne(key, {
      fields: { 'str::email': email, 'str:cm:plan': plan },
    });
    await until(
      () => memberOf(id, entry.id),
      (member) => member,
    );
    const accepted = await call('/v1/audience/subscribe', {
      key,
      method: 'PUT',
      body: { audience_id: entry.id, people: [{ email, subscribed: false }], async: true },
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({
      audience_id: entry.id,
      people: [{ person_status: 'queued', status: 'queued' }],
      request_id: expect.stringMatching(/^[0-9a-f]{24}$/),
    });
    const done = await until(
      async () =>
        (await call('/v1/async/get', { key, body: { request_id: accepted.body.request_id } })).body,
      (state) => state.status === 'done',
    );
    expect(done.result).toMatchObject({
      audience_id: entry.id,
      people: [{ person_status: 'merged', status: 'unsubscribed', person_id: id }],
    });
    const [mine] = (await subscriptionsOf(id)).filter((s) => s.audience_id === entry.id);
    expect(mine).toMatchObject({ subscribed: false });
    // An unknown audience is refused before anything is queued.
    const unknown = await call('/v1/audience/subscribe', {
      key,
      method: 'PUT',
      body: { audience_id: 'f'.repeat(24), people: [{ email }], async: true },
    });
    expect(unknown.status).toBe(404);
  });

  it('ends a build exact while the people it walks are changed', async () => {
    const plan = uniqueName('race');
    const emails = Array.from({ length: 60 }, (_, i) => uniqueEmail(`race${i}`));
    const people = await merge(key, {
      people: emails.map((email) => ({ fields: { 'str::email': email, 'str:cm:plan': plan } })),
    });
    const entry = await create({ name: uniqueName('Race'), filter: planFilter(plan) });
    // While it builds, a third leave and a third more join.
    const leaving = people.slice(0, 20).map((person) => person.person_id ?? '');
    await Promise.all([
      ...emails
        .slice(0, 20)
        .map((email) => mergeOne(key, { fields: { 'str::email': email, 'str:cm:plan': 'gone' } })),
      merge(key, {
        people: Array.from({ length: 20 }, (_, i) => ({
          fields: { 'str::email': uniqueEmail(`late${i}`), 'str:cm:plan': plan },
        })),
      }),
    ]);
    const done = await until(
      () => audience(entry.id),
      (found) => found?.building === false && found.members === 60,
      Math.max(180_000, WORKER_PATIENCE_MS),
    );
    expect(done?.members).toBe(60);
    // Settled: it stays at 60 (no late evaluation undoes the count).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect((await audience(entry.id))?.members).toBe(60);
    expect(await memberOf(leaving[0] ?? '', entry.id)).toBe(false);
  });

  it('rebuilds on a new filter, archives, restores and deletes', async () => {
    const plan = uniqueName('bronze');
    await merge(key, {
      people: Array.from({ length: 3 }, (_, i) => ({
        fields: { 'str::email': uniqueEmail(`bronze${i}`), 'str:cm:plan': plan, 'int:cm:score': i },
      })),
    });
    // Every change of a definition adds to the instance's audiences version, in its own
    // transaction: the audience worker compiles the definitions again when it moved.
    const versions = [(await catalog()).version];
    const moved = async () => {
      const { version } = await catalog();
      expect(version).toBeGreaterThan(versions.at(-1) ?? 0);
      versions.push(version);
    };
    const entry = await create({ name: uniqueName('Bronze'), filter: planFilter(plan) });
    await moved();
    await until(
      () => audience(entry.id),
      (found) => found?.members === 3 && !found.building,
    );
    const updated = await call('/v1/audiences/update', {
      key,
      method: 'PUT',
      body: {
        audience_id: entry.id,
        filter: {
          $and: [
            planFilter(plan),
            { '$int::greater_than': { field_id: 'int:cm:score', value: 0 } },
          ],
        },
      },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ building: true, ready: true });
    await moved();
    await until(
      () => audience(entry.id),
      (found) => found?.members === 2 && !found.building,
    );

    const refused = await call('/v1/audiences/delete', {
      key,
      method: 'DELETE',
      body: { audience_id: entry.id },
    });
    expect(refused.status).toBe(400);
    const archived = await call('/v1/audiences/archive', {
      key,
      method: 'PUT',
      body: { audience_id: entry.id },
    });
    expect(archived.status).toBe(200);
    expect(archived.body.archived_at).toEqual(expect.any(String));
    await moved();
    const live = await call('/v1/audiences/get', { key, body: {} });
    expect((live.body as unknown as Entry[]).map((found) => found.id)).not.toContain(entry.id);
    const deleted = await call('/v1/audiences/delete', {
      key,
      method: 'DELETE',
      body: { audience_id: entry.id },
    });
    expect(deleted.status).toBe(200);
    expect(await audience(entry.id)).toBeUndefined();
    await moved();
  });

  it('refuses a malformed filter with the path of the problem, and writes nothing', async () => {
    const name = uniqueName('Broken');
    const response = await call('/v1/audiences/create', {
      key,
      body: {
        name,
        filter: { $and: [{ '$str::is': { field_id: 'int:cm:score', value: 'x' } }] },
      },
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.body)).toContain('filter.$and[0]');
    const unknown = await call('/v1/audiences/create', {
      key,
      body: { name, filter: { '$str::sounds_like': { field_id: 'str::first', value: 'x' } } },
    });
    expect(unknown.status).toBe(400);
    const listed = await call('/v1/audiences/get', { key, body: { search_term: name } });
    expect(listed.body).toEqual([]);
  });

  it('takes archived people out, lets them back in on restore, and forgets erased ones', async () => {
    const plan = uniqueName('erase');
    const entry = await create({ name: uniqueName('Erase'), filter: planFilter(plan) });
    await built(entry.id);
    const { person_id: id = '' } = await mergeOne(key, {
      fields: { 'str::email': uniqueEmail('erase'), 'str:cm:plan': plan },
    });
    const members = (count: number) =>
      until(
        () => audience(entry.id),
        (found) => found?.members === count,
      );
    await members(1);
    const lifecycle = async (path: string, method: string) => {
      const response = await call(path, { key, method, body: { inclusion_ids: [id] } });
      expect({ path, status: response.status }).toEqual({ path, status: 200 });
    };
    await lifecycle('/v1/person/archive', 'PUT');
    await members(0);
    await lifecycle('/v1/person/restore', 'PUT');
    await members(1);
    await lifecycle('/v1/person/archive', 'PUT');
    await lifecycle('/v1/person/delete', 'DELETE');
    await members(0);
    // Nothing of the person stays with audiences: no membership, no state, no recheck.
    const { db } = stackDb();
    await until(
      async () =>
        (
          await db.send(
            new QueryCommand({
              TableName: tableName('default', 'audiences'),
              KeyConditionExpression: 'pk = :pk',
              ExpressionAttributeValues: { ':pk': `audiences#P#${id}` },
            }),
          )
        ).Items ?? [],
      (items) => items.length === 0,
    );
  });

  it("keeps one instance's audiences from another's", async () => {
    const mine = await create({ name: uniqueName('Mine'), filter: planFilter('x') });
    const theirs = await call('/v1/audiences/get', { key: KEYS.audiencesOther, body: {} });
    expect((theirs.body as unknown as Entry[]).map((entry) => entry.id)).not.toContain(mine.id);
    for (const [path, method] of [
      ['/v1/audiences/archive', 'PUT'],
      ['/v1/audiences/update', 'PUT'],
    ] as const) {
      const response = await call(path, {
        key: KEYS.audiencesOther,
        method,
        body: { audience_id: mine.id },
      });
      expect(response.status).toBe(404);
    }
    const subscribe = await call('/v1/audience/subscribe', {
      key: KEYS.audiencesOther,
      method: 'PUT',
      body: { audience_id: mine.id, people: [{ email: 'a@example.com', subscribed: false }] },
    });
    expect(subscribe.status).toBe(404);
  });
});
