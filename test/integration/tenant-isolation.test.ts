import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminEnv, run } from './cli.js';
import { fetchLink, linkTokensOf, until, type LinkTokens } from './emails.js';
import { baseUrl, call, callRepeating, type ApiResponse } from './stack.js';
import { checkedFetch } from '../contract.js';

/**
 * Tenant isolation: a key of instance A tries every endpoint of the routes table
 * with B's identifiers (people, organizations, activities and their keys, cursors, async
 * requests, messages, templates, Idempotency-Keys, link tokens, and custom
 * fields, activity definitions and tags made through the API). Each try is paired with the
 * same request naming a value nobody ever used: both answers must be the same (status,
 * body without request_id, the tried value masked), so that B's data is neither read nor
 * changed nor revealed to exist. B's data, read back with B's key, is the same afterwards.
 *
 * The two instances are applied by this test (the admin CLI), alike in everything but their
 * data, so that nothing but the data can make two answers differ.
 */
const stamp = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const KEY_A = 'test-key-32-characters-or-more-iso-a';
const KEY_B = 'test-key-32-characters-or-more-iso-b';
const ASSET_A = 'aaaaaaaaaaaaaaaaaaaaaa0a';
const ASSET_B = 'bbbbbbbbbbbbbbbbbbbbbb0b';
const CAMPAIGN_A = 'aaaaaaaaaaaaaaaaaaaaaac1';
const CAMPAIGN_B = 'bbbbbbbbbbbbbbbbbbbbbbc1';

function instance(id: string, key: string, asset: string, campaign: string, extra = {}) {
  return {
    id,
    name: `Isolation ${id}`,
    region: 'default',
    plan: 'business',
    transactional_email: true,
    sending_domains: [`mail.${id}.test`],
    data_sources: [{ name: 'App', api_key: key, merge_by: ['str::email'] }],
    // The matrix sends a few hundred requests in a few seconds.
    rate_limit: { requests_per_second: 1000, burst: 2000 },
    person_fields: [{ id: 'str:cm:colour', name: 'Colour' }],
    organization_fields: [{ id: 'str:oc:tier', name: 'Tier' }],
    activities: [
      { id: 'act:cm:bought', name: 'Bought', attributes: [{ id: 'str:cm:item', name: 'Item' }] },
    ],
    // Applied from the file (the admin CLI); it matches no one, so nothing moves meanwhile.
    audiences: [
      { name: 'Nobody', filter: { '$str::is': { field_id: 'str:cm:colour', value: 'nobody' } } },
    ],
    assets: [
      {
        id: asset,
        status: 'published',
        name: 'Receipt',
        subject: 'Receipt',
        html_body: '<p>Receipt</p>',
        from_email: `receipts@mail.${id}.test`,
        email_name: 'receipt',
      },
    ],
    campaigns: [
      {
        id: campaign,
        status: 'sent',
        subject: 'News',
        html_body: '<p>News</p>',
        from_email: `news@mail.${id}.test`,
        from_name: 'News',
      },
    ],
    ...extra,
  };
}

const CONFIG = {
  instances: [
    instance('iso-a', KEY_A, ASSET_A, CAMPAIGN_A),
    instance('iso-b', KEY_B, ASSET_B, CAMPAIGN_B, {
      activities: [
        { id: 'act:cm:bought', name: 'Bought', attributes: [{ id: 'str:cm:item', name: 'Item' }] },
        { id: 'act:cm:b-only', name: 'Only B' },
      ],
    }),
  ],
};

type Body = Record<string, unknown>;

/** The method of a path of the routes table. */
const methodOf = (path: string) =>
  path.endsWith('/delete')
    ? 'DELETE'
    : path.includes('/contacts/') ||
        path.endsWith('/archive') ||
        path.endsWith('/modify') ||
        path.endsWith('/rotate-secret') ||
        path.endsWith('/restore') ||
        path.endsWith('/update') ||
        path.endsWith('/subscribe')
      ? 'PUT'
      : 'POST';
const PERSON_FIELDS = ['str::email', 'str::first', 'str::ei', 'str:cm:colour', 'idt::o', 'bol::p'];
const hexId = () => randomBytes(12).toString('hex');
/** Tag IDs are small numbers: tried under this label, so that masking never hides A's counts. */
const TAG_ID = 'tag-id:';
const tagIdOf = (label: string) => Number(label.slice(TAG_ID.length));

/** A value of the same form as `value` that nobody ever used. */
function freshOf(value: string): string {
  const unused = `${stamp}x${randomBytes(3).toString('hex')}`;
  if (value.startsWith(TAG_ID)) return `${TAG_ID}${randomInt(1_000_000, 2_000_000)}`;
  if (value.includes(stamp)) return value.replace(stamp, unused);
  return value.startsWith('act:cm:') ? `act:cm:fresh-${unused}` : `${value}-${unused}`;
}
const email = (label: string) => `${label}-${stamp}@example.com`;

