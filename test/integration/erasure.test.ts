import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ScanCommand, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { DynamoLastSeenStore } from '../../shared/adapters/last-seen-store.js';
import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { emailActivity } from '../../shared/domain/email/email-activities.js';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import { repairCounts } from '../../shared/adapters/counter-repair.js';
import { DynamoPeopleLifecycleStore } from '../../shared/adapters/people-lifecycle-store.js';
import { personKey } from '../../shared/adapters/people-store.js';
import { TABLES, tableName } from '../../shared/resources.js';
import { adminEnv, run } from './cli.js';
import { until } from './emails.js';
import { call, stackDb, type ApiResponse } from './stack.js';

/**
 * Archive, restore and delete: archived people leave listings, searches, counters
 * and member counts, keep their keys (a merge that finds them is refused) and come back on
 * restore; delete erases an archived person and everything that names them, which a scan of
 * every table then proves; counters always equal a recount. The same for organizations
 * (also under the `accounts` names), and `all_rows_selected` in the background.
 */
const stamp = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const INSTANCE = `erasure-${stamp}`;
const BULK = `erasure-bulk-${stamp}`;
const KEY = `test-key-32-characters-or-more-erasure-${stamp}`;
const BULK_KEY = `test-key-32-characters-or-more-erasure-bulk-${stamp}`;

function instance(id: string, key: string) {
  return {
    id,
    name: `Erasure ${id}`,
    region: 'default',
    plan: 'business',
    transactional_email: true,
    sending_domains: [`mail.${id}.test`],
    rate_limit: { requests_per_second: 1000, burst: 2000 },
    data_sources: [{ name: 'App', api_key: key, merge_by: ['str::email'] }],
    person_fields: [{ id: 'str:cm:secret', name: 'Secret' }],
    activities: [
      { id: 'act:cm:bought', name: 'Bought', attributes: [{ id: 'str:cm:item', name: 'Item' }] },
    ],
  };
}

type Body = Record<string, unknown>;
const { base, db } = stackDb();
const tables = {
  people: tableName('default', 'people'),
  organizations: tableName('default', 'organizations'),
};

async function send(path: string, body: unknown, method = 'POST', headers = {}, key = KEY) {
  return call(path, { key, body, method, headers });
}

async function ok(path: string, body: unknown, method = 'POST', headers = {}, key = KEY) {
  const response = await send(path, body, method, headers, key);
  if (response.status !== 200 && response.status !== 202) {
    throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  }
  return response.body;
}

const archive = (ids: string[], key = KEY) =>
  send('/v1/person/archive', { inclusion_ids: ids }, 'PUT', {}, key);
const restore = (ids: string[], key = KEY) =>
  send('/v1/person/restore', { inclusion_ids: ids }, 'PUT', {}, key);
const erase = (ids: string[], key = KEY) =>
  send('/v1/person/delete', { inclusion_ids: ids }, 'DELETE', {}, key);

async function meta(key = KEY) {
  const counts = (await ok('/v1/person/get', { limit: 1 }, 'POST', {}, key)).meta as Body;
  return {
    total_contacts: Number(counts.total_contacts),
    total_subscribers: Number(counts.total_subscribers),
  };
}

async function listedIds(key = KEY, q?: string): Promise<string[]> {
  const body = await ok('/v1/person/get', { limit: 100, ...(q ? { q } : {}) }, 'POST', {}, key);
  return (body.contacts as { id: string }[]).map((contact) => contact.id);
}

async function members(organizationId: string, instanceId = INSTANCE) {
  const { Item } = await db.send(
    new GetCommand({
      TableName: tables.organizations,
      Key: { pk: `${instanceId}#O#${organizationId}`, sk: 'O' },
      ConsistentRead: true,
    }),
  );
  return Item?.members as number | undefined;
}

/** Counters equal a recount: the repair finds nothing to correct. */
async function expectCountersExact(instanceId: string) {
  const report = await repairCounts(db, tables, instanceId, 300);
  expect(report.fixed).toEqual([]);
  return report;
}

