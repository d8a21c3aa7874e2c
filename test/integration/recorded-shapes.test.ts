import { beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminEnv, run } from './cli.js';
import { uniqueEmail } from './people.js';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { tableName } from '../../shared/resources.js';
import { call, stackDb } from './stack.js';

/**
 * The requests of real clients (a workflow tool's create-person action, an event pipeline's
 * identify and track, the PHP SDK's calls) replayed as they send them, and each answer checked
 * against the shape the recorded real answers have (`phpdevkits/ortto-sdk`,
 * `tests/Fixtures/Saloon/…`): member names, nesting and types. The recorded shapes below are
 * written here from those answers (values are ours); members we add besides are allowed.
 */
const KEY = 'test-key-32-characters-or-more-shapes';
const KEY_OTHER = 'test-key-32-characters-or-more-shapes-other';
const FAST = { requests_per_second: 5000, burst: 10000 };

const CONFIG = {
  instances: [
    {
      id: 'shapes',
      name: 'Recorded shapes',
      region: 'default',
      plan: 'business',
      // Dates sent without a zone take the instance's.
      timezone: 'Australia/Sydney',
      rate_limit: FAST,
      data_sources: [{ name: 'Web', api_key: KEY, merge_by: ['str::email'] }],
      person_fields: [
        { id: 'str:cm:plan', name: 'Plan' },
        { id: 'str:cm:member-no', name: 'Member no', unique: true },
      ],
      organization_fields: [{ id: 'int:oc:seats', name: 'Seats' }],
      activities: [
        {
          id: 'act:cm:signed-up',
          name: 'Signed up',
          display_text: 'Signed up for {{attribute.plan}}',
          attributes: [{ id: 'str:cm:plan', name: 'Plan' }],
        },
        {
          id: 'act:oc:flight-booked',
          name: 'Flight booked',
          display_text: 'Booked a flight with {{attribute.carrier}}',
          attributes: [{ id: 'str:cm:carrier', name: 'Carrier' }],
          conversion_value: true,
        },
      ],
    },
    {
      id: 'shapes-other',
      name: 'Recorded shapes, another instance',
      region: 'default',
      plan: 'business',
      rate_limit: FAST,
      data_sources: [{ name: 'Web', api_key: KEY_OTHER }],
    },
  ],
};

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-shapes-')), 'config.json');
  writeFileSync(file, JSON.stringify(CONFIG));
  const applied = await run(['local/admin.ts', 'apply', file, '--settle', '0'], adminEnv());
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.stderr}`);
}, 60_000);

type Json = null | boolean | number | string | Json[] | { [member: string]: Json };

/**
 * Whether `actual` has the recorded shape: every member the recorded answer has, of the same
 * type, nested alike (an array's entries each of its first entry's shape). Members the
 * recorded answer lacks are ours and allowed.
 */
function shapeProblems(actual: unknown, recorded: Json, path = '(body)'): string[] {
  if (recorded === null) return actual === null ? [] : [`${path}: expected null`];
  if (Array.isArray(recorded)) {
    if (!Array.isArray(actual)) return [`${path}: expected an array`];
    const [first] = recorded;
    if (first === undefined) return [];
    return actual.flatMap((entry, i) => shapeProblems(entry, first, `${path}[${i}]`));
  }
  if (typeof recorded === 'object') {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) {
      return [`${path}: expected an object`];
    }
    const members = actual as Record<string, unknown>;
    return Object.entries(recorded).flatMap(([member, value]) =>
      member in members
        ? shapeProblems(members[member], value, `${path}.${member}`)
        : [`${path}: no member ${member}`],
    );
  }
  return typeof actual === typeof recorded ? [] : [`${path}: expected a ${typeof recorded}`];
}

function expectShape(actual: unknown, recorded: Json): void {
  expect(shapeProblems(actual, recorded)).toEqual([]);
}

async function ok(path: string, body: unknown, method = 'POST', key = KEY) {
  const response = await call(path, { key, body, method });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 200 });
  return response.body;
}

async function mergePerson(fields: Record<string, unknown>): Promise<string> {
  const body = await ok('/v1/person/merge', { people: [{ fields }], merge_by: ['str::email'] });
  return (body.people as { person_id: string }[])[0]?.person_id ?? '';
}

describe('dates without a time zone', () => {
  it("the workflow tool's create-person action with a birthday, unchanged: the instance's zone", async () => {
    const email = uniqueEmail('birthday');
    // As the action builds it: day, month, year, no zone; a phone to parse; places by name.
    const sent = await call('/v1/person/merge', {
      key: KEY,
      body: {
        people: [
          {
            fields: {
              'str::first': 'Chris',
              'str::last': 'Smith',
              'phn::phone': { phone: '+61412345678', parse_with_country_code: true },
              'str::email': email,
              'geo::city': { name: 'Sydney' },
              'geo::country': { name: 'Australia' },
              'geo::region': { name: 'New South Wales' },
              'dtz::b': { day: 15, month: 5, year: 1990 },
            },
          },
        ],
        async: false,
        merge_by: ['str::email'],
        find_strategy: 0,
      },
    });
    expect(sent.status).toBe(200);
    expectShape(sent.body, { people: [{ person_id: '', status: '' }] });
    const person = (sent.body.people as { person_id: string; status: string }[])[0];
    expect(person?.status).toBe('created');
    const read = await ok('/v1/person/get-by-ids', {
      contact_ids: [person?.person_id],
      fields: ['dtz::b', 'phn::phone'],
    });
    expect(read.contacts).toEqual({
      [person?.person_id ?? '']: {
        id: person?.person_id,
        fields: {
          'dtz::b': { year: 1990, month: 5, day: 15, timezone: 'Australia/Sydney' },
          'phn::phone': { c: '61', n: '412345678' },
        },
      },
    });
  });

  it("the event pipeline's identify: a birthday without a zone, unknown places as {}", async () => {
    const email = uniqueEmail('identify');
    const body = await ok('/v1/person/merge', {
      people: [
        {
          fields: {
            'str::first': 'John',
            'str::email': email,
            'geo::city': { name: 'Kolkata' },
            'geo::country': {},
            'geo::region': {},
            'dtz::b': { year: 2020, month: 5, day: 26 },
            'str::ei': `user-${email}`,
            'phn::phone': { n: '9112340345' },
          },
          tags: ['shapes-tag'],
        },
      ],
      merge_by: ['str::ei', 'str::email'],
    });
    const id = (body.people as { person_id: string; status: string }[])[0]?.person_id ?? '';
    const read = await ok('/v1/person/get-by-ids', {
      contact_ids: [id],
      fields: ['dtz::b', 'geo::city', 'geo::country'],
    });
    expect((read.contacts as Record<string, { fields: unknown }>)[id]?.fields).toEqual({
      'dtz::b': { year: 2020, month: 5, day: 26, timezone: 'Australia/Sydney' },
      'geo::city': { name: 'Kolkata' },
    });
    // A zone that is sent is kept; one outside the spec's list keeps the spec's answer.
    const kept = await mergePerson({
      'str::email': email,
      'dtz::b': { year: 2020, month: 5, day: 26, timezone: 'Europe/Paris' },
    });
    expect(kept).toBe(id);
    const invalid = await call('/v1/person/merge', {
      key: KEY,
      body: {
        people: [
          {
            fields: {
              'str::email': email,
              'dtz::b': { year: 2020, month: 5, day: 26, timezone: 'Mars/Olympus' },
            },
          },
        ],
      },
    });
    expect(invalid.status).toBe(500);
    expect(JSON.stringify(invalid.body)).toContain('Mars/Olympus');
  });
});

describe('a person’s activity feed (person/get/activities)', () => {
  it('answers the recorded shape, pages by offset and keeps a timeframe', async () => {
    const email = uniqueEmail('feed');
    const id = await mergePerson({ 'str::email': email });
    for (const plan of ['free', 'pro', 'team']) {
      await ok('/v1/activities/create', {
        activities: [
          { activity_id: 'act:cm:signed-up', attributes: { 'str:cm:plan': plan }, person_id: id },
        ],
      });
    }
    // As the SDK sends it with every parameter.
    const page = await ok('/v1/person/get/activities', {
      person_id: id,
      activities: ['act:cm:signed-up'],
      limit: 2,
      offset: 0,
      timeframe: { type: 'last-7-days' },
    });
    // The recorded `person/get_activities_basic.json`, in shape.
    expectShape(page, {
      activities: [
        {
          id: '',
          attr: {},
          created_at: '',
          field_id: '',
          render_cmds: [{ content: '' }],
        },
      ],
      meta: {
        total_activities: 0,
        field_ids: [''],
        has_more: false,
        retention: { type: '', max_value: 0 },
      },
      offset: 0,
      next_offset: 0,
    });
    expect(page).toMatchObject({
      activities: [
        {
          field_id: 'act:cm:signed-up',
          attr: { 'str:cm:plan': 'team' },
          render_cmds: [{ content: 'Signed up for team' }],
        },
        { attr: { 'str:cm:plan': 'pro' } },
      ],
      meta: { total_activities: 3, field_ids: ['act:cm:signed-up'], has_more: true },
      offset: 0,
      next_offset: 2,
    });
    // A client paging by offset reads on, not the first page again.
    const next = await ok('/v1/person/get/activities', {
      person_id: id,
      activities: ['act:cm:signed-up'],
      limit: 2,
      offset: 2,
      timeframe: { type: 'last-7-days' },
    });
    expect(next).toMatchObject({
      activities: [{ attr: { 'str:cm:plan': 'free' } }],
      meta: { total_activities: 3, has_more: false },
      offset: 2,
      next_offset: 3,
    });
    // By cursor, a rolling period keeps the instants of its first page.
    const byCursor = await ok('/v1/person/get/activities', {
      person_id: id,
      activities: ['act:cm:signed-up'],
      limit: 2,
      timeframe: { type: 'last-24-hours' },
      cursor_id: (
        await ok('/v1/person/get/activities', {
          person_id: id,
          activities: ['act:cm:signed-up'],
          limit: 2,
          timeframe: { type: 'last-24-hours' },
        })
      ).cursor_id,
    });
    expect(byCursor).toMatchObject({
      activities: [{ attr: { 'str:cm:plan': 'free' } }],
      meta: { total_activities: 3, has_more: false },
    });
    // The built-in ones, in the recorded words.
    const all = await ok('/v1/person/get/activities', {
      person_id: id,
      activities: ['act::s-all'],
      timeframe: 'today',
    });
    expect(all).toMatchObject({
      activities: [
        {
          field_id: 'act::s-all',
          render_cmds: [{ content: 'Subscribed to email' }, { content: '.' }],
        },
      ],
      meta: { field_ids: ['act::s-all'] },
    });
  });
});

describe('instance-schema/get', () => {
  it('answers activities with attribute arrays and organization fields with liquid names', async () => {
    // The SDK sends the member always, empty for every namespace.
    const body = await ok('/v1/instance-schema/get', { namespaces: [] });
    const namespaces = body.namespaces as Record<string, { fields: Record<string, unknown> }>;
    const field = { id: '', name: '', display_type: '' };
    // The recorded `account/get_account_schema_all_namespaces.json`, in shape.
    expectShape(namespaces[''], {
      id: '',
      fields: {
        'str::email': { ...field, liquid_name: '' },
        'idt::o': { ...field, read_only: true, liquid_name: '' },
        'act::s-all': { ...field, attributes: [{ ...field }] },
        'act::enter-audience': { ...field, read_only: true, attributes: [{ ...field }] },
      },
    });
    expect(namespaces['']?.fields['idt::o']).toMatchObject({
      display_type: 'id',
      liquid_name: 'people.account',
    });
    expect(namespaces['']?.fields['act::enter-audience']).toMatchObject({
      display_type: 'activity_template',
    });
    expect(namespaces['']?.fields['act::o']).toMatchObject({ display_type: 'activity' });
    expectShape(namespaces.o, {
      id: '',
      org: true,
      fields: { 'str:o:name': { ...field, liquid_name: '' } },
    });
    expect(namespaces.o?.fields['str:o:name']).toMatchObject({ liquid_name: 'account.name' });
    expect(namespaces.oc?.fields['int:oc:seats']).toMatchObject({
      liquid_name: 'account.custom.seats',
    });
    expect(namespaces.cm?.fields['act:cm:signed-up']).toEqual({
      id: 'act:cm:signed-up',
      name: 'Signed up',
      display_type: 'activity',
      attributes: [{ id: 'str:cm:plan', name: 'Plan', display_type: 'text' }],
    });
  });
});

describe('the accounts names', () => {
  it('accounts/delete answers scheduled_accounts and deleted_accounts; archive keeps the organizations names', async () => {
    const name = `Shapes ${uniqueEmail('acct')}`;
    const merged = await ok('/v1/accounts/merge', {
      accounts: [{ fields: { 'str:o:name': name } }],
      merge_by: ['str:o:name'],
    });
    const id = (merged.accounts as { account_id: string }[])[0]?.account_id ?? '';
    // As recorded: `accounts/archive_accounts.json` and `accounts/delete_accounts.json`.
    const archived = await ok('/v1/accounts/archive', { inclusion_ids: [id] }, 'PUT');
    expect(archived).toEqual({ scheduled_organizations: 0, archived_organizations: 1 });
    const deleted = await ok('/v1/accounts/delete', { inclusion_ids: [id] }, 'DELETE');
    expect(deleted).toEqual({ scheduled_accounts: 0, deleted_accounts: 1 });
  });
});

describe('audiences/get', () => {
  it('answers template_id with each audience', async () => {
    await ok('/v1/audiences/create', {
      name: `Shapes ${Date.now().toString(36)}`,
      filter: { $and: [{ '$str::is': { field_id: 'str:cm:plan', value: 'pro' } }] },
    });
    const listed = await call('/v1/audiences/get', { key: KEY, body: { limit: 40 } });
    expect(listed.status).toBe(200);
    // The recorded `audience/get_audiences_all.json`'s entries, in the members that matter.
    expectShape(listed.body, [
      { id: '', instance_id: '', name: '', template_id: '', members: 0, filter: null },
    ]);
    for (const entry of listed.body as unknown as { template_id: string }[]) {
      expect(entry.template_id).toMatch(/^[0-9a-f]{24}$/);
    }
  });
});

describe('cursor IDs', () => {
  it('are 24 hexadecimal characters; another length is the real API’s 400', async () => {
    for (let i = 0; i < 3; i += 1) await mergePerson({ 'str::email': uniqueEmail('cursor') });
    const first = await ok('/v1/person/get', { limit: 1, fields: ['str::email'] });
    expect(first.cursor_id).toMatch(/^[0-9a-f]{24}$/);
    const second = await ok('/v1/person/get', {
      limit: 1,
      fields: ['str::email'],
      cursor_id: first.cursor_id,
    });
    expect(second.contacts).not.toEqual(first.contacts);
    // As `person/get_people_with_cursor_param.json` records: a 20-character cursor.
    const refused = await call('/v1/person/get', {
      key: KEY,
      body: { limit: 100, cursor_id: '0069061b5bda4060a576', fields: ['str::email'] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('cursor_id: the length must be 12 or 24');
    // Another instance's cursor is none of this one's.
    const theirs = await call('/v1/person/get', {
      key: KEY_OTHER,
      body: { limit: 1, cursor_id: first.cursor_id },
    });
    expect(theirs.status).toBe(400);
    expect(theirs.body.error).toMatch(/^cursor_id: not a cursor/);
    // The organizations listings and the activity feed too.
    const accounts = await ok('/v1/accounts/get', { limit: 1 });
    expect(accounts.cursor_id).toMatch(/^[0-9a-f]{24}$/);
  });
});

describe('DELETE /v1/instances/custom-field/delete', () => {
  it('deletes a person field everywhere at once, keeps its ID reserved, and refuses what depends on it', async () => {
    const suffix = Date.now().toString(36);
    const created = await ok('/v1/person/custom-field/create', {
      name: `Colour ${suffix}`,
      type: 'text',
    });
    const fieldId = String(created.field_id);
    const email = uniqueEmail('colour');
    await mergePerson({ 'str::email': email, [fieldId]: 'blue' });
    // An audience naming it holds it back.
    const audience = await ok('/v1/audiences/create', {
      name: `Blue ${suffix}`,
      filter: { $and: [{ '$str::is': { field_id: fieldId, value: 'blue' } }] },
    });
    const refused = await call('/v1/instances/custom-field/delete', {
      key: KEY,
      method: 'DELETE',
      body: { field_id: fieldId },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      details: [{ field: 'field_id', error: expect.stringContaining(`Blue ${suffix}`) as unknown }],
    });
    await ok('/v1/audiences/archive', { audience_id: audience.id }, 'PUT');
    await ok('/v1/audiences/delete', { audience_id: audience.id }, 'DELETE');
    // As the help page sends it; the answer is empty.
    expect(await ok('/v1/instances/custom-field/delete', { field_id: fieldId }, 'DELETE')).toEqual(
      {},
    );
    // Gone at once: merges refuse it, listings and filters do not know it, lists leave it out.
    const merge = await call('/v1/person/merge', {
      key: KEY,
      body: { people: [{ fields: { 'str::email': email, [fieldId]: 'red' } }] },
    });
    expect(JSON.stringify(merge.body)).toContain(
      `${fieldId}: is not a custom field of this instance`,
    );
    const listed = await call('/v1/person/get', { key: KEY, body: { fields: [fieldId] } });
    expect(listed.status).toBe(400);
    const fields = await ok('/v1/person/custom-field/get', {});
    expect(JSON.stringify(fields)).not.toContain(fieldId);
    const schema = await ok('/v1/instance-schema/get', { namespaces: ['cm'] });
    expect(JSON.stringify(schema)).not.toContain(fieldId);
    // Its name stays reserved; a second delete says it was deleted.
    const again = await call('/v1/person/custom-field/create', {
      key: KEY,
      body: { name: `Colour ${suffix}`, type: 'text' },
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatch(/^name: .*deleted/);
    const twice = await call('/v1/instances/custom-field/delete', {
      key: KEY,
      method: 'DELETE',
      body: { field_id: fieldId },
    });
    expect(twice.status).toBe(400);
    expect(twice.body.error).toMatch(/^field_id: .*was deleted/);
  });

  it('deletes an organization field; refuses built-in fields, merge keys and other instances’ fields', async () => {
    const suffix = Date.now().toString(36);
    const created = await ok('/v1/accounts/custom-field/create', {
      name: `Tier ${suffix}`,
      type: 'text',
    });
    const fieldId = String(created.field_id);
    expect(fieldId).toMatch(/^str:oc:/);
    // Another instance cannot delete it: to it, there is no such field.
    const theirs = await call('/v1/instances/custom-field/delete', {
      key: KEY_OTHER,
      method: 'DELETE',
      body: { field_id: fieldId },
    });
    expect(theirs.status).toBe(400);
    expect(theirs.body.error).toMatch(/^field_id: no custom organization field/);
    expect(await ok('/v1/instances/custom-field/delete', { field_id: fieldId }, 'DELETE')).toEqual(
      {},
    );
    const listed = await ok('/v1/accounts/custom-field/get', {});
    expect(JSON.stringify(listed)).not.toContain(fieldId);
    for (const [body, message] of [
      [{ field_id: 'str::email' }, /^field_id: .*is not a custom field/],
      [{ field_id: 'str:cm:member-no' }, /^field_id: str:cm:member-no is a merge key/],
      [{ field_id: 'nonsense' }, /^field_id: /],
      [{}, /field_id: expected a custom field ID/],
    ] as const) {
      const response = await call('/v1/instances/custom-field/delete', {
        key: KEY,
        method: 'DELETE',
        body,
      });
      expect(response.status).toBe(400);
      expect(response.body.error).toMatch(message);
    }
  });
});

describe('organization tags', () => {
  type Tag = { id: number; name: string; count: number; type: string; subscribers?: number };
  const tagsNamed = async (q: string, key = KEY) => {
    const response = await call('/v1/tags/get', { key, body: { q } });
    expect(response.status).toBe(200);
    return response.body as unknown as Tag[];
  };

  it('applies tags and unset_tags of both names, and lists them apart from person tags', async () => {
    const suffix = Date.now().toString(36);
    const tag = `vip ${suffix}`;
    const other = `partner ${suffix}`;
    // A person tag of the same name is another tag.
    await ok('/v1/person/merge', {
      people: [{ fields: { 'str::email': uniqueEmail('tagged') }, tags: [tag] }],
    });
    const merged = await ok('/v1/accounts/merge', {
      accounts: [
        { fields: { 'str:o:name': `Acme ${suffix}` }, tags: [tag, other] },
        { fields: { 'str:o:name': `Globex ${suffix}` }, tags: [tag] },
      ],
      merge_by: ['str:o:name'],
    });
    const [acme, globex] = (merged.accounts as { account_id: string }[]).map((a) => a.account_id);
    // Concurrent merges tagging more organizations: the count stays exact.
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        ok('/v1/organizations/merge', {
          organizations: [{ fields: { 'str:o:name': `Initech ${suffix} ${i}` }, tags: [tag] }],
          merge_by: ['str:o:name'],
        }),
      ),
    );
    const listed = await tagsNamed(suffix);
    // The recorded `tag/get_tags_all.json`: person tags first (type ""), then organizations'.
    expectShape(listed, [
      {
        id: 0,
        instance_id: '',
        name: '',
        created_by_id: '',
        created_by_name: '',
        created_by_email: '',
        created_at: '',
        last_used: '',
        count: 0,
        type: '',
      },
    ]);
    const organizationTags = listed.filter((entry) => entry.type === 'organization');
    expect(listed.map((entry) => [entry.type, entry.name])).toEqual([
      ['', tag],
      ['organization', other],
      ['organization', tag],
    ]);
    expect(organizationTags.find((entry) => entry.name === tag)).toMatchObject({ count: 8 });
    expect(organizationTags.find((entry) => entry.name === other)).toMatchObject({ count: 1 });
    expect(organizationTags[0]).not.toHaveProperty('subscribers');
    expect(listed[0]).toMatchObject({ count: 1, subscribers: 1 });

    // Unset under the organizations name; archive and restore move the counts.
    await ok('/v1/organizations/merge', {
      organizations: [{ fields: { 'str:o:name': `Acme ${suffix}` }, unset_tags: [tag] }],
      merge_by: ['str:o:name'],
    });
    await ok('/v1/accounts/archive', { inclusion_ids: [globex] }, 'PUT');
    let now = await tagsNamed(tag);
    expect(now.find((entry) => entry.type === 'organization')).toMatchObject({ count: 6 });
    await ok('/v1/accounts/restore', { inclusion_ids: [globex] }, 'PUT');
    now = await tagsNamed(tag);
    expect(now.find((entry) => entry.type === 'organization')).toMatchObject({ count: 7 });
    expect(acme).toMatch(/^[0-9a-f]{24}$/);
    // Another instance sees none of them.
    expect(await tagsNamed(suffix, KEY_OTHER)).toEqual([]);
    // A bad tag names the member, and nothing is written.
    const bad = await call('/v1/accounts/merge', {
      key: KEY,
      body: {
        accounts: [{ fields: { 'str:o:name': `Bad ${suffix}` }, tags: [''] }],
        merge_by: ['str:o:name'],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('accounts[0].tags[0]');
  });
});

describe('account activities (POST /v1/accounts/activities/create)', () => {
  it('records them as the reference page sends them, by merge or by ID, and lists them', async () => {
    const name = `Airline ${uniqueEmail('acct')}`;
    // The reference page's request: an account activity, its account merged by name.
    const created = await ok('/v1/accounts/activities/create', {
      activities: [
        {
          activity_id: 'act:oc:flight-booked',
          attributes: { 'int::v': 17500, 'str:cm:carrier': 'Easy Jet' },
          fields: { 'str:o:name': name },
        },
      ],
      merge_by: ['str:o:name'],
    });
    const [first] = created.activities as { account_id: string; account_status: string }[];
    expect(first).toMatchObject({
      account_status: 'created',
      status: 'ingested',
      account_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
      activity_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
    });
    const accountId = first?.account_id ?? '';
    // By the account's ID (no merge_by); an unknown account and a person activity are invalid.
    const second = await ok('/v1/accounts/activities/create', {
      activities: [
        {
          activity_id: 'act:oc:flight-booked',
          attributes: { 'str:cm:carrier': 'Qantas' },
          fields: { 'str:o:organization_id': accountId },
        },
        {
          activity_id: 'act:oc:flight-booked',
          fields: { 'str:o:organization_id': 'ffffffffffffffffffffffff' },
        },
        { activity_id: 'act:cm:signed-up', fields: { 'str:o:organization_id': accountId } },
      ],
    });
    expect(second.activities).toEqual([
      expect.objectContaining({
        account_id: accountId,
        account_status: 'by-id',
        status: 'ingested',
      }),
      {
        account_status: 'invalid',
        status: 'invalid',
        error: expect.stringMatching(
          /^activities\[1\]\.fields\.str:o:organization_id: no account/,
        ) as unknown,
      },
      {
        account_status: 'invalid',
        status: 'invalid',
        error: expect.stringMatching(/^activities\[2\]\.activity_id: .*person activity/) as unknown,
      },
    ]);
    // People's activities/create refuses an account activity.
    const person = await call('/v1/activities/create', {
      key: KEY,
      body: {
        activities: [
          { activity_id: 'act:oc:flight-booked', fields: { 'str::email': uniqueEmail('p') } },
        ],
      },
    });
    expect(person.status).toBe(400);
    expect(JSON.stringify(person.body)).toContain('is an account activity');
    // Every activity invalid: a 400 naming each.
    const none = await call('/v1/accounts/activities/create', {
      key: KEY,
      body: {
        activities: [{ activity_id: 'act:oc:flight-booked', fields: { 'str:o:name': 'x' } }],
      },
    });
    expect(none.status).toBe(400);
    expect(none.body.error).toContain('merge_by');

    // Listed like a person's feed, newest first.
    const feed = await ok('/v1/accounts/get/activities', { account_id: accountId, limit: 1 });
    expect(feed).toMatchObject({
      activities: [
        {
          field_id: 'act:oc:flight-booked',
          attr: { 'str:cm:carrier': 'Qantas' },
          render_cmds: [{ content: 'Booked a flight with Qantas' }],
        },
      ],
      meta: { total_activities: 2, has_more: true },
      next_offset: 1,
    });
    const rest = await ok('/v1/accounts/get/activities', {
      account_id: accountId,
      limit: 1,
      offset: 1,
    });
    expect(rest).toMatchObject({
      activities: [{ attr: { 'str:cm:carrier': 'Easy Jet' }, value: 17500 }],
      meta: { has_more: false },
    });
    // The definition is listed with the accounts' custom fields.
    const schema = await ok('/v1/instance-schema/get', { namespaces: ['oc'] });
    expect(
      (schema.namespaces as Record<string, { fields: Record<string, unknown> }>).oc?.fields[
        'act:oc:flight-booked'
      ],
    ).toMatchObject({ display_type: 'activity', attributes: [{ id: 'str:cm:carrier' }] });
    // Another instance sees no such account.
    const theirs = await call('/v1/accounts/get/activities', {
      key: KEY_OTHER,
      body: { account_id: accountId },
    });
    expect(theirs.status).toBe(400);
    expect(theirs.body.error).toMatch(/^account_id: no account/);

    // Deleting the account deletes its activities.
    await ok('/v1/accounts/archive', { inclusion_ids: [accountId] }, 'PUT');
    await ok('/v1/accounts/delete', { inclusion_ids: [accountId] }, 'DELETE');
    const left = await stackDb().db.send(
      new QueryCommand({
        TableName: tableName('default', 'activities'),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `shapes#O#${accountId}` },
        ConsistentRead: true,
      }),
    );
    expect(left.Items).toEqual([]);
  });
});
