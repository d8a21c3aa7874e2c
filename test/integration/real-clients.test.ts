import { beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { tableName } from '../../shared/resources.js';
import { adminEnv, run } from './cli.js';
import { sentMail, until } from './emails.js';
import { activitiesOf, listedEventually, merge, mergeOne, uniqueEmail } from './people.js';
import { call, stackDb } from './stack.js';

/**
 * What clients written for the real API call first, replayed as each sends it on
 * its first run (written from their published sources and the vendor's reference, not
 * copied): a data-warehouse import that checks its key by listing custom fields and pages
 * people by 500, a WordPress CRM plugin that syncs tags and fields on setup, the account-copy
 * script and the PHP SDK that create fields before merging people, a Go client that defines
 * activities in the real shape, and the workflow tool's "new contact" trigger.
 */
const KEY = 'test-key-32-characters-or-more-realc';
const KEY_OTHER = 'test-key-32-characters-or-more-realc-other';
const KEY_FULL = 'test-key-32-characters-or-more-realc-full';
const KEY_TAGS = 'test-key-32-characters-or-more-realc-tags';
const FAST = { requests_per_second: 5000, burst: 10000 };

const CONFIG = {
  instances: [
    {
      id: 'realc',
      name: 'Real clients',
      region: 'default',
      plan: 'business',
      transactional_email: true,
      sending_domains: ['mail.realc.test'],
      rate_limit: FAST,
      data_sources: [{ name: 'Web', api_key: KEY, merge_by: ['str::email'] }],
      person_fields: [{ id: 'str:cm:shoe-size', name: 'Shoe size' }],
      organization_fields: [{ id: 'int:oc:revenue', name: 'Revenue' }],
      // Its activities move last seen (`l`).
      activities: [{ id: 'act:cm:visited', name: 'Visited', track_as_touch: true }],
    },
    {
      id: 'realc-other',
      name: 'Real clients, another instance',
      region: 'default',
      plan: 'business',
      rate_limit: FAST,
      data_sources: [{ name: 'Web', api_key: KEY_OTHER }],
    },
    {
      id: 'realc-full',
      name: 'Ninety-five fields',
      region: 'default',
      plan: 'business',
      rate_limit: FAST,
      data_sources: [{ name: 'Web', api_key: KEY_FULL }],
      person_fields: Array.from({ length: 95 }, (_, i) => ({
        id: `str:cm:configured-${i}`,
        name: `Configured ${i}`,
      })),
    },
    {
      id: 'realc-tags',
      name: 'Tag counts',
      region: 'default',
      plan: 'business',
      rate_limit: FAST,
      data_sources: [{ name: 'Web', api_key: KEY_TAGS }],
    },
  ],
};

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-realc-')), 'config.json');
  writeFileSync(file, JSON.stringify(CONFIG));
  const applied = await run(['local/admin.ts', 'apply', file, '--settle', '0'], adminEnv());
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.stderr}`);
}, 60_000);

type Body = Record<string, unknown>;
interface Contact {
  id: string;
  fields?: Record<string, unknown>;
}
interface Tag {
  id: number;
  name: string;
  count: number;
  subscribers: number;
  sms_opted_in: number;
}

async function ok(path: string, key: string, body?: unknown, method = 'POST') {
  const response = await call(path, { key, body, method });
  expect({ path, status: response.status, body: response.body }).toMatchObject({ status: 200 });
  return response.body;
}

async function contacts(key: string, body: Body): Promise<Contact[]> {
  return (await ok('/v1/person/get', key, body)).contacts as Contact[];
}

async function tags(key: string, body?: Body): Promise<Tag[]> {
  return (await ok('/v1/tags/get', key, body)) as unknown as Tag[];
}

const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000).toISOString();

describe('first runs of the integrations', () => {
  it('the warehouse import: custom-field/get with no body as its key check, then pages of 500', async () => {
    const fields = await ok('/v1/person/custom-field/get', KEY);
    expect(fields.fields).toContainEqual({
      field: {
        id: 'str:cm:shoe-size',
        name: 'Shoe size',
        display_type: 'text',
        liquid_name: 'people.custom.shoe-size',
      },
      tracked_value: false,
    });
    // Only custom fields are listed.
    const ids = (fields.fields as { field: { id: string } }[]).map((entry) => entry.field.id);
    expect(ids.every((id) => id.includes(':cm:'))).toBe(true);
    const email = uniqueEmail('import');
    await mergeOne(KEY, { fields: { 'str::email': email, 'str:cm:shoe-size': '9' } });
    const page = await ok('/v1/person/get', KEY, {
      limit: 500,
      fields: ['str::email', 'str:cm:shoe-size', 'c', 'l', 'u4s::t'],
      sort_by_field_id: 'c',
      sort_order: 'asc',
    });
    expect((page.contacts as Contact[]).length).toBeLessThanOrEqual(500);
    expect((page.contacts as Contact[]).find((c) => c.fields?.['str::email'] === email)).toEqual(
      expect.objectContaining({
        fields: expect.objectContaining({ 'str:cm:shoe-size': '9', c: expect.any(String) }),
      }),
    );
    // 501 is past the documented range, and says so.
    const over = await call('/v1/person/get', { key: KEY, body: { limit: 501 } });
    expect(over.status).toBe(400);
    expect(over.body.error).toContain('limit');
  });

  it('the WordPress plugin: tags/get with {}, then a tag by ID or name in u4s::t and filters', async () => {
    const [vip, news] = [`VIP ${unique()}`, `News ${unique()}`];
    const email = uniqueEmail('wp');
    const person = await mergeOne(KEY, { fields: { 'str::email': email }, tags: [vip, news] });
    const listed = await tags(KEY, {});
    const tag = listed.find((t) => t.name === vip);
    expect(tag).toMatchObject({ id: expect.any(Number), count: 1, subscribers: 1 });
    expect(listed.find((t) => t.name === news)?.id).not.toBe(tag?.id);
    // The ID is stable: listed again (and by a substring of its name, any case), the same.
    const searched = await tags(KEY, { q: vip.slice(0, 6).toLowerCase() });
    expect(searched.map((t) => [t.id, t.name])).toEqual([[tag?.id, vip]]);
    for (const value of [tag?.id, vip]) {
      // Tags are found from the field index, a moment behind the merge.
      const found = await listedEventually(
        KEY,
        {
          limit: 10,
          fields: ['str::email', 'u4s::t'],
          filter: { $and: [{ '$u4s::is': { field_id: 'u4s::t', value } }] },
        },
        (listed) => listed.length === 1,
      );
      expect(found.map((c) => c.id)).toEqual([person.person_id]);
      expect(found[0]?.fields?.['str::email']).toBe(email);
      expect([...((found[0]?.fields?.['u4s::t'] as string[] | undefined) ?? [])].sort()).toEqual(
        [vip, news].sort(),
      );
    }
  });

  it('the workflow tool: the "new contact" trigger poll answers 200, newest first', async () => {
    const first = await mergeOne(KEY, { fields: { 'str::email': uniqueEmail('trigger') } });
    const second = await mergeOne(KEY, {
      fields: { 'str::email': uniqueEmail('trigger'), 'bol::p': false },
    });
    const page = await contacts(KEY, {
      limit: 50,
      sort_by_field_id: 'c',
      sort_order: 'desc',
      fields: [
        'str::first',
        'str::last',
        'str::email',
        'u4s::t',
        'str::u-ctx',
        'str::s-ctx',
        'str::soi-ctx',
        'str::soo-ctx',
        'c',
      ],
    });
    const ids = page.map((c) => c.id);
    expect(ids.indexOf(second.person_id as string)).toBeLessThan(
      ids.indexOf(first.person_id as string),
    );
    const created = page.map((c) => c.fields?.c as string);
    expect([...created].sort().reverse()).toEqual(created);
    // `c` and `l` in filters: people created since the first of the two.
    const since = page.find((c) => c.id === first.person_id)?.fields?.c as string;
    const recent = await contacts(KEY, {
      limit: 500,
      filter: {
        $and: [
          { '$tme::absolute_after': { field_id: 'c', value: since } },
          { $has_no_value: { field_id: 'l' } },
        ],
      },
    });
    expect(recent.map((c) => c.id)).toContain(second.person_id);
    expect(recent.map((c) => c.id)).not.toContain(first.person_id);
  });

  it('sorts by `l` (last seen) in either order, people never seen last', async () => {
    const [older, newer, never] = ['older', 'newer', 'never'].map((label) => uniqueEmail(label));
    const seen: [string, string][] = [
      [older as string, daysAgo(3)],
      [newer as string, daysAgo(1)],
    ];
    await ok('/v1/activities/create', KEY, {
      activities: seen.map(([email, created]) => ({
        activity_id: 'act:cm:visited',
        fields: { 'str::email': email },
        created,
      })),
      merge_by: ['str::email'],
    });
    await mergeOne(KEY, { fields: { 'str::email': never } });
    const ours = {
      $or: [older, newer, never].map((email) => ({
        '$str::is': { field_id: 'str::email', value: email },
      })),
    };
    const sorted = (order: 'asc' | 'desc') =>
      contacts(KEY, {
        limit: 10,
        sort_by_field_id: 'l',
        sort_order: order,
        fields: ['str::email', 'l'],
        filter: ours,
      });
    // Last seen is moved off the request path (the activities' stream): wait for both.
    await until('last seen of both visitors', async () => {
      const page = await sorted('desc');
      return page.filter((c) => c.fields?.l !== undefined).length === 2 ? true : undefined;
    });
    const at = Object.fromEntries(seen);
    const read = (page: Contact[]) =>
      page.map((c) => [c.fields?.['str::email'], c.fields?.l ?? null]);
    expect(read(await sorted('desc'))).toEqual([
      [newer, at[newer as string]],
      [older, at[older as string]],
      [never, null],
    ]);
    expect(read(await sorted('asc'))).toEqual([
      [older, at[older as string]],
      [newer, at[newer as string]],
      [never, null],
    ]);
  });

  it('the SDK and the account-copy script: fields created, then merged into, by type', async () => {
    const name = `Plan ${unique()}`;
    const created = await ok('/v1/person/custom-field/create', KEY, {
      name,
      type: 'single_select',
      values: ['Free', 'Pro'],
    });
    const fieldId = `str:cm:${name.toLowerCase().replace(' ', '-')}`;
    expect(created).toEqual({
      name,
      field_id: fieldId,
      display_type: 'single_select',
      values: ['Free', 'Pro'],
    });
    const multi = await ok('/v1/person/custom-field/create', KEY, {
      name: `Interests ${unique()}`,
      type: 'multi_select',
      values: ['Tea', 'Cake', 'Jam'],
    });
    const total = await ok('/v1/person/custom-field/create', KEY, {
      name: `Order total ${unique()}`,
      type: 'decimal',
    });
    expect(multi.field_id).toMatch(/^sst:cm:interests-/);
    expect(total.field_id).toMatch(/^int:cm:order-total-/);
    const [good, offList] = await merge(KEY, {
      people: [
        {
          fields: {
            'str::email': uniqueEmail('sdk'),
            [fieldId]: 'Pro',
            [multi.field_id as string]: ['Tea', 'Jam'],
            [total.field_id as string]: 12_500,
          },
        },
        { fields: { 'str::email': uniqueEmail('sdk'), [fieldId]: 'Enterprise' } },
      ],
    });
    expect(good?.status).toBe('created');
    expect(offList).toMatchObject({ status: 'invalid', error: expect.stringContaining(fieldId) });
    const [read] = await listedEventually(
      KEY,
      {
        limit: 1,
        fields: [fieldId, multi.field_id, total.field_id],
        filter: { '$str::is': { field_id: fieldId, value: 'Pro' } },
      },
      (listed) => listed.length === 1,
    );
    expect(read?.fields).toEqual({
      [fieldId]: 'Pro',
      [multi.field_id as string]: ['Tea', 'Jam'],
      [total.field_id as string]: 12_500,
    });
    // Options added, then the field as listed.
    expect(
      await ok(
        '/v1/person/custom-field/update',
        KEY,
        { field_id: fieldId, add_values: ['Team'] },
        'PUT',
      ),
    ).toEqual({ field_id: fieldId, values: ['Free', 'Pro', 'Team'], track_changes: false });
    const listed = (await ok('/v1/person/custom-field/get', KEY, {})).fields as Body[];
    expect(listed).toContainEqual({
      field: {
        id: fieldId,
        name,
        display_type: 'single_select',
        liquid_name: `people.custom.${fieldId.slice('str:cm:'.length)}`,
        dic_items: ['Free', 'Pro', 'Team'],
      },
      tracked_value: false,
    });
  });

  it('refuses bad custom fields with a 400 naming the member, and writes nothing', async () => {
    const refusals: [string, Body, string, string?][] = [
      ['/v1/person/custom-field/create', { name: 'Shoe Size', type: 'text' }, 'name'],
      ['/v1/person/custom-field/create', { name: `X ${unique()}`, type: 'colour' }, 'type'],
      [
        '/v1/person/custom-field/create',
        { name: `X ${unique()}`, type: 'text', values: ['a'] },
        'values',
      ],
      ['/v1/person/custom-field/create', {}, 'name'],
      [
        '/v1/person/custom-field/update',
        { field_id: 'str:oc:x', values: ['a'] },
        'field_id',
        'PUT',
      ],
      [
        '/v1/person/custom-field/update',
        { field_id: 'str:cm:shoe-size', add_values: ['a'] },
        'add_values',
        'PUT',
      ],
      ['/v1/accounts/custom-field/update', { field_id: 'str:cm:shoe-size' }, 'field_id', 'PUT'],
    ];
    const before = await ok('/v1/person/custom-field/get', KEY);
    for (const [path, body, member, method] of refusals) {
      const response = await call(path, { key: KEY, body, method: method ?? 'POST' });
      expect({ path, body, status: response.status }).toEqual({ path, body, status: 400 });
      expect(response.body.error).toContain(member);
    }
    expect(await ok('/v1/person/custom-field/get', KEY)).toEqual(before);
  });

  it('records the changes of a tracked field as activities, with the old and new value', async () => {
    const created = await ok('/v1/person/custom-field/create', KEY, {
      name: `Tier ${unique()}`,
      type: 'text',
      track_changes: true,
    });
    const fieldId = created.field_id as string;
    const email = uniqueEmail('tracked');
    const person = await mergeOne(KEY, { fields: { 'str::email': email, [fieldId]: 'bronze' } });
    await mergeOne(KEY, { fields: { 'str::email': email, [fieldId]: 'silver' } });
    const changes = (await activitiesOf(KEY, person.person_id as string)).filter(
      (activity) => activity.field_id === 'act::field-changed',
    );
    expect(changes.map((activity) => activity.attr)).toContainEqual({
      'str::field-id': fieldId,
      old: 'bronze',
      new: 'silver',
    });
  });

  it('organization fields under both names: flat list, :oc: IDs, each name its liquid_name', async () => {
    const created = await ok('/v1/accounts/custom-field/create', KEY, {
      name: `Industry ${unique()}`,
      type: 'text',
    });
    const fieldId = created.field_id as string;
    expect(fieldId).toMatch(/^str:oc:industry-/);
    const name = fieldId.slice('str:oc:'.length);
    const accounts = (await ok('/v1/accounts/custom-field/get', KEY)).fields as Body[];
    const organizations = (await ok('/v1/organizations/custom-field/get', KEY, {}))
      .fields as Body[];
    expect(accounts).toContainEqual({
      id: fieldId,
      name: created.name,
      display_type: 'text',
      liquid_name: `account.custom.${name}`,
    });
    expect(organizations).toContainEqual(
      expect.objectContaining({ id: fieldId, liquid_name: `organization.custom.${name}` }),
    );
    const merged = await ok('/v1/organizations/merge', KEY, {
      organizations: [{ fields: { 'str:o:name': `Org ${unique()}`, [fieldId]: 'Retail' } }],
      merge_by: ['str:o:name'],
    });
    expect(merged.organizations).toEqual([expect.objectContaining({ status: 'created' })]);
  });

  it('empty bodies are accepted wherever every member is optional', async () => {
    for (const path of [
      '/v1/person/custom-field/get',
      '/v1/accounts/custom-field/get',
      '/v1/organizations/custom-field/get',
      '/v1/tags/get',
      '/v1/instance-schema/get',
      '/v1/person/get',
      '/v1/organizations/get',
      '/v1/accounts/get',
    ]) {
      for (const rawBody of [undefined, '']) {
        const response = await call(path, { key: KEY, ...(rawBody === '' ? { rawBody } : {}) });
        expect({ path, rawBody, status: response.status }).toEqual({ path, rawBody, status: 200 });
      }
    }
  });
});

describe('fields created through the API are configuration fields at once', () => {
  it('merged into, listed, filtered on, in instance-schema/get and rendered in Liquid, no cache wait', async () => {
    // Every function involved has the instance's configuration cached (for a minute) first.
    const warm = uniqueEmail('warm');
    await mergeOne(KEY, { fields: { 'str::email': warm } });
    await contacts(KEY, { limit: 1, fields: ['str::email'] });
    await ok('/v1/instance-schema/get', KEY, { namespaces: ['cm'] });
    const asset = (html: string) => ({
      from_email: 'team@mail.realc.test',
      from_name: 'Team',
      subject: 'Hello',
      email_name: 'colour',
      html_body: `<html><body>${html}</body></html>`,
    });
    const warmSend = await call('/v1/transactional/send', {
      key: KEY,
      body: { asset: asset('<p>hi</p>'), emails: [{ fields: { 'str::email': warm } }] },
    });
    expect(warmSend.status).toBe(202);

    const created = await ok('/v1/person/custom-field/create', KEY, {
      name: `Favourite colour ${unique()}`,
      type: 'text',
    });
    const fieldId = created.field_id as string;
    const liquid = `people.custom.${fieldId.slice('str:cm:'.length)}`;
    const email = uniqueEmail('colour');
    const person = await mergeOne(KEY, { fields: { 'str::email': email, [fieldId]: 'teal' } });
    expect(person.status).toBe('created');
    const found = await listedEventually(
      KEY,
      {
        limit: 5,
        fields: ['str::email', fieldId],
        filter: { '$str::is': { field_id: fieldId, value: 'TEAL' } },
      },
      (listed) => listed.length === 1,
    );
    expect(found).toEqual([
      { id: person.person_id, fields: { 'str::email': email, [fieldId]: 'teal' } },
    ]);
    const schema = await ok('/v1/instance-schema/get', KEY, { namespaces: ['cm'] });
    expect(schema).toMatchObject({
      namespaces: { cm: { fields: { [fieldId]: { id: fieldId, liquid_name: liquid } } } },
    });
    const sent = await call('/v1/transactional/send', {
      key: KEY,
      body: {
        asset: asset(`<p>Colour: {{ ${liquid} }}</p>`),
        emails: [{ fields: { 'str::email': email } }],
      },
    });
    expect(sent.status).toBe(202);
    const [entry] = sent.body.emails as { message_id: string; email_status: string }[];
    expect(entry?.email_status).toBe('queued');
    const mail = await sentMail('realc', entry?.message_id as string);
    expect(mail.html).toContain('Colour: teal');
  });

  it('100 concurrent creates on an instance with 95 custom fields make exactly 5', async () => {
    const run = unique();
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        call('/v1/person/custom-field/create', {
          key: KEY_FULL,
          body: { name: `Concurrent ${run} ${i}`, type: 'text' },
        }),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    // One item holds the schema: 100 conditional writes race on it. Under injected faults
    // (integration-faults) a create may still be losing that race when its retry budget
    // ends: a 503 that wrote nothing (DESIGN.md's errors), which the listing below proves.
    const unavailable = statuses.filter((status) => status === 503).length;
    expect(unavailable).toBeLessThanOrEqual(process.env.CDP_TEST_STACK === 'faults' ? 100 : 0);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 400)).toHaveLength(95 - unavailable);
    for (const refused of answers.filter((answer) => answer.status === 400)) {
      expect(refused.body.error).toContain('100 custom person fields');
    }
    const listed = (await ok('/v1/person/custom-field/get', KEY_FULL)).fields as Body[];
    expect(listed).toHaveLength(100);
  });
});

describe('tags/get counts', () => {
  it('equal a recount after a concurrent mix of tagging, untagging, archiving and restoring', async () => {
    const names = ['alpha', 'beta', 'gamma'];
    const emails = Array.from({ length: 24 }, (_, i) => uniqueEmail(`tc${i}`));
    const people = await merge(KEY_TAGS, {
      people: emails.map((email, i) => ({
        fields: { 'str::email': email, 'bol::p': i % 3 !== 0 },
        tags: names.filter((_, t) => (i + t) % 2 === 0),
      })),
    });
    const ids = people.map((entry) => entry.person_id as string);
    const lifecycle = (action: 'archive' | 'restore', chosen: string[]) =>
      call(`/v1/person/${action}`, {
        key: KEY_TAGS,
        method: 'PUT',
        body: { inclusion_ids: chosen },
      });
    // A merge into a person archived meanwhile is refused (a 400 when it is the only record).
    const tagMerge = async (record: Body) => {
      const response = await call('/v1/person/merge', {
        key: KEY_TAGS,
        body: { people: [record] },
      });
      expect([200, 400]).toContain(response.status);
    };
    const work: Promise<unknown>[] = [];
    emails.forEach((email, i) => {
      const tag = names[i % 3] as string;
      if (i % 4 === 0) work.push(tagMerge({ fields: { 'str::email': email }, tags: [tag] }));
      if (i % 4 === 1) {
        work.push(tagMerge({ fields: { 'str::email': email }, unset_tags: [tag] }));
      }
      if (i % 4 === 2) {
        work.push(tagMerge({ fields: { 'str::email': email, 'bol::p': i % 8 === 2 } }));
      }
      // The same person tagged twice at once, and untagged while it is tagged.
      if (i % 6 === 5) {
        work.push(tagMerge({ fields: { 'str::email': email }, tags: ['delta'] }));
        work.push(tagMerge({ fields: { 'str::email': email }, tags: ['delta'] }));
        work.push(tagMerge({ fields: { 'str::email': email }, unset_tags: ['beta'] }));
      }
    });
    work.push(lifecycle('archive', ids.slice(0, 6)));
    work.push(lifecycle('archive', ids.slice(18, 22)));
    await Promise.all(work);
    await lifecycle('restore', ids.slice(18, 20));

    // The recount: every person listed (archived ones are not), with their tags and permission.
    const everyone = await contacts(KEY_TAGS, { limit: 500, fields: ['u4s::t', 'bol::p'] });
    const expected = new Map<string, { count: number; subscribers: number }>();
    for (const person of everyone) {
      for (const name of (person.fields?.['u4s::t'] as string[] | undefined) ?? []) {
        const total = expected.get(name) ?? { count: 0, subscribers: 0 };
        total.count += 1;
        if (person.fields?.['bol::p'] === true) total.subscribers += 1;
        expected.set(name, total);
      }
    }
    const listed = await tags(KEY_TAGS);
    expect(
      Object.fromEntries(listed.map((tag) => [tag.name, [tag.count, tag.subscribers]])),
    ).toEqual(
      Object.fromEntries(
        [...new Set([...names, 'delta', ...expected.keys()])].map((name) => [
          name,
          [expected.get(name)?.count ?? 0, expected.get(name)?.subscribers ?? 0],
        ]),
      ),
    );
  });
});

describe('activity definitions in the real shape', () => {
  it('create, a second is a 409, record, modify, delete: recorded activities stay readable', async () => {
    const name = `Watched Video ${unique()}`;
    const request = {
      name,
      icon_id: 'video-illustration-icon',
      track_conversion_value: false,
      touch: true,
      filterable: true,
      visible_in_feeds: true,
      display_style: { type: 'activity' },
      attributes: [
        { name: 'Video Title', display_type: 'text', field_id: 'do-not-map' },
        { name: 'Seconds', display_type: 'integer', field_id: 'do-not-map' },
        { name: 'Size', display_type: 'text', field_id: 'str:cm:shoe-size' },
      ],
    };
    const created = await ok('/v1/definitions/activity/create', KEY, request);
    const activityId = `act:cm:${name.toLowerCase().replace(/ /g, '-')}`;
    expect(created.custom_activity).toMatchObject({
      name,
      activity_field_id: activityId,
      icon_id: 'video-illustration-icon',
      touch: true,
      track_conversion_value: false,
      attributes: [
        { name: 'Video Title', field_id: 'str:cm:video-title', display_type: 'text' },
        { name: 'Seconds', field_id: 'int:cm:seconds', display_type: 'integer' },
        { name: 'Size', field_id: 'str:cm:size', display_type: 'text' },
      ],
    });
    const again = await call('/v1/definitions/activity/create', { key: KEY, body: request });
    expect(again.status).toBe(409);
    expect(again.body.error).toContain(activityId);

    const email = uniqueEmail('watch');
    const recorded = await ok('/v1/activities/create', KEY, {
      activities: [
        {
          activity_id: activityId,
          attributes: { 'str:cm:video-title': 'Intro', 'int:cm:seconds': 42, 'str:cm:size': '10' },
          fields: { 'str::email': email },
        },
      ],
      merge_by: ['str::email'],
    });
    const [entry] = recorded.activities as { person_id: string; status: string }[];
    expect(entry?.status).toBe('ingested');
    // "Map to CRM": the mapped attribute is written to the person field.
    const [person] = await contacts(KEY, {
      limit: 1,
      fields: ['str:cm:shoe-size'],
      filter: { '$str::is': { field_id: 'str::email', value: email } },
    });
    expect(person?.fields).toEqual({ 'str:cm:shoe-size': '10' });

    const modified = await ok(
      '/v1/definitions/activity/modify',
      KEY,
      { activity_field_id: activityId, touch: false },
      'PUT',
    );
    expect(modified.custom_activity).toMatchObject({ activity_field_id: activityId, touch: false });
    expect(
      await ok('/v1/definitions/activity/delete', KEY, { activity_field_id: activityId }, 'DELETE'),
    ).toEqual({ archived_activity: activityId });
    expect(
      (await activitiesOf(KEY, entry?.person_id as string)).find((a) => a.field_id === activityId)
        ?.attr,
    ).toMatchObject({ 'str:cm:video-title': 'Intro', 'int:cm:seconds': 42 });
    const refused = await call('/v1/activities/create', {
      key: KEY,
      body: {
        activities: [{ activity_id: activityId, fields: { 'str::email': email } }],
        merge_by: ['str::email'],
      },
    });
    expect(refused.status).toBe(400);
  });
});

describe('suppression_list_field_id', () => {
  it('refuses a suppressed address (status suppressed, not merged) and merges the others', async () => {
    const [suppressed, fresh] = [uniqueEmail('suppressed'), uniqueEmail('fresh')];
    const { db } = stackDb();
    await new DynamoEmailStore(db, { emails: tableName('default', 'emails') }).suppress(
      'realc',
      suppressed,
      'bounce',
      '0'.repeat(24),
      new Date().toISOString(),
    );
    const body = (people: string[]) => ({
      people: people.map((email) => ({ fields: { 'str::email': email } })),
      merge_by: ['str::email'],
      suppression_list_field_id: 'str::email',
    });
    const [refused, created] = await merge(KEY, body([suppressed, fresh]));
    expect(refused).toEqual({ status: 'suppressed', error: expect.stringContaining('str::email') });
    expect(created?.status).toBe('created');
    const alone = await call('/v1/person/merge', { key: KEY, body: body([suppressed]) });
    expect(alone.status).toBe(400);
    expect(alone.body.details).toEqual([
      expect.objectContaining({ index: 0, status: 'suppressed' }),
    ]);
    expect(
      await contacts(KEY, {
        limit: 1,
        filter: { '$str::is': { field_id: 'str::email', value: suppressed } },
      }),
    ).toEqual([]);
    const badField = await call('/v1/person/merge', {
      key: KEY,
      body: { ...body([fresh]), suppression_list_field_id: 'bol::p' },
    });
    expect(badField.status).toBe(400);
    expect(badField.body.error).toContain('suppression_list_field_id');
  });
});

describe('tenant isolation of the new routes', () => {
  it("an instance sees none of another's fields, tags or definitions, and cannot change them", async () => {
    const field = await ok('/v1/person/custom-field/create', KEY, {
      name: `Private ${unique()}`,
      type: 'single_select',
      values: ['A'],
    });
    const tag = `Private ${unique()}`;
    await mergeOne(KEY, { fields: { 'str::email': uniqueEmail('iso') }, tags: [tag] });
    const tagId = (await tags(KEY)).find((t) => t.name === tag)?.id;
    expect(tagId).toEqual(expect.any(Number));
    const definition = `act:cm:private-${unique()}`;
    await ok('/v1/definitions/activity/create', KEY, { id: definition, name: 'Private' });

    const theirFields = (await ok('/v1/person/custom-field/get', KEY_OTHER)).fields as {
      field: { id: string };
    }[];
    expect(theirFields.map((entry) => entry.field.id)).not.toContain(field.field_id);
    expect((await tags(KEY_OTHER)).map((t) => t.name)).not.toContain(tag);
    expect(
      await contacts(KEY_OTHER, { filter: { '$u4s::is': { field_id: 'u4s::t', value: tagId } } }),
    ).toEqual([]);
    const changes: [string, string, Body][] = [
      ['/v1/person/custom-field/update', 'PUT', { field_id: field.field_id, add_values: ['B'] }],
      ['/v1/definitions/activity/modify', 'PUT', { activity_field_id: definition, touch: true }],
      ['/v1/definitions/activity/delete', 'DELETE', { activity_field_id: definition }],
    ];
    for (const [path, method, body] of changes) {
      const response = await call(path, { key: KEY_OTHER, method, body });
      expect({ path, status: response.status }).toEqual({ path, status: 400 });
    }
    // Theirs unchanged.
    const ours = (await ok('/v1/person/custom-field/get', KEY)).fields as {
      field: { id: string; dic_items?: string[] };
    }[];
    expect(ours.find((entry) => entry.field.id === field.field_id)?.field.dic_items).toEqual(['A']);
    const schema = await ok('/v1/instance-schema/get', KEY, { namespaces: ['cm'] });
    expect(schema).toMatchObject({ namespaces: { cm: { fields: { [definition]: {} } } } });
  });
});