/** The person's references in the requests table (what each names: `REQ#…`, `IDEM#…`). */
async function requestReferences(personId: string): Promise<string[]> {
  const { Items } = await db.send(
    new QueryCommand({
      TableName: tableName('default', 'requests'),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `${INSTANCE}#PREF#${personId}` },
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((item) => String(item.sk));
}

/** Every item of every table of the default region, as JSON text, with its table. */
async function everyItem(): Promise<{ table: string; text: string }[]> {
  const items: { table: string; text: string }[] = [];
  for (const table of TABLES) {
    let start: Record<string, never> | undefined;
    do {
      const page: ScanCommandOutput = await base.send(
        new ScanCommand({
          TableName: tableName('default', table.name),
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const value = unmarshall(item);
        // A kept answer is stored gzipped: its text is what could name someone.
        if (value.result_gz instanceof Uint8Array) {
          value.result_gz = gunzipSync(value.result_gz).toString('utf8');
        }
        items.push({ table: table.name, text: JSON.stringify(value) });
      }
      start = page.LastEvaluatedKey as Record<string, never> | undefined;
    } while (start);
  }
  return items;
}

/**
 * The items that still name what `names` matches, once none do or the patience ran out: the
 * field index's entries of an erased person go when the people stream's worker sees the
 * removal, a moment after the answer.
 */
async function leftovers(names: (text: string) => boolean) {
  const left = () => everyItem().then((items) => items.filter(({ text }) => names(text)));
  await until('nothing naming the erased left', async () =>
    (await left()).length === 0 ? true : undefined,
  ).catch(() => undefined);
  return left();
}

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-erasure-')), 'config.json');
  writeFileSync(
    file,
    JSON.stringify({ instances: [instance(INSTANCE, KEY), instance(BULK, BULK_KEY)] }),
  );
  const applied = await run(['local/admin.ts', 'apply', file], adminEnv());
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.stderr}`);
}, 60_000);

describe('archive and restore people', () => {
  it('takes them out of listings, searches, counters and member counts, and back', async () => {
    const email = `Keep.Archived-${stamp}@Example.com`;
    const merged = await ok('/v1/person/merge', {
      people: [
        { fields: { 'str::email': email, 'str::first': `Arch${stamp}` } },
        { fields: { 'str::email': `other-${stamp}@example.com`, 'bol::p': false } },
      ],
    });
    const [person, other] = (merged.people as { person_id: string }[]).map((p) => p.person_id);
    if (!person || !other) throw new Error('no people');
    const organization = (
      (await ok('/v1/organizations/merge', {
        organizations: [{ fields: { 'str:o:name': `Org ${stamp}` } }],
        merge_by: ['str:o:name'],
      })) as { organizations: { organization_id: string }[] }
    ).organizations[0]?.organization_id as string;
    await ok(
      '/v1/organizations/contacts/add',
      { organization_id: organization, inclusion_ids: [person, other] },
      'PUT',
    );
    const before = await meta();
    expect(await members(organization)).toBe(2);

    const archived = await archive([person]);
    expect(archived.status).toBe(200);
    expect(archived.body).toEqual({ scheduled_contacts: 0, archived_contacts: 1 });
    // Again: already archived, nothing changes.
    expect((await archive([person])).body).toMatchObject({ archived_contacts: 0 });
    expect(await meta()).toMatchObject({
      total_contacts: before.total_contacts - 1,
      total_subscribers: before.total_subscribers - 1,
    });
    expect(await members(organization)).toBe(1);
    expect(await listedIds()).not.toContain(person);
    expect(await listedIds()).toContain(other);
    expect(await listedIds(KEY, `keep.archived-${stamp}`)).toEqual([]);
    expect(await listedIds(KEY, `arch${stamp}`)).toEqual([]);
    await expectCountersExact(INSTANCE);

    // Its key stays claimed: a merge that finds it is refused, and creates nobody.
    const again = await send('/v1/person/merge', { people: [{ fields: { 'str::email': email } }] });
    expect(again.status).toBe(400);
    expect(JSON.stringify(again.body)).toContain(`the person ${person} is archived`);
    const byId = await send('/v1/activities/create', {
      activities: [{ activity_id: 'act:cm:bought', person_id: person }],
    });
    expect(byId.status).toBe(400);
    expect(JSON.stringify(byId.body)).toContain('is archived');
    const mail = await send('/v1/transactional/send', {
      asset: { from_email: `a@mail.${INSTANCE}.test`, subject: 'Hi', html_body: '<p>Hi</p>' },
      merge_by: ['str::email'],
      emails: [{ fields: { 'str::email': email } }],
    });
    expect(mail.status).toBe(400);
    expect(mail.body.details).toEqual([
      expect.objectContaining({ status: 'invalid', error: expect.stringContaining('archived') }),
    ]);
    const link = await send(
      '/v1/organizations/contacts/add',
      { organization_id: organization, inclusion_ids: [person] },
      'PUT',
    );
    expect(link.status).toBe(400);
    expect(link.body.error).toContain(`archived people (restore them first): ${person}`);
    expect((await meta()).total_contacts).toBe(before.total_contacts - 1);
    // Only archived people can be deleted.
    const refused = await erase([other]);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain(`archive these first: ${other}`);

    const restored = await restore([person]);
    expect(restored.body).toEqual({ scheduled_contacts: 0, restored_contacts: 1 });
    expect(await meta()).toMatchObject({
      total_contacts: before.total_contacts,
      total_subscribers: before.total_subscribers,
    });
    expect(await members(organization)).toBe(2);
    await until('the restored person listed', async () =>
      (await listedIds()).includes(person) ? true : undefined,
    );
    expect(await listedIds(KEY, `keep.archived-${stamp}`)).toEqual([person]);
    const merges = await ok('/v1/person/merge', {
      people: [{ fields: { 'str::email': email, 'str:cm:secret': 'back' } }],
    });
    expect(merges.people).toEqual([{ person_id: person, status: 'merged' }]);
    await expectCountersExact(INSTANCE);
  }, 60_000);

  it('refuses unknown IDs (another instance’s too) and bad bodies, changing nothing', async () => {
    const stranger = randomBytes(12).toString('hex');
    const unknown = await archive([stranger]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe(`inclusion_ids: no such people: ${stranger}`);
    for (const [body, mention] of [
      [{}, 'inclusion_ids'],
      [{ inclusion_ids: [] }, 'inclusion_ids'],
      [{ inclusion_ids: ['nope'] }, 'inclusion_ids[0]'],
      [{ inclusion_ids: Array.from({ length: 101 }, () => stranger) }, 'inclusion_ids'],
      [{ all_rows_selected: false }, 'all_rows_selected'],
      [{ all_rows_selected: true, inclusion_ids: [stranger] }, 'inclusion_ids'],
      [{ inclusion_ids: [stranger], exclusion_ids: [stranger] }, 'exclusion_ids'],
    ] as const) {
      const answer = await send('/v1/person/restore', body, 'PUT');
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      expect(answer.body.error).toContain(mention);
    }
    // DELETE is the only method of the delete path.
    const wrong = await send('/v1/person/delete', { inclusion_ids: [stranger] }, 'PUT');
    expect(wrong.status).toBe(405);
  });
});

describe('deleting a person (erasure)', () => {
  it('leaves no trace of their ID, email or any value they sent in any table', async () => {
    const email = `erase.me-${stamp}@example.com`;
    const secrets = {
      email,
      ei: `ei-erase-${stamp}`,
      first: `Erasable${stamp}`,
      custom: `secret-value-${stamp}`,
      tag: `tag-${stamp}`,
      item: `item-erase-${stamp}`,
      key: `activity-key-${stamp}`,
      asyncValue: `async-value-${stamp}`,
      subject: `Subject ${stamp}`,
    };
    // Created with an Idempotency-Key (a kept answer names them), updated by an async request,
    // linked to an organization, given keyed activities, sent an email, read back through a
    // kept get-by-ids answer.
    const created = await ok(
      '/v1/person/merge',
      {
        people: [
          {
            fields: {
              'str::email': email,
              'str::ei': secrets.ei,
              'str::first': secrets.first,
              'str:cm:secret': secrets.custom,
            },
            tags: [secrets.tag],
          },
        ],
      },
      'POST',
      { 'idempotency-key': `erase-create-${stamp}` },
    );
    const person = (created.people as { person_id: string }[])[0]?.person_id as string;
    const queued = await ok('/v1/person/merge', {
      async: true,
      people: [{ fields: { 'str::email': email, 'str::last': secrets.asyncValue } }],
    });
    await until('the async merge', async () => {
      const state = await ok('/v1/async/get', { request_id: queued.request_id });
      return state.status === 'done' ? true : undefined;
    });
    const organization = (
      (await ok('/v1/organizations/merge', {
        organizations: [{ fields: { 'str:o:name': `Erasure org ${stamp}` } }],
        merge_by: ['str:o:name'],
      })) as { organizations: { organization_id: string }[] }
    ).organizations[0]?.organization_id as string;
    await ok(
      '/v1/organizations/contacts/add',
      { organization_id: organization, inclusion_ids: [person] },
      'PUT',
    );
    const activities = await ok('/v1/activities/create', {
      activities: [
        {
          activity_id: 'act:cm:bought',
          person_id: person,
          attributes: { 'str:cm:item': secrets.item },
          key: secrets.key,
        },
        { activity_id: 'act:cm:bought', fields: { 'str::email': email } },
      ],
    });
    expect(activities.activities).toHaveLength(2);
    const sent = await ok('/v1/transactional/send', {
      asset: {
        from_email: `team@mail.${INSTANCE}.test`,
        subject: secrets.subject,
        html_body: '<p>Hello {{ people.first-name }} <a href="https://shop.example/x">x</a></p>',
      },
      merge_by: ['str::email'],
      emails: [{ fields: { 'str::email': email } }],
    });
    const messageId = (sent.emails as { message_id: string }[])[0]?.message_id as string;
    // Sent (and its `act::s` recorded) before the person is archived.
    await until('the email sent', async () => {
      const state = await ok('/v1/transactional/get', { message_ids: [messageId] });
      return (state.emails as Body[])[0]?.status === 'sent' ? true : undefined;
    });
    await ok(
      '/v1/person/get-by-ids',
      { contact_ids: [person], fields: ['str::email', 'str:cm:secret'] },
      'POST',
      { 'idempotency-key': `erase-read-${stamp}` },
    );
    // The instance's tags (`<inst>#T#<tag>`, its ID `<inst>#TID#<id>`, its count shards
    // `<inst>#TC#<n>`) are the instance's vocabulary, shared by everyone tagged so: they stay
    // (docs/api.md), the counts back where they were. The tag on the person goes with them.
    const tagItem = new RegExp(`"pk":"${INSTANCE}#T(ID|C)?#`);
    const traces = () =>
      everyItem().then((items) =>
        items.filter(
          ({ text }) =>
            !tagItem.test(text) &&
            [person, ...Object.values(secrets)].some((secret) => text.includes(secret)),
        ),
      );
    // Before: the person is named in every table that can name them (the field index a
    // moment after the merge: the people stream's worker keeps it).
    const tablesBefore = await until('the field index holding the person', async () => {
      const tables = new Set((await traces()).map((item) => item.table));
      return tables.has('indexes') ? tables : undefined;
    });
    expect([...tablesBefore].sort()).toEqual(
      ['activities', 'emails', 'indexes', 'people', 'requests'].sort(),
    );

    expect((await archive([person])).status).toBe(200);
    expect(await members(organization)).toBe(0);
    const deleted = await erase([person]);
    expect(deleted.body).toEqual({ scheduled_contacts: 0, deleted_contacts: 1 });

    // The field index's entries go once the stream's worker has seen the archive.
    await until('the field index forgetting the person', async () =>
      (await traces()).length === 0 ? true : undefined,
    );
    expect(await traces()).toEqual([]);
    // What the law allows is kept: an audit entry without personal data.
    const audit = (await everyItem()).filter(
      ({ text }) => text.includes(`${INSTANCE}#AUDIT`) && text.includes('"subject":"people"'),
    );
    expect(audit.map(({ text }) => JSON.parse(text) as Body)).toEqual([
      expect.objectContaining({
        action: 'delete',
        subject: 'people',
        count: 1,
        data_source: 'App',
      }),
    ]);
    // Gone everywhere the API can look: by ID, by key, its email, its async request.
    expect((await erase([person])).status).toBe(400);
    const byIds = await ok('/v1/person/get-by-ids', { contact_ids: [person] });
    expect(byIds.contacts).toEqual({});
    expect((await send('/v1/transactional/get', { message_ids: [messageId] })).status).toBe(404);
    expect((await send('/v1/async/get', { request_id: queued.request_id })).status).toBe(404);
    // Its email is free again: a merge creates a new person.
    const fresh = await ok('/v1/person/merge', { people: [{ fields: { 'str::email': email } }] });
    expect(fresh.people).toEqual([{ person_id: expect.any(String), status: 'created' }]);
    expect((fresh.people as { person_id: string }[])[0]?.person_id).not.toBe(person);
    await expectCountersExact(INSTANCE);
  }, 90_000);

  it('erases the answer of the queued request that created the person, found through the person (no reference item)', async () => {
    const email = `created-async-${stamp}@erasure.test`;
    const other = `created-async-other-${stamp}@erasure.test`;
    const queued = await ok('/v1/person/merge', {
      async: true,
      people: [{ fields: { 'str::email': email } }, { fields: { 'str::email': other } }],
    });
    const requestId = String(queued.request_id);
    const done = await until('the async merge', async () => {
      const state = await ok('/v1/async/get', { request_id: requestId });
      return state.status === 'done' ? state : undefined;
    });
    const created = (done.result as { people: { person_id: string; status: string }[] }).people;
    expect(created.map((p) => p.status)).toEqual(['created', 'created']);
    const [person, kept] = created.map((p) => p.person_id) as [string, string];
    // The answer names both, but neither has a reference to it: their items name the request.
    for (const id of [person, kept]) {
      expect(await requestReferences(id)).toEqual([]);
      const { Item } = await db.send(
        new GetCommand({
          TableName: tables.people,
          Key: personKey(INSTANCE, id),
          ConsistentRead: true,
        }),
      );
      expect(Item?.origin_request).toBe(requestId);
    }
    // Not shown to clients: the person reads as any other.
    const shown = await ok('/v1/person/get-by-ids', { contact_ids: [person] });
    expect(JSON.stringify(shown)).not.toContain(requestId);

    expect((await archive([person])).status).toBe(200);
    expect((await erase([person])).body).toEqual({ scheduled_contacts: 0, deleted_contacts: 1 });
    // The request's state, answer and ledger are gone (they named the erased person).
    expect((await send('/v1/async/get', { request_id: requestId })).status).toBe(404);
    expect(await leftovers((text) => text.includes(person))).toEqual([]);
    // The other person it created stays.
    expect(
      Object.keys((await ok('/v1/person/get-by-ids', { contact_ids: [kept] })).contacts as Body),
    ).toEqual([kept]);
    await expectCountersExact(INSTANCE);
  }, 60_000);

  it('erases the answer of a queued request of activities, found through its activities (no reference item)', async () => {
    const email = `activities-async-${stamp}@erasure.test`;
    const created = await ok('/v1/person/merge', { people: [{ fields: { 'str::email': email } }] });
    const person = (created.people as { person_id: string }[])[0]?.person_id as string;
    const queued = await ok('/v1/activities/create', {
      async: true,
      activities: [1, 2].map((n) => ({
        activity_id: 'act:cm:bought',
        fields: { 'str::email': email },
        attributes: { 'str:cm:item': `item ${n}` },
      })),
    });
    const requestId = String(queued.request_id);
    const done = await until('the async activities', async () => {
      const state = await ok('/v1/async/get', { request_id: requestId });
      return state.status === 'done' ? state : undefined;
    });
    const entries = (done.result as { activities: { person_id: string; status: string }[] })
      .activities;
    expect(entries.map((a) => [a.person_id, a.status])).toEqual([
      [person, 'ingested'],
      [person, 'ingested'],
    ]);
    expect(await requestReferences(person)).not.toContain(`REQ#${requestId}`);
    // Not shown to clients: the activities read as any other.
    const timeline = await ok('/v1/person/get/activities', { person_id: person, limit: 10 });
    expect((timeline.activities as unknown[]).length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(timeline)).not.toContain(requestId);

    expect((await archive([person])).status).toBe(200);
    expect((await erase([person])).body).toEqual({ scheduled_contacts: 0, deleted_contacts: 1 });
    expect((await send('/v1/async/get', { request_id: requestId })).status).toBe(404);
    expect(await leftovers((text) => text.includes(person))).toEqual([]);
    await expectCountersExact(INSTANCE);
  }, 60_000);
});