async function ok(path: string, key: string, body: unknown, headers?: Record<string, string>) {
  const response = await call(path, {
    key,
    body,
    method: methodOf(path),
    ...(headers ? { headers } : {}),
  });
  if (response.status >= 300) throw new Error(`${path}: ${JSON.stringify(response.body)}`);
  return response.body;
}

interface World {
  people: string[];
  emails: string[];
  eis: string[];
  names: string[];
  organizations: string[];
  organizationNames: string[];
  activities: string[];
  activityKeys: string[];
  audiences: string[];
  webhooks: string[];
  replays: string[];
  requestId: string;
  messageId: string;
  tokens: LinkTokens;
  /** Two keys, each used once with `idempotentBody`. */
  idempotencyKeys: string[];
  idempotentBody: Body;
  cursors: { people: string; organizations: string; activities: string };
  /** Made through the API: a select field of each kind and an activity definition. */
  personField: string;
  organizationField: string;
  definition: string;
  /** The names of the tags only this instance has, and the IDs of every tag it has. */
  tagNames: string[];
  tagIds: number[];
}

/** One instance's data: two people in an organization, activities with keys, an async
 * request, an email with tracked links, an Idempotency-Key, a cursor of each listing, and
 * custom fields, an activity definition and tags made through the API. */
async function populate(label: 'a' | 'b', key: string): Promise<World> {
  const emails = [email(`${label}1`), email(`${label}2`)];
  const eis = [`ei-${label}1-${stamp}`, `ei-${label}2-${stamp}`];
  const names = [`Name${label}1${stamp}`, `Name${label}2${stamp}`];
  // Names already in kebab case, so that a field's ID holds its name as sent.
  const selectField = async (path: string, name: string, option: string) =>
    (await ok(path, key, { name, type: 'single_select', values: [option] })).field_id as string;
  const personField = await selectField(
    '/v1/person/custom-field/create',
    `secret-${label}-${stamp}`,
    `option-${label}-${stamp}`,
  );
  const organizationField = await selectField(
    '/v1/accounts/custom-field/create',
    `account-${label}-${stamp}`,
    `level-${label}-${stamp}`,
  );
  const definition = (
    (
      await ok('/v1/definitions/activity/create', key, {
        name: `visit-${label}-${stamp}`,
        touch: true,
        attributes: [{ name: 'Page', display_type: 'text', field_id: 'do-not-map' }],
      })
    ).custom_activity as { activity_field_id: string }
  ).activity_field_id;
  // Both hold a tag of the same name (each with its own ID), B two more: a filter with one of
  // B's IDs that reached B's names would find A's holder of the shared one. Each instance
  // numbers its tags from small numbers, so A has only the one: B's other IDs are numbers A
  // never gave out.
  const shared = `shared-${stamp}`;
  const tagNames = label === 'b' ? [`tag-b1-${stamp}`, `tag-b2-${stamp}`] : [];
  const merged = await ok('/v1/person/merge', key, {
    people: emails.map((address, i) => ({
      fields: {
        'str::email': address,
        'str::ei': eis[i],
        'str::first': names[i],
        'str:cm:colour': `colour-${label}`,
        [personField]: `option-${label}-${stamp}`,
      },
      tags: i === 0 ? [shared, ...tagNames] : [],
    })),
  });
  const people = (merged.people as { person_id: string }[]).map((p) => p.person_id);
  const tagIds = ((await ok('/v1/tags/get', key, {})) as unknown as { id: number }[]).map(
    (tag) => tag.id,
  );
  const organizationNames = [`Org ${label}1 ${stamp}`, `Org ${label}2 ${stamp}`];
  const organizations = (
    (
      await ok('/v1/organizations/merge', key, {
        organizations: organizationNames.map((name) => ({
          fields: {
            'str:o:name': name,
            'str:oc:tier': `tier-${label}`,
            [organizationField]: `level-${label}-${stamp}`,
          },
        })),
        merge_by: ['str:o:name'],
      })
    ).organizations as { organization_id: string }[]
  ).map((o) => o.organization_id);
  await ok('/v1/organizations/contacts/add', key, {
    organization_id: organizations[0],
    inclusion_ids: [people[0]],
  });
  const activityKeys = [`key-${label}1-${stamp}`, `key-${label}2-${stamp}`];
  const activities = (
    (
      await ok('/v1/activities/create', key, {
        activities: activityKeys.map((activityKey, i) => ({
          activity_id: 'act:cm:bought',
          person_id: people[0],
          attributes: { 'str:cm:item': `item-${label}${i}` },
          key: activityKey,
        })),
      })
    ).activities as { activity_id: string }[]
  ).map((a) => a.activity_id);
  const requestId = (
    await ok('/v1/person/merge', key, {
      async: true,
      people: [{ fields: { 'str::email': email(`${label}-async`) } }],
    })
  ).request_id as string;
  await until(`async request ${requestId}`, async () => {
    const state = await call('/v1/async/get', { key, body: { request_id: requestId } });
    return state.body.status === 'done' ? true : undefined;
  });
  const idempotencyKeys = [`idem-${label}1-${stamp}`, `idem-${label}2-${stamp}`];
  // The same body for both instances: a repeat under A must not meet B's stored answer.
  const idempotentBody = {
    people: [{ fields: { 'str::email': email('idempotent') } }],
    skip_non_existing: true,
  };
  for (const idempotencyKey of idempotencyKeys) {
    await ok('/v1/person/merge', key, idempotentBody, { 'idempotency-key': idempotencyKey });
  }
  const sent = await ok('/v1/transactional/send', key, {
    asset: {
      from_email: `team@mail.iso-${label}.test`,
      subject: 'Links',
      email_name: 'links',
      html_body:
        '<html><body><a href="https://shop.example/x">x</a> <a href="{{ urls.unsubscribe }}">u</a></body></html>',
    },
    merge_by: ['str::email'],
    emails: [{ fields: { 'str::email': emails[1] } }],
  });
  const messageId = (sent.emails as { message_id: string }[])[0]?.message_id as string;
  const tokens = await linkTokensOf(`iso-${label}`, messageId);
  const audiences = await until(`iso-${label}'s audience built`, async () => {
    const listed = (await call('/v1/audiences/get', { key, body: {} })).body as unknown as {
      id: string;
      building: boolean;
    }[];
    return listed.length === 1 && listed.every((entry) => !entry.building)
      ? listed.map((entry) => entry.id)
      : undefined;
  });
  // Enabled for as long as it takes to start a replay (of nothing: no event was kept for it),
  // then disabled: B's events are not delivered anywhere, its webhook and its replay are only
  // IDs to guess.
  const webhook = await ok('/v1/webhooks/create', key, {
    url: `http://127.0.0.1:15998/iso-${label}`,
    events: ['*'],
    description: `iso-${label}`,
  });
  const replay = await ok('/v1/webhooks/replay', key, {
    webhook_id: webhook.id,
    since: new Date(Date.now() - 60_000).toISOString(),
  });
  await ok('/v1/webhooks/update', key, { webhook_id: webhook.id, enabled: false });
  const cursor = async (path: string, body: Body) =>
    (await ok(path, key, { limit: 1, ...body })).cursor_id as string;
  return {
    people,
    emails,
    eis,
    names,
    organizations,
    organizationNames,
    activities,
    activityKeys,
    audiences,
    webhooks: [webhook.id as string],
    replays: [replay.replay_id as string],
    requestId,
    messageId,
    tokens,
    idempotencyKeys,
    idempotentBody,
    cursors: {
      people: await cursor('/v1/person/get', {}),
      organizations: await cursor('/v1/organizations/get', {}),
      activities: await cursor('/v1/person/get/activities', { person_id: people[0] }),
    },
    personField,
    organizationField,
    definition,
    tagNames,
    tagIds,
  };
}

