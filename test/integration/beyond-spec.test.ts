import { beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminEnv, run } from './cli.js';
import { until } from './emails.js';
import { fieldsOf, uniqueEmail } from './people.js';
import { call } from './stack.js';

/**
 * Endpoints and options beyond the spec that clients of the real API use:
 * `POST /v1/person/subscriptions`, `POST /v1/instance-schema/get` and `find_strategy: 2`
 * on every merge. The instances are applied here (the admin CLI), so that the schema they
 * answer is exactly this file's.
 */
const KEY = 'test-key-32-characters-or-more-beyond';
const KEY_ALL = 'test-key-32-characters-or-more-beyond-all';
const KEY_OTHER = 'test-key-32-characters-or-more-beyond-other';

const CONFIG = {
  instances: [
    {
      id: 'beyond',
      name: 'Beyond',
      region: 'default',
      plan: 'business',
      transactional_email: true,
      sending_domains: ['mail.beyond.test'],
      rate_limit: { requests_per_second: 1000, burst: 2000 },
      data_sources: [
        { name: 'Web', api_key: KEY, merge_by: ['str::email'] },
        // Finds a person only by every merge key a record gives.
        { name: 'All', api_key: KEY_ALL, merge_by: ['str::ei', 'str::email'], find_strategy: 2 },
      ],
      person_fields: [{ id: 'str:cm:shoe-size', name: 'Shoe size' }],
      organization_fields: [{ id: 'int:oc:revenue', name: 'Revenue' }],
      activities: [
        {
          id: 'act:cm:bought',
          name: 'Bought',
          attributes: [
            { id: 'str:cm:item', name: 'Item' },
            { id: 'int:cm:price', name: 'Price', kind: 'currency' },
            { id: 'tme:cm:at', name: 'At' },
          ],
        },
      ],
    },
    {
      id: 'beyond-other',
      name: 'Beyond other',
      region: 'default',
      plan: 'business',
      data_sources: [{ name: 'Web', api_key: KEY_OTHER }],
    },
  ],
};

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-beyond-')), 'config.json');
  writeFileSync(file, JSON.stringify(CONFIG));
  const applied = await run(['local/admin.ts', 'apply', file, '--settle', '0'], adminEnv());
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.stderr}`);
}, 60_000);

type Body = Record<string, unknown>;
async function merge(key: string, body: Body) {
  const response = await call('/v1/person/merge', { key, body });
  expect(response.status).toBe(200);
  return response.body.people as { person_id?: string; status: string; error?: string }[];
}

describe('POST /v1/person/subscriptions', () => {
  it('answers each person by email or ID, in order, with their permissions', async () => {
    const [subscribed, smsOnly] = [uniqueEmail('subs'), uniqueEmail('sms')];
    const [first, second] = await merge(KEY, {
      people: [
        { fields: { 'str::email': subscribed } },
        { fields: { 'str::email': smsOnly, 'bol::p': false, 'bol::sp': true } },
      ],
    });
    const unknown = uniqueEmail('nobody');
    const response = await call('/v1/person/subscriptions', {
      key: KEY,
      body: {
        people: [
          { email: subscribed.toUpperCase() },
          { person_id: second?.person_id },
          { email: unknown },
          { person_id: 'f'.repeat(24) },
          { email: smsOnly },
        ],
      },
    });
    expect(response.status).toBe(200);
    expect(response.body.people).toEqual([
      {
        person_status: 'merged',
        person_id: first?.person_id,
        email: subscribed,
        email_permissions: true,
        sms_permissions: false,
        subscriptions: [],
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      },
      {
        person_status: 'by-id',
        person_id: second?.person_id,
        email_permissions: false,
        sms_permissions: true,
        subscriptions: [],
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      },
      {
        person_status: 'invalid',
        email: unknown,
        error: 'people[2].email: no person has this email address',
      },
      {
        person_status: 'invalid',
        person_id: 'f'.repeat(24),
        error: 'people[3].person_id: no person has this ID',
      },
      {
        person_status: 'merged',
        person_id: second?.person_id,
        email: smsOnly,
        email_permissions: false,
        sms_permissions: true,
        subscriptions: [],
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      },
    ]);
  });

  it('reads a permission just changed', async () => {
    const email = uniqueEmail('flip');
    await merge(KEY, { people: [{ fields: { 'str::email': email } }] });
    await merge(KEY, { people: [{ fields: { 'str::email': email, 'bol::p': false } }] });
    const response = await call('/v1/person/subscriptions', {
      key: KEY,
      body: { people: [{ email }] },
    });
    expect(response.body.people).toMatchObject([{ email_permissions: false }]);
  });

  it('does not find people of another instance', async () => {
    const email = uniqueEmail('theirs');
    const [theirs] = await merge(KEY_OTHER, { people: [{ fields: { 'str::email': email } }] });
    const response = await call('/v1/person/subscriptions', {
      key: KEY,
      body: { people: [{ email }, { person_id: theirs?.person_id }] },
    });
    expect(response.status).toBe(200);
    expect(response.body.people).toEqual([
      expect.objectContaining({ person_status: 'invalid', email }),
      expect.objectContaining({ person_status: 'invalid', person_id: theirs?.person_id }),
    ]);
  });

  it.each([
    [{}, 'people: '],
    [{ people: [] }, 'people: expected 1 to 100 people'],
    [
      { people: Array.from({ length: 101 }, (_, i) => ({ email: `${i}@b.co` })) },
      'people: expected 1',
    ],
    [{ people: [{}] }, 'people[0]: expected one of person_id, email or external_id'],
    [{ people: [{ email: 'not-an-address' }] }, 'people[0].email: expected an email address'],
    [{ people: [{ person_id: 'XYZ' }] }, 'people[0].person_id: expected a person ID'],
    [{ people: [{ 'str::email': 'a@b.co' }] }, 'people[0]: expected one of'],
    [{ people: ['a@b.co'] }, 'people[0]: '],
  ])('refuses bad input %# with a 400 naming the member', async (body, message) => {
    const response = await call('/v1/person/subscriptions', { key: KEY, body });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 400 });
    expect(response.body.error).toContain(message);
  });

  it('needs a key', async () => {
    const response = await call('/v1/person/subscriptions', { body: { people: [] } });
    expect(response.status).toBe(401);
  });
});

describe('POST /v1/instance-schema/get', () => {
  it('describes every namespace: built-in and custom fields and activities', async () => {
    const response = await call('/v1/instance-schema/get', { key: KEY, body: { namespaces: [] } });
    expect(response.status).toBe(200);
    const namespaces = response.body.namespaces as Record<string, Body>;
    expect(Object.keys(namespaces).sort()).toEqual(['', 'cm', 'o', 'oc']);
    const fieldsOfNamespace = (id: string) => namespaces[id]?.fields as Record<string, Body>;
    expect(namespaces['']).toMatchObject({ id: '' });
    expect(namespaces['']).not.toHaveProperty('org');
    expect(namespaces.o).toMatchObject({ id: 'o', org: true });
    expect(namespaces.oc).toMatchObject({ id: 'oc', org: true });
    expect(fieldsOfNamespace('')['str::email']).toEqual({
      id: 'str::email',
      name: 'Email',
      display_type: 'email',
      liquid_name: 'people.email',
    });
    expect(fieldsOfNamespace('')['str::first']).toEqual({
      id: 'str::first',
      name: 'First name',
      display_type: 'text',
      liquid_name: 'people.first-name',
    });
    expect(fieldsOfNamespace('')['idt::o']).toEqual({
      id: 'idt::o',
      name: 'Organization ID',
      display_type: 'id',
      liquid_name: 'people.account',
      read_only: true,
    });
    expect(fieldsOfNamespace('')['act::c']).toMatchObject({
      id: 'act::c',
      name: 'Email clicked',
      display_type: 'activity',
      attributes: expect.arrayContaining([
        { id: 'str::url', name: 'URL', display_type: 'text' },
      ]) as unknown,
    });
    expect(fieldsOfNamespace('cm')).toEqual({
      'str:cm:shoe-size': {
        id: 'str:cm:shoe-size',
        name: 'Shoe size',
        display_type: 'text',
        liquid_name: 'people.custom.shoe-size',
      },
      'act:cm:bought': {
        id: 'act:cm:bought',
        name: 'Bought',
        display_type: 'activity',
        attributes: [
          { id: 'str:cm:item', name: 'Item', display_type: 'text' },
          { id: 'int:cm:price', name: 'Price', display_type: 'currency' },
          { id: 'tme:cm:at', name: 'At', display_type: 'time' },
        ],
      },
    });
    expect(fieldsOfNamespace('o')['str:o:website']).toEqual({
      id: 'str:o:website',
      name: 'Website',
      display_type: 'link',
      liquid_name: 'account.website',
    });
    expect(fieldsOfNamespace('oc')).toEqual({
      'int:oc:revenue': {
        id: 'int:oc:revenue',
        name: 'Revenue',
        display_type: 'integer',
        liquid_name: 'account.custom.revenue',
      },
    });
  });

  it('answers only the namespaces asked, and leaves out those the instance has none of', async () => {
    const response = await call('/v1/instance-schema/get', {
      key: KEY,
      body: { namespaces: ['oc', 'sf', 'cm', 'oc'] },
    });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body.namespaces as Body)).toEqual(['oc', 'cm']);
    const whole = await call('/v1/instance-schema/get', { key: KEY, body: {} });
    expect(Object.keys(whole.body.namespaces as Body).sort()).toEqual(['', 'cm', 'o', 'oc']);
  });

  it('gives each instance its own schema (an activity defined through the API included)', async () => {
    const defined = await call('/v1/definitions/activity/create', {
      key: KEY_OTHER,
      body: { id: 'act:cm:signed-up', name: 'Signed up' },
    });
    expect([200, 409]).toContain(defined.status);
    const other = await call('/v1/instance-schema/get', {
      key: KEY_OTHER,
      body: { namespaces: ['cm'] },
    });
    expect(other.body.namespaces).toEqual({
      cm: {
        id: 'cm',
        fields: {
          'act:cm:signed-up': {
            id: 'act:cm:signed-up',
            name: 'Signed up',
            display_type: 'activity',
            attributes: [],
          },
        },
      },
    });
  });

  it.each([
    [{ namespaces: 'cm' }, 'namespaces: '],
    [{ namespaces: [1] }, 'namespaces[0]: '],
    [{ namespaces: ['x'.repeat(65)] }, 'namespaces[0]: expected a namespace ID'],
  ])('refuses %j naming the member', async (body, message) => {
    const response = await call('/v1/instance-schema/get', { key: KEY, body });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain(message);
  });
});

describe('find_strategy 2 ("all")', () => {
  /** A person holding both keys, and one holding only the email of another pair. */
  async function pair() {
    const email = uniqueEmail('all');
    const ei = `ei-${email}`;
    const [both] = await merge(KEY, {
      people: [{ fields: { 'str::email': email, 'str::ei': ei } }],
    });
    return { email, ei, id: both?.person_id ?? '' };
  }

  it('merges into the person holding every value given (data source default)', async () => {
    const { email, ei, id } = await pair();
    const [entry] = await merge(KEY_ALL, {
      people: [{ fields: { 'str::email': email, 'str::ei': ei, 'str::first': 'Both' } }],
    });
    expect(entry).toEqual({ person_id: id, status: 'merged' });
    expect(await fieldsOf(KEY, id, ['str::first'])).toEqual({ 'str::first': 'Both' });
  });

  it('matches nobody when the values belong to different people, or one to nobody', async () => {
    const a = await pair();
    const b = await pair();
    const response = await call('/v1/person/merge', {
      key: KEY_ALL,
      body: {
        people: [
          { fields: { 'str::email': a.email, 'str::ei': b.ei, 'str::first': 'Mixed' } },
          { fields: { 'str::email': a.email, 'str::ei': `new-${a.ei}`, 'str::first': 'Half' } },
        ],
      },
    });
    // Creating either would take a value someone else holds: both are refused, nothing written.
    expect(response.status).toBe(400);
    const details = response.body.details as { status: string; error: string }[];
    expect(details.map((d) => d.status)).toEqual(['invalid', 'invalid']);
    expect(details[1]?.error).toMatch(/already belongs to another person .*find_strategy 2/);
    expect(await fieldsOf(KEY, a.id, ['str::first'])).toEqual({});
    // find_strategy 0 falls through to the email and merges the second into a.
    const [fallback] = await merge(KEY_ALL, {
      people: [{ fields: { 'str::email': a.email, 'str::ei': `new-${a.ei}` } }],
      find_strategy: 0,
    });
    expect(fallback).toEqual({ person_id: a.id, status: 'merged' });
  });

  it('with one value given, finds its holder; with skip_non_existing, skips a mismatch', async () => {
    const { email, ei, id } = await pair();
    const [byEi] = await merge(KEY_ALL, { people: [{ fields: { 'str::ei': ei } }] });
    expect(byEi).toEqual({ person_id: id, status: 'merged' });
    const [skipped] = await merge(KEY_ALL, {
      people: [{ fields: { 'str::email': email, 'str::ei': `x-${ei}` } }],
      skip_non_existing: true,
    });
    expect(skipped).toEqual({ status: 'skipped' });
    const created = uniqueEmail('fresh');
    const [fresh] = await merge(KEY_ALL, {
      people: [{ fields: { 'str::email': created, 'str::ei': `ei-${created}` } }],
    });
    expect(fresh?.status).toBe('created');
  });

  it('applies to queued merges, activities, transactional recipients and organizations', async () => {
    const { email, ei, id } = await pair();
    const other = await pair();
    const queued = await call('/v1/person/merge', {
      key: KEY,
      body: {
        async: true,
        merge_by: ['str::ei', 'str::email'],
        find_strategy: 2,
        people: [
          { fields: { 'str::email': email, 'str::ei': ei, 'str::last': 'Queued' } },
          { fields: { 'str::email': email, 'str::ei': other.ei } },
        ],
      },
    });
    expect(queued.status).toBe(200);
    const done = await until('queued merge', async () => {
      const state = await call('/v1/async/get', {
        key: KEY,
        body: { request_id: queued.body.request_id },
      });
      return state.body.status === 'done' ? state.body : undefined;
    });
    expect((done.result as { people: Body[] }).people).toEqual([
      { person_id: id, status: 'merged' },
      expect.objectContaining({ status: 'invalid' }),
    ]);

    const activities = await call('/v1/activities/create', {
      key: KEY_ALL,
      body: {
        activities: [
          { activity_id: 'act:cm:bought', fields: { 'str::email': email, 'str::ei': ei } },
          { activity_id: 'act:cm:bought', fields: { 'str::email': email, 'str::ei': other.ei } },
        ],
      },
    });
    expect(activities.status).toBe(200);
    expect(activities.body.activities).toEqual([
      expect.objectContaining({ person_id: id, person_status: 'merged', status: 'ingested' }),
      expect.objectContaining({ person_status: 'invalid', status: 'invalid' }),
    ]);

    const sent = await call('/v1/transactional/send', {
      key: KEY,
      body: {
        asset: { from_email: 'team@mail.beyond.test', subject: 'Hi', html_body: '<p>Hi</p>' },
        merge_by: ['str::ei', 'str::email'],
        find_strategy: 2,
        skip_non_existing: true,
        emails: [
          { fields: { 'str::email': email, 'str::ei': ei } },
          { fields: { 'str::email': email, 'str::ei': other.ei } },
        ],
      },
    });
    expect(sent.status).toBe(202);
    expect(sent.body.emails).toEqual([
      expect.objectContaining({ person_id: id, contact_status: 'merged', email_status: 'queued' }),
      expect.objectContaining({ email_status: 'skipped' }),
    ]);

    const name = `All ${email}`;
    const website = `https://${email.replace('@', '.')}`;
    const organizations = async (records: Body[]) => {
      const response = await call('/v1/organizations/merge', {
        key: KEY,
        body: {
          organizations: records.map((fields) => ({ fields })),
          merge_by: ['str:o:name', 'str:o:website'],
          find_strategy: 2,
        },
      });
      return response.body;
    };
    const [created] = (await organizations([{ 'str:o:name': name, 'str:o:website': website }]))
      .organizations as Body[];
    const answer = await organizations([
      { 'str:o:name': name, 'str:o:website': website, 'str:o:industry': 'Both' },
      { 'str:o:name': name, 'str:o:website': `${website}/other` },
    ]);
    expect(answer.organizations).toEqual([
      { organization_id: created?.organization_id, status: 'merged' },
      expect.objectContaining({ status: 'invalid' }),
    ]);
  });

  it('is refused outside 0-2, naming find_strategy', async () => {
    const response = await call('/v1/person/merge', {
      key: KEY,
      body: { people: [{ fields: { 'str::email': uniqueEmail() } }], find_strategy: 3 },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('find_strategy');
  });
});