describe('organizations (and the accounts names)', () => {
  it('archive, restore and delete, with counters equal to a recount', async () => {
    const names = [`Acc A ${stamp}`, `Acc B ${stamp}`];
    const created = (await ok('/v1/organizations/merge', {
      organizations: names.map((name) => ({ fields: { 'str:o:name': name } })),
      merge_by: ['str:o:name'],
    })) as { organizations: { organization_id: string }[] };
    const [first, second] = created.organizations.map((o) => o.organization_id) as [string, string];
    const totalOf = async () =>
      ((await ok('/v1/organizations/get', { limit: 1 })).meta as Body).total_organizations;
    const total = (await totalOf()) as number;
    const archived = await send('/v1/accounts/archive', { inclusion_ids: [first, second] }, 'PUT');
    expect(archived.body).toEqual({ scheduled_organizations: 0, archived_organizations: 2 });
    expect(await totalOf()).toBe(total - 2);
    const search = await ok('/v1/organizations/get', { q: `acc a ${stamp}` });
    expect(search.organizations).toEqual([]);
    const merge = await send('/v1/organizations/merge', {
      organizations: [{ fields: { 'str:o:name': names[0] } }],
      merge_by: ['str:o:name'],
    });
    expect(merge.status).toBe(400);
    expect(JSON.stringify(merge.body)).toContain(`the organization ${first} is archived`);
    const restored = await send('/v1/organizations/restore', { inclusion_ids: [first] }, 'PUT');
    expect(restored.body).toMatchObject({ restored_organizations: 1 });
    expect(await totalOf()).toBe(total - 1);
    const refused = await send('/v1/accounts/delete', { inclusion_ids: [first] }, 'DELETE');
    expect(refused.status).toBe(400);
    // An archived organization that still has people cannot be deleted: the call is refused
    // whole, naming it, and deletes none of the others it names.
    const withPeople = (
      (await ok('/v1/organizations/merge', {
        organizations: [{ fields: { 'str:o:name': `Acc C ${stamp}` } }],
        merge_by: ['str:o:name'],
      })) as { organizations: { organization_id: string }[] }
    ).organizations[0]?.organization_id as string;
    const member = (
      (await ok('/v1/person/merge', {
        people: [{ fields: { 'str::email': `member-${stamp}@erasure.test` } }],
      })) as { people: { person_id: string }[] }
    ).people[0]?.person_id as string;
    await ok(
      '/v1/organizations/contacts/add',
      { organization_id: withPeople, inclusion_ids: [member] },
      'PUT',
    );
    await ok('/v1/organizations/archive', { inclusion_ids: [withPeople] }, 'PUT');
    const held = await send(
      '/v1/organizations/delete',
      { inclusion_ids: [second, withPeople] },
      'DELETE',
    );
    expect(held.status).toBe(400);
    expect(held.body.error).toBe(
      `inclusion_ids: these cannot be deleted: ${withPeople} (it has 1 people: remove them first)`,
    );
    const stillThere = await ok('/v1/organizations/get-by-ids', {
      organization_ids: [second, withPeople],
    });
    expect(Object.keys(stillThere.organizations as Body).sort()).toEqual(
      [second, withPeople].sort(),
    );
    const deleted = await send('/v1/organizations/delete', { inclusion_ids: [second] }, 'DELETE');
    expect(deleted.body).toEqual({ scheduled_organizations: 0, deleted_organizations: 1 });
    const items = await everyItem();
    expect(items.filter(({ text }) => text.includes(second))).toEqual([]);
    // Its name is free again.
    const again = await ok('/v1/organizations/merge', {
      organizations: [{ fields: { 'str:o:name': names[1] } }],
      merge_by: ['str:o:name'],
    });
    expect(again.organizations).toEqual([
      { organization_id: expect.any(String), status: 'created' },
    ]);
    await expectCountersExact(INSTANCE);
  }, 60_000);
});

