import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminEnv, run } from './cli.js';
import { until } from './emails.js';
import { fieldsOf, uniqueEmail } from './people.js';
import { call } from './stack.js';

/**
 * The accounts names: `/v1/accounts/merge`, `get`, `get-by-ids`, `contacts/add`
 * and `contacts/remove` are the organizations endpoints under the names newer clients use,
 * and `/v1/organizations/get-by-ids` their by-ID lookup. One implementation: what one set of
 * names writes, the other reads.
 */
const KEY = 'test-key-32-characters-or-more-accounts';
const KEY_OTHER = 'test-key-32-characters-or-more-accounts-other';
const stamp = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;

const CONFIG = {
  instances: [
    {
      id: 'accounts',
      name: 'Accounts',
      region: 'default',
      plan: 'business',
      rate_limit: { requests_per_second: 1000, burst: 2000 },
      data_sources: [{ name: 'Web', api_key: KEY }],
      organization_fields: [{ id: 'str:oc:tier', name: 'Tier' }],
    },
    {
      id: 'accounts-other',
      name: 'Accounts other',
      region: 'default',
      plan: 'business',
      data_sources: [{ name: 'Web', api_key: KEY_OTHER }],
    },
  ],
};

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-accounts-')), 'config.json');
  writeFileSync(file, JSON.stringify(CONFIG));
  const applied = await run(['local/admin.ts', 'apply', file, '--settle', '0'], adminEnv());
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.stderr}`);
}, 60_000);

type Body = Record<string, unknown>;
let counter = 0;
const accountName = (label: string) => {
  counter += 1;
  return `Acct ${label} ${stamp} ${counter}`;
};

async function mergeAccounts(body: Body, key = KEY) {
  const response = await call('/v1/accounts/merge', { key, body });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 200 });
  return response.body.accounts as { account_id?: string; status: string; error?: string }[];
}

async function person(key = KEY): Promise<string> {
  const response = await call('/v1/person/merge', {
    key,
    body: { people: [{ fields: { 'str::email': uniqueEmail('acct') } }] },
  });
  return (response.body.people as { person_id: string }[])[0]?.person_id ?? '';
}

describe('POST /v1/accounts/merge', () => {
  it('creates and updates accounts, which are the organizations', async () => {
    const [name, other] = [accountName('a'), accountName('b')];
    const created = await mergeAccounts({
      accounts: [
        { fields: { 'str:o:name': name, 'str:oc:tier': 'gold' } },
        { fields: { 'str:o:name': other } },
      ],
      merge_by: ['str:o:name'],
    });
    expect(created).toEqual([
      { account_id: expect.stringMatching(/^[0-9a-f]{24}$/), status: 'created' },
      { account_id: expect.stringMatching(/^[0-9a-f]{24}$/), status: 'created' },
    ]);
    const id = created[0]?.account_id ?? '';
    // The organizations endpoint finds and updates the same record.
    const merged = await call('/v1/organizations/merge', {
      key: KEY,
      body: {
        organizations: [{ fields: { 'str:o:name': name.toUpperCase(), 'str:oc:tier': 'silver' } }],
        merge_by: ['str:o:name'],
      },
    });
    expect(merged.body.organizations).toEqual([{ organization_id: id, status: 'merged' }]);
    const again = await mergeAccounts({
      accounts: [{ fields: { 'str:o:name': name, 'str:o:industry': 'Tea' } }],
      merge_by: ['str:o:name'],
      merge_strategy: 1,
    });
    expect(again).toEqual([{ account_id: id, status: 'merged' }]);
    const byIds = await call('/v1/accounts/get-by-ids', {
      key: KEY,
      body: { account_ids: [id], fields: ['str:o:name', 'str:o:industry', 'str:oc:tier'] },
    });
    expect(byIds.body.accounts).toEqual({
      [id]: {
        id,
        fields: {
          'str:o:name': name.toUpperCase(),
          'str:o:industry': 'Tea',
          'str:oc:tier': 'silver',
        },
      },
    });
  });

  it('names records by the accounts names in its errors, and writes nothing for a bad one', async () => {
    const name = accountName('bad');
    const response = await call('/v1/accounts/merge', {
      key: KEY,
      body: {
        accounts: [
          { fields: { 'str:o:name': name } },
          { fields: { 'str:o:name': accountName('x'), 'int:o:employees': 'many' } },
        ],
        merge_by: ['str:o:name'],
      },
    });
    expect(response.status).toBe(200);
    expect(response.body.accounts).toEqual([
      { account_id: expect.any(String), status: 'created' },
      {
        status: 'invalid',
        error: expect.stringMatching(/^accounts\[1\]\.fields\.int:o:employees: /),
      },
    ]);
    const none = await call('/v1/accounts/merge', {
      key: KEY,
      body: { accounts: [{ fields: { 'str:o:industry': 'x' } }], merge_by: ['str:o:name'] },
    });
    expect(none.status).toBe(400);
    expect(none.body.error).toBe(
      'No account was merged: every record is invalid (accounts[0].fields: str:o:name is required (merge_by))',
    );
    expect(none.body.details).toEqual([
      {
        index: 0,
        status: 'invalid',
        error: 'accounts[0].fields: str:o:name is required (merge_by)',
      },
    ]);
  });

  it.each([
    [{ merge_by: ['str:o:name'] }, 'accounts: '],
    [
      { organizations: [{ fields: { 'str:o:name': 'x' } }], merge_by: ['str:o:name'] },
      'accounts: ',
    ],
    [{ accounts: [], merge_by: ['str:o:name'] }, 'accounts: expected 1 to 100 accounts'],
    [{ accounts: [{ fields: { 'str:o:name': 'x' } }] }, 'merge_by: '],
    [
      { accounts: [{ fields: { 'str:o:name': 'x' } }], merge_by: ['str:o:name'], find_strategy: 3 },
      'find_strategy',
    ],
  ])('refuses a malformed request %# with a 400 naming the member', async (body, message) => {
    const response = await call('/v1/accounts/merge', { key: KEY, body });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain(message);
  });

  it('queues with async: true and answers the accounts shape when done', async () => {
    const name = accountName('queued');
    const queued = await call('/v1/accounts/merge', {
      key: KEY,
      body: {
        async: true,
        accounts: [
          { fields: { 'str:o:name': name } },
          { fields: { 'str:o:name': accountName('q2'), 'int:o:employees': -1.5 } },
        ],
        merge_by: ['str:o:name'],
      },
    });
    expect(queued.status).toBe(200);
    expect(queued.body).toEqual({
      accounts: [{ status: 'queued' }, { status: 'queued' }],
      request_id: expect.stringMatching(/^[0-9a-f]{24}$/),
    });
    const done = await until('queued accounts', async () => {
      const state = await call('/v1/async/get', {
        key: KEY,
        body: { request_id: queued.body.request_id },
      });
      return state.body.status === 'done' ? state.body : undefined;
    });
    const result = done.result as { accounts: Body[] };
    expect(result.accounts).toEqual([
      { account_id: expect.stringMatching(/^[0-9a-f]{24}$/), status: 'created' },
      {
        status: 'invalid',
        error: expect.stringMatching(/^accounts\[1\]\.fields\.int:o:employees/),
      },
    ]);
    const found = await call('/v1/organizations/get-by-ids', {
      key: KEY,
      body: { organization_ids: [result.accounts[0]?.account_id] },
    });
    expect(found.body.organizations).toEqual({
      [result.accounts[0]?.account_id as string]: {
        id: result.accounts[0]?.account_id,
        fields: { 'str:o:name': name },
      },
    });
  });

  it('replays an Idempotency-Key per endpoint: the organizations name is another request', async () => {
    const body = {
      accounts: [{ fields: { 'str:o:name': accountName('idem') } }],
      merge_by: ['str:o:name'],
    };
    const headers = { 'idempotency-key': `acct-${stamp}` };
    const first = await call('/v1/accounts/merge', { key: KEY, body, headers });
    const repeat = await call('/v1/accounts/merge', { key: KEY, body, headers });
    expect(repeat.status).toBe(200);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body.accounts).toEqual(first.body.accounts);
    const elsewhere = await call('/v1/organizations/merge', {
      key: KEY,
      body: { organizations: body.accounts, merge_by: body.merge_by },
      headers,
    });
    expect(elsewhere.status).toBe(422);
  });
});

describe('POST /v1/accounts/get', () => {
  /** Three accounts named `<prefix> 1` to `3`, in that order. */
  const threeAccounts = (prefix: string) =>
    mergeAccounts({
      accounts: [1, 2, 3].map((n) => ({ fields: { 'str:o:name': `${prefix} ${n}` } })),
      merge_by: ['str:o:name'],
    });

  it('lists and searches as organizations/get does, answering `accounts`', async () => {
    const prefix = `Listed ${stamp}`;
    const created = await threeAccounts(prefix);
    const first = await call('/v1/accounts/get', { key: KEY, body: { q: prefix, limit: 2 } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      accounts: [
        { id: created[0]?.account_id, fields: { 'str:o:name': `${prefix} 1` } },
        { id: created[1]?.account_id, fields: { 'str:o:name': `${prefix} 2` } },
      ],
      meta: { total_matches: 3 },
      has_more: true,
    });
    expect(first.body).not.toHaveProperty('organizations');
    const next = await call('/v1/accounts/get', {
      key: KEY,
      body: { q: prefix, limit: 2, cursor_id: first.body.cursor_id },
    });
    expect(next.body).toMatchObject({
      accounts: [{ id: created[2]?.account_id }],
      has_more: false,
    });
    const same = await call('/v1/organizations/get', { key: KEY, body: { q: prefix, limit: 2 } });
    const { organizations, ...rest } = same.body;
    const { accounts, ...restOfAccounts } = first.body;
    expect(organizations).toEqual(accounts);
    // Each answer names its own cursor (24 hexadecimal characters, as the real API's).
    expect(rest.cursor_id).toMatch(/^[0-9a-f]{24}$/);
    expect(restOfAccounts.cursor_id).toMatch(/^[0-9a-f]{24}$/);
    expect({ ...rest, cursor_id: '' }).toEqual({ ...restOfAccounts, cursor_id: '' });
  });

  it('takes a limit of 1 to 500, as the real API documents, naming limit beyond', async () => {
    const prefix = `Paged ${stamp}`;
    const created = await threeAccounts(prefix);
    const page = await call('/v1/accounts/get', { key: KEY, body: { q: prefix, limit: 500 } });
    expect(page.status).toBe(200);
    expect((page.body.accounts as { id: string }[]).map((a) => a.id)).toEqual(
      created.map((entry) => entry.account_id),
    );
    expect(page.body.has_more).toBe(false);
    expect((await call('/v1/accounts/get', { key: KEY, body: { limit: 500 } })).status).toBe(200);
    for (const limit of [0, 501]) {
      const refused = await call('/v1/accounts/get', { key: KEY, body: { limit } });
      expect({ limit, status: refused.status }).toEqual({ limit, status: 400 });
      expect(refused.body.error).toMatch(/\blimit: /);
    }
  });

  it('refuses a field organizations do not have, naming it', async () => {
    const response = await call('/v1/accounts/get', {
      key: KEY,
      body: { fields: ['str::email'] },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('fields[0]');
  });
});

describe('POST /v1/organizations/get-by-ids and /v1/accounts/get-by-ids', () => {
  it('answer by ID, the name by default, leaving out unknown IDs and other instances', async () => {
    const [mine] = await mergeAccounts({
      accounts: [{ fields: { 'str:o:name': accountName('byid'), 'str:oc:tier': 'gold' } }],
      merge_by: ['str:o:name'],
    });
    const [theirs] = await mergeAccounts(
      { accounts: [{ fields: { 'str:o:name': accountName('theirs') } }], merge_by: ['str:o:name'] },
      KEY_OTHER,
    );
    const id = mine?.account_id ?? '';
    const ids = [id, 'f'.repeat(24), theirs?.account_id ?? ''];
    const organizations = await call('/v1/organizations/get-by-ids', {
      key: KEY,
      body: { organization_ids: ids },
    });
    expect(organizations.status).toBe(200);
    expect(Object.keys(organizations.body.organizations as Body)).toEqual([id]);
    const accounts = await call('/v1/accounts/get-by-ids', {
      key: KEY,
      body: { account_ids: ids, fields: ['str:oc:tier', 'int:o:employees'] },
    });
    expect(accounts.body).toEqual({
      accounts: { [id]: { id, fields: { 'str:oc:tier': 'gold' } } },
    });
  });

  it.each([
    ['/v1/accounts/get-by-ids', {}, 'account_ids: '],
    ['/v1/accounts/get-by-ids', { account_ids: ['nope'] }, 'account_ids[0]: '],
    ['/v1/accounts/get-by-ids', { account_ids: [] }, 'account_ids: '],
    [
      '/v1/organizations/get-by-ids',
      { organization_ids: ['0'.repeat(24)], fields: ['x'] },
      'fields[0]',
    ],
    ['/v1/organizations/get-by-ids', { account_ids: ['0'.repeat(24)] }, 'organization_ids: '],
  ])('%s refuses %j naming the member', async (path, body, message) => {
    const response = await call(path, { key: KEY, body });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain(message);
  });
});

describe('PUT /v1/accounts/contacts/add and /remove', () => {
  async function organizationOf(personId: string) {
    return (await fieldsOf(KEY, personId, ['idt::o']))['idt::o'];
  }

  it('link and unlink people with either body shape', async () => {
    const [account] = await mergeAccounts({
      accounts: [{ fields: { 'str:o:name': accountName('members') } }],
      merge_by: ['str:o:name'],
    });
    const id = account?.account_id ?? '';
    const [p1, p2] = [await person(), await person()];
    const added = await call('/v1/accounts/contacts/add', {
      key: KEY,
      method: 'PUT',
      body: { account_id: id, person_ids: [p1] },
    });
    expect({ status: added.status, body: added.body }).toEqual({ status: 200, body: {} });
    const addedOld = await call('/v1/accounts/contacts/add', {
      key: KEY,
      method: 'PUT',
      body: { organization_id: id, inclusion_ids: [p2] },
    });
    expect(addedOld.status).toBe(200);
    expect([await organizationOf(p1), await organizationOf(p2)]).toEqual([id, id]);

    const removed = await call('/v1/accounts/contacts/remove', {
      key: KEY,
      method: 'PUT',
      body: { organization_id: id, person_ids: [p1] },
    });
    expect(removed.status).toBe(200);
    const removedNew = await call('/v1/accounts/contacts/remove', {
      key: KEY,
      method: 'PUT',
      body: { account_id: id, person_ids: [p2] },
    });
    expect(removedNew.status).toBe(200);
    expect([await organizationOf(p1), await organizationOf(p2)]).toEqual([undefined, undefined]);
  });

  it('names the members the caller sent when an ID is unknown, and changes nothing', async () => {
    const [account] = await mergeAccounts({
      accounts: [{ fields: { 'str:o:name': accountName('unknown') } }],
      merge_by: ['str:o:name'],
    });
    const id = account?.account_id ?? '';
    const known = await person();
    const strangers = [await person(KEY_OTHER), 'e'.repeat(24)];
    const response = await call('/v1/accounts/contacts/add', {
      key: KEY,
      method: 'PUT',
      body: { account_id: id, person_ids: [known, ...strangers] },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe(`person_ids: no such people: ${strangers.join(', ')}`);
    expect(await organizationOf(known)).toBeUndefined();
    const noAccount = await call('/v1/accounts/contacts/add', {
      key: KEY,
      method: 'PUT',
      body: { account_id: 'd'.repeat(24), inclusion_ids: [known] },
    });
    expect(noAccount.status).toBe(400);
    expect(noAccount.body.error).toBe(`account_id: no account ${'d'.repeat(24)}`);
  });

  it.each([
    [{ person_ids: ['0'.repeat(24)] }, 'account_id: required (or organization_id)'],
    [{ account_id: '0'.repeat(24) }, 'person_ids: required (or inclusion_ids)'],
    [
      { account_id: '0'.repeat(24), organization_id: '0'.repeat(24), person_ids: ['0'.repeat(24)] },
      'account_id: give account_id or organization_id, not both',
    ],
    [
      { account_id: '0'.repeat(24), person_ids: ['0'.repeat(24)], inclusion_ids: ['0'.repeat(24)] },
      'person_ids: give person_ids or inclusion_ids, not both',
    ],
    [{ account_id: 'x', person_ids: ['0'.repeat(24)] }, 'account_id: expected an ID'],
    [{ account_id: '0'.repeat(24), person_ids: [] }, 'person_ids: expected at least one person ID'],
  ])('refuses %j with a 400 naming the member', async (body, message) => {
    for (const op of ['add', 'remove']) {
      const response = await call(`/v1/accounts/contacts/${op}`, { key: KEY, method: 'PUT', body });
      expect(response.status).toBe(400);
      expect(response.body.error).toContain(message);
    }
  });

  it('answers 405 to POST, as the organizations names do', async () => {
    const response = await call('/v1/accounts/contacts/add', { key: KEY, body: {} });
    expect(response.status).toBe(405);
  });
});