/** Everything an instance's key can read of its data (reads change nothing). */
async function snapshot(key: string, world: World) {
  const read = async (path: string, request: unknown) => {
    const response = await call(path, { key, body: request });
    const { request_id: _ignored, ...body } = response.body;
    // A cursor is `<key ID>.<what it points at>.<signature>`: the deployment's signing key may
    // be rotated between two snapshots (the admin test does, in another worker on a machine
    // with more cores), which changes the first and last parts, never the middle one.
    if (typeof body.cursor_id === 'string') body.cursor_id = body.cursor_id.split('.')[1];
    return { status: response.status, body };
  };
  const emails = await read('/v1/transactional/get', { message_ids: [world.messageId] });
  return {
    byIds: await read('/v1/person/get-by-ids', {
      contact_ids: world.people,
      fields: [...PERSON_FIELDS, 'tags'],
    }),
    listing: await read('/v1/person/get', { limit: 100, fields: PERSON_FIELDS }),
    organizations: await read('/v1/organizations/get', {
      limit: 100,
      fields: ['str:o:name', 'str:oc:tier'],
    }),
    organizationsByIds: await read('/v1/accounts/get-by-ids', {
      account_ids: world.organizations,
      fields: ['str:o:name', 'str:oc:tier'],
    }),
    activities: await Promise.all(
      world.people.map((id) => read('/v1/person/get/activities', { person_id: id, limit: 100 })),
    ),
    async: await read('/v1/async/get', { request_id: world.requestId }),
    audiences: await read('/v1/audiences/get', { with_filter: true }),
    webhooks: await read('/v1/webhooks/get', {}),
    emails,
    personFields: await read('/v1/person/custom-field/get', {}),
    organizationFields: await read('/v1/accounts/custom-field/get', {}),
    tags: await read('/v1/tags/get', {}),
    // Activity definitions (names, attributes) with the rest of the schema.
    schema: await read('/v1/instance-schema/get', { namespaces: [] }),
  };
}

/** What must be equal between the answer for B's value and for a never-used one. */
function comparable(response: ApiResponse, tried: string): string {
  const { request_id: _ignored, ...body } = response.body;
  // A listing's next cursor encodes its query (the tried value), signed: opaque here.
  if (typeof body.cursor_id === 'string') body.cursor_id = '<cursor>';
  return JSON.stringify({
    status: response.status,
    body,
    replayed: response.headers.get('idempotent-replayed'),
    contentType: response.headers.get('content-type'),
  })
    .split(tried)
    .join('<id>')
    .replace(/[0-9a-f]{24}/g, '<id>');
}