describe('all_rows_selected, in the background', () => {
  async function finished(accepted: ApiResponse) {
    expect(accepted.status).toBe(200);
    const requestId = accepted.body.request_id as string;
    return until(`background request ${requestId}`, async () => {
      const state = await ok('/v1/async/get', { request_id: requestId }, 'POST', {}, BULK_KEY);
      if (state.status === 'failed') throw new Error(JSON.stringify(state));
      return state.status === 'done' ? state : undefined;
    });
  }

  it('archives, restores and deletes everyone but the excluded, counted and visible', async () => {
    const merged = await ok(
      '/v1/person/merge',
      {
        people: Array.from({ length: 40 }, (_, i) => ({
          fields: { 'str::email': `bulk-${i}-${stamp}@example.com` },
        })),
      },
      'POST',
      {},
      BULK_KEY,
    );
    const ids = (merged.people as { person_id: string }[]).map((p) => p.person_id);
    const kept = ids.slice(0, 2);
    const accepted = await send(
      '/v1/person/archive',
      { all_rows_selected: true, exclusion_ids: kept },
      'PUT',
      {},
      BULK_KEY,
    );
    expect(accepted.body).toEqual({
      request_id: expect.any(String),
      scheduled_contacts: 38,
      archived_contacts: 0,
    });
    expect((await finished(accepted)).result).toEqual({
      scheduled_contacts: 38,
      archived_contacts: 38,
    });
    expect((await meta(BULK_KEY)).total_contacts).toBe(2);
    await until('the listing to shrink', async () => {
      const listed = await listedIds(BULK_KEY);
      return listed.length === 2 ? listed : undefined;
    });
    await expectCountersExact(BULK);

    const restoring = await send(
      '/v1/person/restore',
      { all_rows_selected: true, exclusion_ids: [ids[2] as string] },
      'PUT',
      {},
      BULK_KEY,
    );
    expect((await finished(restoring)).result).toEqual({
      scheduled_contacts: 37,
      restored_contacts: 37,
    });
    expect((await meta(BULK_KEY)).total_contacts).toBe(39);

    // Delete: the one still archived, and the others once archived again.
    const rearchive = await send(
      '/v1/person/archive',
      { all_rows_selected: true, exclusion_ids: kept },
      'PUT',
      {},
      BULK_KEY,
    );
    expect((await finished(rearchive)).result).toMatchObject({ archived_contacts: 37 });
    const deleting = await send(
      '/v1/person/delete',
      { all_rows_selected: true },
      'DELETE',
      {},
      BULK_KEY,
    );
    expect((await finished(deleting)).result).toEqual({
      scheduled_contacts: 38,
      deleted_contacts: 38,
    });
    const report = await expectCountersExact(BULK);
    expect(report.people).toBe(2);
    expect(await leftovers((text) => ids.slice(2).some((id) => text.includes(id)))).toEqual([]);
  }, 120_000);
});