let a: World;
let b: World;
let cases = 0;

async function applyConfig(): Promise<void> {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-isolation-')), 'config.json');
  writeFileSync(file, JSON.stringify(CONFIG));
  const applied = await run(['local/admin.ts', 'apply', file], adminEnv());
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.stderr}`);
}

beforeAll(async () => {
  await applyConfig();
  [a, b] = await Promise.all([populate('a', KEY_A), populate('b', KEY_B)]);
}, 90_000);

/** B's values that no answer to A may contain, except the one a request itself names. */
function secretsOf(world: World): string[] {
  return [
    ...world.people,
    ...world.emails,
    ...world.eis,
    ...world.names,
    ...world.organizations,
    ...world.organizationNames,
    ...world.activities,
    ...world.audiences,
    ...world.webhooks,
    ...world.replays,
    world.requestId,
    world.messageId,
    'colour-b',
    'tier-b',
    'item-b',
    // The names of fields, options, the definition and tags only B has.
    `secret-b-${stamp}`,
    `option-b-${stamp}`,
    `account-b-${stamp}`,
    `level-b-${stamp}`,
    `visit-b-${stamp}`,
    ...world.tagNames,
  ];
}

/**
 * Sends `request(foreign)` and `request(fresh)` with A's key and asserts that the answers
 * are the same and that the first names nothing of B's that the request did not name.
 */
async function indistinguishable(
  name: string,
  path: string,
  foreign: string,
  fresh: string,
  body: (value: string) => unknown,
  headers: (value: string) => Record<string, string> = () => ({}),
): Promise<void> {
  const method = methodOf(path);
  // A 503 (injected faults, a loaded machine) is asked again, as a client would: the two
  // answers compared are what each identifier gets, not which call met the store slow.
  const send = (value: string) =>
    callRepeating(path, { key: KEY_A, method, body: body(value), headers: headers(value) });
  const withForeign = await send(foreign);
  const withFresh = await send(fresh);
  // A 405 for both would compare equal and prove nothing.
  if (withFresh.status === 405) throw new Error(`${name}: ${path} does not take ${method}`);
  cases += 1;
  const text = JSON.stringify(withForeign.body);
  const sent = JSON.stringify(body(foreign));
  const leaked = secretsOf(b).filter((secret) => !sent.includes(secret) && text.includes(secret));
  expect({ name, leaked }).toEqual({ name, leaked: [] });
  expect({ name, answer: comparable(withForeign, foreign) }).toEqual({
    name,
    answer: comparable(withFresh, fresh),
  });
}

describe('tenant isolation: a key of instance A with instance B identifiers', () => {
  it('answers every endpoint as for an identifier nobody used, and B is unchanged', async () => {
    const bBefore = await snapshot(KEY_B, b);
    expect(bBefore.byIds.status).toBe(200);
    expect(Object.keys(bBefore.byIds.body.contacts as Body)).toHaveLength(2);

    // Every ID of B (people, organizations, activities, the async request, the message, the
    // templates) in every place a request names an ID.
    const ids = [
      ...b.people,
      ...b.organizations,
      ...b.activities,
      ...b.audiences,
      ...b.webhooks,
      ...b.replays,
      b.requestId,
      b.messageId,
      ASSET_B,
      CAMPAIGN_B,
    ];
    const idSlots: [string, string, (id: string) => unknown][] = [
      [
        'get-by-ids',
        '/v1/person/get-by-ids',
        (id) => ({ contact_ids: [id], fields: PERSON_FIELDS }),
      ],
      ['activities of', '/v1/person/get/activities', (id) => ({ person_id: id })],
      [
        'merge by person_id',
        '/v1/person/merge',
        (id) => ({
          people: [{ fields: { 'str::person_id': id, 'str::first': 'Mallory' } }],
          merge_by: ['str::person_id'],
        }),
      ],
      [
        'merge by person_id, existing only',
        '/v1/person/merge',
        (id) => ({
          people: [{ fields: { 'str::person_id': id, 'str:cm:colour': 'red' } }],
          merge_by: ['str::person_id'],
          skip_non_existing: true,
        }),
      ],
      [
        'activity for person_id',
        '/v1/activities/create',
        (id) => ({ activities: [{ activity_id: 'act:cm:bought', person_id: id }] }),
      ],
      [
        'add person to own organization',
        '/v1/organizations/contacts/add',
        (id) => ({ organization_id: a.organizations[0], inclusion_ids: [id] }),
      ],
      [
        'remove person from own organization',
        '/v1/organizations/contacts/remove',
        (id) => ({ organization_id: a.organizations[0], inclusion_ids: [id] }),
      ],
      [
        'add own person to organization',
        '/v1/organizations/contacts/add',
        (id) => ({ organization_id: id, inclusion_ids: [a.people[1]] }),
      ],
      [
        'add B person to organization',
        '/v1/organizations/contacts/add',
        (id) => ({ organization_id: id, inclusion_ids: [b.people[1]] }),
      ],
      [
        'remove from organization',
        '/v1/organizations/contacts/remove',
        (id) => ({ organization_id: id, inclusion_ids: [b.people[0]] }),
      ],
      [
        'subscriptions by ID',
        '/v1/person/subscriptions',
        (id) => ({ people: [{ person_id: id }] }),
      ],
      [
        'organizations by ID',
        '/v1/organizations/get-by-ids',
        (id) => ({ organization_ids: [id], fields: ['str:o:name', 'str:oc:tier'] }),
      ],
      [
        'accounts by ID',
        '/v1/accounts/get-by-ids',
        (id) => ({ account_ids: [id], fields: ['str:o:name', 'str:oc:tier'] }),
      ],
      [
        'add person to own account',
        '/v1/accounts/contacts/add',
        (id) => ({ account_id: a.organizations[0], person_ids: [id] }),
      ],
      [
        'remove person from own account',
        '/v1/accounts/contacts/remove',
        (id) => ({ account_id: a.organizations[0], person_ids: [id] }),
      ],
      [
        'add own person to account',
        '/v1/accounts/contacts/add',
        (id) => ({ account_id: id, person_ids: [a.people[1]] }),
      ],
      [
        'add B person to account (organizations names)',
        '/v1/accounts/contacts/add',
        (id) => ({ organization_id: id, inclusion_ids: [b.people[1]] }),
      ],
      [
        'remove from account',
        '/v1/accounts/contacts/remove',
        (id) => ({ account_id: id, person_ids: [b.people[0]] }),
      ],
      ['async get', '/v1/async/get', (id) => ({ request_id: id })],
      ['audience members', '/v1/person/get', (id) => ({ audience_id: id })],
      ['audience update', '/v1/audiences/update', (id) => ({ audience_id: id, name: 'Taken' })],
      ...['/v1/audiences/archive', '/v1/audiences/restore', '/v1/audiences/delete'].map(
        (path): [string, string, (id: string) => unknown] => [
          path.slice(4),
          path,
          (id) => ({ audience_id: id }),
        ],
      ),
      ['webhook get', '/v1/webhooks/get', (id) => ({ webhook_id: id })],
      ['webhook update', '/v1/webhooks/update', (id) => ({ webhook_id: id, enabled: true })],
      ['webhook rotate', '/v1/webhooks/rotate-secret', (id) => ({ webhook_id: id })],
      ['webhook delete', '/v1/webhooks/delete', (id) => ({ webhook_id: id })],
      ['webhook attempts', '/v1/webhooks/deliveries/get', (id) => ({ webhook_id: id })],
      [
        'webhook replay of an event',
        '/v1/webhooks/replay',
        (id) => ({ webhook_id: id, event_id: `msg_${'0'.repeat(32)}` }),
      ],
      [
        'webhook replay since',
        '/v1/webhooks/replay',
        (id) => ({ webhook_id: id, since: new Date(Date.now() - 60_000).toISOString() }),
      ],
      ['webhook replay progress', '/v1/webhooks/replay', (id) => ({ replay_id: id })],
      [
        'audience subscribe',
        '/v1/audience/subscribe',
        (id) => ({ audience_id: id, people: [{ person_id: a.people[0], subscribed: false }] }),
      ],
      // Archive, restore and delete, of people and organizations, both names.
      ...[
        '/v1/person/archive',
        '/v1/person/restore',
        '/v1/person/delete',
        '/v1/organizations/archive',
        '/v1/organizations/restore',
        '/v1/organizations/delete',
        '/v1/accounts/archive',
        '/v1/accounts/restore',
        '/v1/accounts/delete',
      ].map((path): [string, string, (id: string) => unknown] => [
        path.slice(4),
        path,
        (id) => ({ inclusion_ids: [id] }),
      ]),
      ['transactional get', '/v1/transactional/get', (id) => ({ message_ids: [id] })],
      [
        'send with asset_id',
        '/v1/transactional/send',
        (id) => ({
          asset: { asset_id: id },
          merge_by: ['str::email'],
          emails: [{ fields: { 'str::email': a.emails[0] } }],
        }),
      ],
      [
        'send with campaign_id',
        '/v1/transactional/send',
        (id) => ({
          asset: { campaign_id: id },
          merge_by: ['str::email'],
          emails: [{ fields: { 'str::email': a.emails[0] } }],
        }),
      ],
      [
        'send to person_id',
        '/v1/transactional/send',
        (id) => ({
          asset: { asset_id: ASSET_A },
          merge_by: ['str::person_id'],
          emails: [{ fields: { 'str::person_id': id } }],
        }),
      ],
    ];
    // The IDs of one slot at once: these requests change nothing (each names no record of A).
    for (const [name, path, body] of idSlots) {
      await Promise.all(
        ids.map((id) => indistinguishable(`${name} ${id}`, path, id, hexId(), body)),
      );
    }

    // B's custom fields, activity definitions and tags wherever a request names one,
    // before A makes fields and definitions of its own under B's names (below).
    const bDefinitions = ['act:cm:b-only', b.definition];
    const bTagIds = b.tagIds.filter((id) => !a.tagIds.includes(id));
    // B has three tags and A one: at least two of B's IDs are numbers A never gave out.
    expect(bTagIds.length).toBeGreaterThanOrEqual(2);
    const tagLabels = bTagIds.map((id) => `${TAG_ID}${id}`);
    const byTag = (operator: string) => (label: string) => ({
      fields: [...PERSON_FIELDS, 'u4s::t'],
      filter: { [operator]: { field_id: 'u4s::t', value: tagIdOf(label) } },
    });
    const schemaSlots: [string, string, string[], (value: string) => unknown][] = [
      [
        'add options to a person field',
        '/v1/person/custom-field/update',
        [b.personField],
        (id) => ({ field_id: id, add_values: ['Taken'] }),
      ],
      [
        'track a person field',
        '/v1/person/custom-field/update',
        [b.personField],
        (id) => ({ field_id: id, track_changes: true }),
      ],
      ...['/v1/accounts/custom-field/update', '/v1/organizations/custom-field/update'].map(
        (path): [string, string, string[], (value: string) => unknown] => [
          `replace the options of ${path.split('/')[2] ?? ''} field`,
          path,
          [b.organizationField],
          (id) => ({ field_id: id, replace_values: ['Taken'] }),
        ],
      ),
      // With B's option: were B's field A's, the value would be valid.
      [
        'merge into a person field',
        '/v1/person/merge',
        [b.personField],
        (id) => ({
          people: [{ fields: { 'str::email': a.emails[0], [id]: `option-b-${stamp}` } }],
        }),
      ],
      [
        'select a person field',
        '/v1/person/get',
        [b.personField],
        (id) => ({ fields: ['str::email', id] }),
      ],
      [
        'filter on a person field',
        '/v1/person/get',
        [b.personField],
        (id) => ({ filter: { '$str::is': { field_id: id, value: `option-b-${stamp}` } } }),
      ],
      [
        'sort by a person field',
        '/v1/person/get',
        [b.personField],
        (id) => ({ sort_by_field_id: id }),
      ],
      [
        'suppression list field',
        '/v1/person/merge',
        [b.personField],
        (id) => ({
          people: [{ fields: { 'str::email': a.emails[0] } }],
          suppression_list_field_id: id,
        }),
      ],
      [
        'map an attribute to a person field',
        '/v1/definitions/activity/create',
        [b.personField],
        (id) => ({
          name: `Mapped ${stamp}`,
          attributes: [{ name: 'Choice', display_type: 'text', field_id: id }],
        }),
      ],
      [
        'merge into an organization field',
        '/v1/organizations/merge',
        [b.organizationField],
        (id) => ({
          organizations: [
            { fields: { 'str:o:name': a.organizationNames[0], [id]: `level-b-${stamp}` } },
          ],
          merge_by: ['str:o:name'],
        }),
      ],
      ...['/v1/organizations/get', '/v1/accounts/get'].map(
        (path): [string, string, string[], (value: string) => unknown] => [
          `select an organization field (${path})`,
          path,
          [b.organizationField],
          (id) => ({ fields: ['str:o:name', id] }),
        ],
      ),
      [
        'modify a definition',
        '/v1/definitions/activity/modify',
        bDefinitions,
        (id) => ({ activity_field_id: id, name: 'Renamed by A', touch: false }),
      ],
      // The reference's other way to name it: the name whose kebab case is the ID.
      [
        'modify a definition by name',
        '/v1/definitions/activity/modify',
        ['b-only', `visit-b-${stamp}`],
        (name) => ({ name, visible_in_feeds: false }),
      ],
      [
        'archive a definition',
        '/v1/definitions/activity/delete',
        bDefinitions,
        (id) => ({
          activity_field_id: id,
        }),
      ],
      [
        'record an activity of a definition',
        '/v1/activities/create',
        [b.definition],
        (id) => ({ activities: [{ activity_id: id, person_id: a.people[1] }] }),
      ],
      ['people with a tag by ID', '/v1/person/get', tagLabels, byTag('$u4s::is')],
      ['people without a tag by ID', '/v1/person/get', tagLabels, byTag('$u4s::is_not')],
      [
        'people with a tag by name',
        '/v1/person/get',
        b.tagNames,
        (name) => ({ filter: { '$u4s::is': { field_id: 'u4s::t', value: name } } }),
      ],
      ['tags by name', '/v1/tags/get', b.tagNames, (q) => ({ q })],
    ];
    for (const [name, path, tried, body] of schemaSlots) {
      for (const value of tried) {
        await indistinguishable(`${name} ${value}`, path, value, freshOf(value), body);
      }
    }

    // B's merge-key values and names, where A looks people and organizations up by value.
    const values: [string, string, string[], (value: string) => unknown][] = [
      ['search people', '/v1/person/get', [...b.emails, ...b.names, ...b.eis], (q) => ({ q })],
      [
        'merge existing by email',
        '/v1/person/merge',
        b.emails,
        (value) => ({ people: [{ fields: { 'str::email': value } }], skip_non_existing: true }),
      ],
      [
        'merge existing by external ID',
        '/v1/person/merge',
        b.eis,
        (value) => ({
          people: [{ fields: { 'str::ei': value } }],
          merge_by: ['str::ei'],
          skip_non_existing: true,
        }),
      ],
      [
        'send to existing people only',
        '/v1/transactional/send',
        b.emails,
        (value) => ({
          asset: { asset_id: ASSET_A },
          merge_by: ['str::email'],
          skip_non_existing: true,
          emails: [{ fields: { 'str::email': value } }],
        }),
      ],
      [
        'subscriptions by email',
        '/v1/person/subscriptions',
        b.emails,
        (value) => ({ people: [{ email: value }] }),
      ],
      // After the lookups above: it creates A's own person of that address (as for any).
      [
        'activity by email',
        '/v1/activities/create',
        b.emails,
        (value) => ({
          activities: [{ activity_id: 'act:cm:bought', fields: { 'str::email': value } }],
        }),
      ],
      ['search organizations', '/v1/organizations/get', b.organizationNames, (q) => ({ q })],
      // Before the merge below makes A's own organizations of these names. (Merging an
      // account by B's name is that same merge: the function and domain call are one.)
      ['search accounts', '/v1/accounts/get', b.organizationNames, (q) => ({ q })],
      [
        'merge an organization by name',
        '/v1/organizations/merge',
        b.organizationNames,
        (value) => ({
          organizations: [{ fields: { 'str:o:name': value } }],
          merge_by: ['str:o:name'],
        }),
      ],
      // A's own activity with B's `key`: recorded for A, never answered with B's record.
      [
        'activity key',
        '/v1/activities/create',
        b.activityKeys,
        (value) => ({
          activities: [{ activity_id: 'act:cm:bought', person_id: a.people[1], key: value }],
        }),
      ],
      [
        'activity definition id',
        '/v1/definitions/activity/create',
        bDefinitions,
        (value) => ({ id: value, name: 'Defined by A' }),
      ],
      // A's own fields of B's fields' names: a name is taken per instance. (The real shape of
      // a definition's create answers its times, which differ; the configuration's shape
      // above claims the same ID through the same store.)
      [
        'person field name',
        '/v1/person/custom-field/create',
        [`secret-b-${stamp}`],
        (name) => ({ name, type: 'text' }),
      ],
      // One function serves both names of organization fields.
      [
        'account field name',
        '/v1/accounts/custom-field/create',
        [`account-b-${stamp}`],
        (name) => ({ name, type: 'text' }),
      ],
    ];
    for (const [name, path, tried, body] of values) {
      for (const value of tried) {
        await indistinguishable(`${name} ${value}`, path, value, freshOf(value), body);
      }
    }

    // B's cursors against a well-formed cursor this API never issued.
    const forgedCursor = (cursor: string) =>
      `${cursor.split('.')[0] ?? ''}.${randomBytes(16).toString('base64url')}`;
    const cursorSlots: [string, string, string, (cursor: string) => unknown][] = [
      ['people cursor', '/v1/person/get', b.cursors.people, (c) => ({ limit: 1, cursor_id: c })],
      [
        'organizations cursor',
        '/v1/organizations/get',
        b.cursors.organizations,
        (c) => ({ limit: 1, cursor_id: c }),
      ],
      [
        'accounts cursor',
        '/v1/accounts/get',
        b.cursors.organizations,
        (c) => ({ limit: 1, cursor_id: c }),
      ],
      [
        'activities cursor, own person',
        '/v1/person/get/activities',
        b.cursors.activities,
        (c) => ({ person_id: a.people[0], limit: 1, cursor_id: c }),
      ],
      [
        'activities cursor, B person',
        '/v1/person/get/activities',
        b.cursors.activities,
        (c) => ({ person_id: b.people[0], limit: 1, cursor_id: c }),
      ],
    ];
    for (const [name, path, cursor, body] of cursorSlots) {
      await indistinguishable(name, path, cursor, forgedCursor(cursor), body);
    }

    // B's Idempotency-Key, with the body B sent (no replay of B's answer) and another (no 422).
    const bodies = [b.idempotentBody, { people: [{ fields: { 'str::email': email('x') } }] }];
    for (const [i, body] of bodies.entries()) {
      await indistinguishable(
        `Idempotency-Key with ${JSON.stringify(body)}`,
        '/v1/person/merge',
        b.idempotencyKeys[i] as string,
        `idem-fresh-${hexId()}`,
        () => ({ ...body, skip_non_existing: true }),
        (value) => ({ 'idempotency-key': value }),
      );
    }

    // A's schema is A's: its own definitions and fields of B's IDs, nothing of B's.
    const schema = await call('/v1/instance-schema/get', { key: KEY_A, body: { namespaces: [] } });
    cases += 1;
    expect(schema.status).toBe(200);
    const namespaces = schema.body.namespaces as Record<string, { fields: Record<string, Body> }>;
    for (const id of bDefinitions) {
      expect(namespaces.cm?.fields[id]).toMatchObject({ name: 'Defined by A' });
    }
    // Text fields, as A made them: B's are selects.
    expect(namespaces.cm?.fields[b.personField]).toMatchObject({ display_type: 'text' });
    expect(namespaces.oc?.fields[b.organizationField]).toMatchObject({ display_type: 'text' });
    const adopted = [`secret-b-${stamp}`, `account-b-${stamp}`, `visit-b-${stamp}`];
    expect(
      [...secretsOf(b), 'Only B']
        .filter((secret) => !adopted.includes(secret))
        .filter((secret) => JSON.stringify(schema.body).includes(secret)),
    ).toEqual([]);

    // Nothing of B changed: every read of B's key answers as before.
    expect(await snapshot(KEY_B, b)).toEqual(bBefore);
    // B's definitions are B's still, not archived (A's key defined its own of the same IDs).
    for (const id of bDefinitions) {
      const recorded = await call('/v1/activities/create', {
        key: KEY_B,
        body: { activities: [{ activity_id: id, person_id: b.people[1] }] },
      });
      expect({ id, status: recorded.status }).toEqual({ id, status: 200 });
    }
    // A's organization holds A's member only: none of B's people was linked.
    const members = await call('/v1/person/get-by-ids', {
      key: KEY_A,
      body: { contact_ids: a.people, fields: ['idt::o'] },
    });
    const contacts = members.body.contacts as Record<string, { fields?: Body }>;
    expect(contacts[a.people[0] as string]?.fields?.['idt::o']).toBe(a.organizations[0]);
    expect(contacts[a.people[1] as string]?.fields?.['idt::o']).toBeUndefined();

    expect(cases).toBeGreaterThan(150);
  }, 240_000);

  it('refuses tokens altered to name A, and B tokens act on nothing of A', async () => {
    const aBefore = await snapshot(KEY_A, a);
    const bBefore = await snapshot(KEY_B, b);
    const [payload, signature] = b.tokens.click.split('.') as [string, string];
    const [, , index] = Buffer.from(payload, 'base64url').toString().split('.');
    const renamed = (text: string) => `${Buffer.from(text).toString('base64url')}.${signature}`;
    const altered = [
      renamed(`iso-a.${a.messageId}.${index ?? '0'}`),
      renamed(`iso-b.${a.messageId}.${index ?? '0'}`),
      renamed(`iso-a.${b.messageId}.${index ?? '0'}`),
      // Another purpose's token of B's own message.
      b.tokens.open,
      b.tokens.unsubscribe,
    ];
    const refusals: [string, string][] = [];
    for (const [method, path] of [
      ['GET', '/t/c'],
      ['GET', '/t/o'],
      ['GET', '/t/u'],
      ['POST', '/t/u'],
    ] as const) {
      const own = { '/t/c': b.tokens.click, '/t/o': b.tokens.open, '/t/u': b.tokens.unsubscribe }[
        path
      ];
      for (const token of [...altered.filter((t) => t !== own)]) {
        const attempt = async (value: string) => {
          const response = await fetchLink(`${baseUrl('default')}${path}?t=${value}`, method);
          const text = await response.text();
          return {
            status: response.status,
            location: response.headers.get('location'),
            body: text.replace(/"request_id":"[^"]*",?/, ''),
          };
        };
        const random = `${randomBytes(30).toString('base64url')}.${randomBytes(16).toString('base64url')}`;
        const answer = await attempt(token);
        cases += 1;
        refusals.push([`${method} ${path}`, JSON.stringify(answer)]);
        expect(answer).toEqual(await attempt(random));
        expect(answer.status).toBe(404);
      }
    }
    expect(refusals.length).toBeGreaterThanOrEqual(16);
    expect(await snapshot(KEY_A, a)).toEqual(aBefore);
    expect(await snapshot(KEY_B, b)).toEqual(bBefore);

    // B's own (valid) tokens act on B's message and person, and on nothing of A.
    const click = await checkedFetch(`${baseUrl('default')}/t/c?t=${b.tokens.click}`, {
      redirect: 'manual',
    });
    expect(click.status).toBe(302);
    const unsubscribed = await checkedFetch(`${baseUrl('default')}/t/u?t=${b.tokens.unsubscribe}`, {
      method: 'POST',
      body: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(unsubscribed.status).toBe(200);
    expect(await snapshot(KEY_A, a)).toEqual(aBefore);
    const bAfter = await call('/v1/person/get-by-ids', {
      key: KEY_B,
      body: { contact_ids: [b.people[1]], fields: ['bol::p'] },
    });
    expect(
      (bAfter.body.contacts as Record<string, { fields: Body }>)[b.people[1] as string]?.fields,
    ).toEqual({ 'bol::p': false });
    // The number of cases tried, printed for the record (console.warn: the lint allows no log).
    console.warn(`tenant isolation: ${cases} cases tried, each against a never-used value`);
  }, 120_000);
});