describe('archive and erase racing other writes', () => {
  const lifecycleTables = {
    people: tables.people,
    organizations: tables.organizations,
    activities: tableName('default', 'activities'),
    requests: tableName('default', 'requests'),
    emails: tableName('default', 'emails'),
  };

  async function archivedPerson(label: string) {
    const merged = await ok('/v1/person/merge', {
      people: [{ fields: { 'str::email': `${label}-${stamp}@example.com` } }],
    });
    const id = (merged.people as { person_id: string }[])[0]?.person_id as string;
    expect((await archive([id])).status).toBe(200);
    return id;
  }

  /** Every item of a timeline (`<inst>#P#<person>`), read consistently. */
  async function timelineOf(timeline: string) {
    const { Items = [] } = await db.send(
      new QueryCommand({
        TableName: lifecycleTables.activities,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': timeline },
        ConsistentRead: true,
      }),
    );
    return Items;
  }

  async function personItem(id: string) {
    const { Item } = await db.send(
      new GetCommand({
        TableName: tables.people,
        Key: { pk: `${INSTANCE}#P#${id}`, sk: 'P' },
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  it('a last-seen move of a request that found the person before the archive changes nothing', async () => {
    const id = await archivedPerson('touched-late');
    const before = await personItem(id);
    const store = new DynamoLastSeenStore(db, { people: tables.people });
    // The last-seen worker's move lands after the archive: it changes nothing.
    expect(await store.touch(INSTANCE, id, new Date().toISOString(), 'Paris')).toBe(false);
    const after = await personItem(id);
    expect(after?.fields).toEqual(before?.fields);
    expect((after?.fields as Body)['tme::last-seen']).toBeUndefined();
    expect(after?.version).toBe(before?.version);
  });

  it('an email event handled while the person is being erased leaves no activity behind', async () => {
    const id = await archivedPerson('evented');
    const messageId = `m-${stamp}`;
    const emailKey = { pk: `${INSTANCE}#M#${messageId}`, sk: 'M' };
    const timeline = `${INSTANCE}#P#${id}`;
    await db.send(
      new PutCommand({
        TableName: lifecycleTables.emails,
        Item: { ...emailKey, person_id: id, status: 'sent', to: `evented-${stamp}@example.com` },
      }),
    );
    await db.send(
      new PutCommand({
        TableName: lifecycleTables.emails,
        Item: { pk: `${INSTANCE}#PREF#${id}`, sk: `M#${messageId}` },
      }),
    );
    await db.send(
      new PutCommand({
        TableName: lifecycleTables.activities,
        Item: { pk: timeline, sk: `2026-01-01T00:00:00.000Z#a-${stamp}`, field_id: 'act::s' },
      }),
    );
    // An email event (an open, an SES event) as the workers handle it: it records an activity
    // on the person's timeline while the email exists. It runs right after the erasure has
    // deleted the timeline.
    const erasing = createDynamoDbClient();
    let events = 0;
    erasing.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        const input = args.input as { RequestItems?: Record<string, unknown[]> };
        if (
          context.commandName === 'BatchWriteItemCommand' &&
          input.RequestItems?.[lifecycleTables.activities] !== undefined
        ) {
          events += 1;
          const { Item } = await db.send(
            new GetCommand({
              TableName: lifecycleTables.emails,
              Key: emailKey,
              ConsistentRead: true,
            }),
          );
          if (Item) {
            await db.send(
              new PutCommand({
                TableName: lifecycleTables.activities,
                Item: {
                  pk: timeline,
                  sk: `${new Date().toISOString()}#o-${stamp}`,
                  field_id: 'act::o',
                },
              }),
            );
          }
        }
        return result;
      },
      { step: 'initialize', name: 'emailEventDuringErasure' },
    );
    const store = new DynamoPeopleLifecycleStore(
      createDocumentClient(erasing, ''),
      lifecycleTables,
      {
        erase: () => Promise.resolve(),
      },
    );
    expect(await store.erase(INSTANCE, id, ['str::email'])).toBe(true);
    expect(events).toBeGreaterThan(0);
    expect(await timelineOf(timeline)).toEqual([]);
    expect(await personItem(id)).toBeUndefined();
    // Gone for good: a repeat finds no archived person to erase.
    expect(await store.erase(INSTANCE, id, ['str::email'])).toBe(false);
    await expectCountersExact(INSTANCE);
  });

  it('an email event that read its email before the erasure and writes after it records nothing', async () => {
    const id = await archivedPerson('late-event');
    const messageId = `late-${stamp}`;
    const emailKey = { pk: `${INSTANCE}#M#${messageId}`, sk: 'M' };
    const timeline = `${INSTANCE}#P#${id}`;
    await db.send(
      new PutCommand({
        TableName: lifecycleTables.emails,
        Item: { ...emailKey, person_id: id, status: 'sent', to: `late-event-${stamp}@example.com` },
      }),
    );
    await db.send(
      new PutCommand({
        TableName: lifecycleTables.emails,
        Item: { pk: `${INSTANCE}#PREF#${id}`, sk: `M#${messageId}` },
      }),
    );
    const emails = new DynamoEmailStore(createDocumentClient(createDynamoDbClient(), ''), {
      emails: lifecycleTables.emails,
      activities: lifecycleTables.activities,
    });
    const record = { person_id: id, message_id: messageId, email_name: 'late' };
    // The event's handler read the email (it was there) and records its activity while the
    // email exists: it lands.
    const opened = emailActivity('opened', record, new Date(), 'first');
    expect(await emails.recordActivity(INSTANCE, opened)).toBe(true);
    // The erasure runs between the handler's read and its write: the write finds no email.
    const store = new DynamoPeopleLifecycleStore(
      createDocumentClient(createDynamoDbClient(), ''),
      lifecycleTables,
      { erase: () => Promise.resolve() },
    );
    expect(await store.erase(INSTANCE, id, ['str::email'])).toBe(true);
    const clicked = emailActivity('clicked', record, new Date(), 'late');
    expect(await emails.recordActivity(INSTANCE, clicked)).toBe(false);
    expect(await timelineOf(timeline)).toEqual([]);
    expect(await personItem(id)).toBeUndefined();
  });
});
