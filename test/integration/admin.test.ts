import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { listShard } from '../../shared/adapters/people-store.js';
import { entrySortKey } from '../../shared/domain/people/field-index.js';
import { tableName } from '../../shared/resources.js';
import { adminEnv, run } from './cli.js';
import { KEYS, TEST_STACK, call, stackDb } from './stack.js';
import { idsEventually, listAll } from './people.js';

const env = adminEnv();
const admin = (...args: string[]) => run(['local/admin.ts', ...args], env);

function configFile(content: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-admin-')), 'config.json');
  writeFileSync(file, JSON.stringify(content));
  return file;
}

const lastLine = (text: string) => text.trim().split('\n').at(-1) ?? '';

describe('npm run admin -- key create', () => {
  it('mints a key of the instance region, prints it once on the last line, and it works at once', async () => {
    const result = await admin('key', 'create', '--instance', 'acme', '--data-source', 'Website');
    expect(result.code).toBe(0);
    const key = lastLine(result.stdout);
    expect(key).toMatch(/^cdp_default_[A-Za-z0-9_-]{43}$/);
    expect((await call('/v1/person/get', { key, body: {} })).status).toBe(200);
    // Another region's API recognises it as a default-region key.
    const elsewhere = await call('/v1/person/get', { key, region: 'eu', body: {} });
    expect(elsewhere.status).toBe(421);
  });

  it('mints keys for other regions with --region', async () => {
    const result = await admin(
      'key',
      'create',
      '--instance',
      'koala',
      '--data-source',
      'App',
      '--region',
      'au',
    );
    expect(result.code).toBe(0);
    const key = lastLine(result.stdout);
    expect(key).toMatch(/^cdp_au_/);
    expect((await call('/v1/person/get', { key, region: 'au', body: {} })).status).toBe(200);
  });

  it('explains an unknown instance or data source and exits non-zero', async () => {
    const noInstance = await admin('key', 'create', '--instance', 'nobody', '--data-source', 'X');
    expect(noInstance.code).toBe(1);
    expect(noInstance.stderr).toMatch(/No instance "nobody" in region default/);
    const noSource = await admin('key', 'create', '--instance', 'acme', '--data-source', 'Nope');
    expect(noSource.code).toBe(1);
    // The file's data sources come first; the console's tests may have added more to the instance.
    expect(noSource.stderr).toMatch(/has no data source "Nope" \(it has "Website", "Shop"[,)]/);
  });
});

describe('npm run admin -- key list | revoke', () => {
  it('lists the keys of an instance by hash, and revokes one so that it stops working at once', async () => {
    const minted = lastLine(
      (await admin('key', 'create', '--instance', 'globex', '--data-source', 'CRM')).stdout,
    );
    expect((await call('/v1/person/get', { key: minted, body: {} })).status).toBe(200);
    const hash = createHash('sha256').update(minted).digest('hex');
    const listed = await admin('key', 'list', '--instance', 'globex');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${hash.slice(0, 16)}  CRM  minted`);
    expect(listed.stdout).not.toContain(minted);

    const revoked = await admin(
      'key',
      'revoke',
      '--instance',
      'globex',
      '--key-hash',
      hash.slice(0, 16),
    );
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`Revoked ${hash.slice(0, 16)}`);
    expect((await call('/v1/person/get', { key: minted, body: {} })).status).toBe(401);
    expect((await admin('key', 'list', '--instance', 'globex')).stdout).toMatch(
      new RegExp(`${hash.slice(0, 16)}  CRM  minted.*REVOKED`),
    );
    // The other keys of the instance keep working.
    expect((await call('/v1/person/get', { key: KEYS.globex, body: {} })).status).toBe(200);
  });

  it('keeps a revoked file key from coming back with the next apply', async () => {
    const fileKey = `lumon-key-${'q'.repeat(32)}`;
    const file = configFile({
      instances: [
        { id: 'lumon', name: 'Lumon', data_sources: [{ name: 'App', api_key: fileKey }] },
      ],
    });
    expect((await admin('apply', file)).code).toBe(0);
    expect((await call('/v1/person/get', { key: fileKey, body: {} })).status).toBe(200);
    expect((await admin('key', 'revoke', '--instance', 'lumon', '--key', fileKey)).code).toBe(0);
    expect((await call('/v1/person/get', { key: fileKey, body: {} })).status).toBe(401);
    const again = await admin('apply', file);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      'instance lumon: the api_key of data source "App" was revoked (npm run admin -- key revoke): put a new key in the file',
    );
    expect((await call('/v1/person/get', { key: fileKey, body: {} })).status).toBe(401);
  });

  it('refuses a key of fewer than 32 characters in a file', async () => {
    const file = configFile({
      instances: [
        { id: 'shorty', name: 'Shorty', data_sources: [{ name: 'App', api_key: 'short-key' }] },
      ],
    });
    const result = await admin('apply', file);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('instances[0].data_sources[0].api_key');
    expect(result.stderr).toContain('at least 32 characters');
    expect((await call('/v1/person/get', { key: 'short-key', body: {} })).status).toBe(401);
  });
});

describe('npm run admin -- signing-key', () => {
  it('keeps no signing secret in plain form, and rotates with an overlap: old cursors keep working', async () => {
    const { db } = stackDb();
    const table = tableName('default', 'config');
    const plain = await db.send(
      new GetCommand({ TableName: table, Key: { pk: 'DEPLOYMENT', sk: 'SIGNING_SECRET' } }),
    );
    expect(plain.Item).toBeUndefined();
    const ring = await db.send(
      new GetCommand({ TableName: table, Key: { pk: 'DEPLOYMENT', sk: 'SIGNING_KEYS' } }),
    );
    const keys = (ring.Item?.keyring as { keys: { kid: string; wrapped: string }[] }).keys;
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.wrapped).toMatch(/^(local|kms):/);

    const first = await call('/v1/person/get', { key: KEYS.pager, body: { limit: 1 } });
    const cursor = String(first.body.cursor_id);
    expect(cursor).toMatch(/^[0-9a-f]{24}$/);
    // The key that signed the state the cursor names: the one signing now.
    const before = (await admin('signing-key', 'list')).stdout;
    const kid = /^ {2}(k[0-9a-z]+) {2}signing/m.exec(before)?.[1] ?? '';
    expect(kid).toMatch(/^k[0-9a-z]+$/);
    const rotated = await admin('signing-key', 'rotate');
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(/^New signing key k[0-9a-z]+: signs from /m);
    const listed = (await admin('signing-key', 'list')).stdout;
    expect(listed).toMatch(new RegExp(`${kid}  signing .*retires `));
    // The cursor of the key being replaced still pages.
    const next = await call('/v1/person/get', {
      key: KEYS.pager,
      body: { limit: 1, cursor_id: cursor },
    });
    expect(next.status).toBe(200);
  });
});

describe('npm run admin -- apply', () => {
  const initech = (sources: { name: string; api_key: string }[]) => ({
    instances: [{ id: 'initech', name: 'Initech', region: 'default', data_sources: sources }],
  });

  it('applies a file idempotently and revokes the keys of data sources it drops', async () => {
    const both = configFile(
      initech([
        { name: 'A', api_key: 'initech-key-32-characters-or-more-a' },
        { name: 'B', api_key: 'initech-key-32-characters-or-more-b' },
      ]),
    );
    const first = await admin('apply', both);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Applied to region default: 1 instance\(s\) \(initech\)/);
    expect(
      (await call('/v1/person/get', { key: 'initech-key-32-characters-or-more-a', body: {} }))
        .status,
    ).toBe(200);

    expect((await admin('apply', both)).code).toBe(0);
    expect(
      (await call('/v1/person/get', { key: 'initech-key-32-characters-or-more-a', body: {} }))
        .status,
    ).toBe(200);

    const onlyA = configFile(
      initech([{ name: 'A', api_key: 'initech-key-32-characters-or-more-a' }]),
    );
    expect((await admin('apply', onlyA)).code).toBe(0);
    expect(
      (await call('/v1/person/get', { key: 'initech-key-32-characters-or-more-b', body: {} }))
        .status,
    ).toBe(401);
    expect(
      (await call('/v1/person/get', { key: 'initech-key-32-characters-or-more-a', body: {} }))
        .status,
    ).toBe(200);
    // Instances the file does not name are left alone.
    expect((await call('/v1/person/get', { key: KEYS.globex, body: {} })).status).toBe(200);
  });

  it('records keys of instances of other regions so that they are redirected', async () => {
    const file = configFile({
      instances: [
        {
          id: 'wombat',
          name: 'Wombat',
          region: 'au',
          data_sources: [{ name: 'X', api_key: 'wombat-key-32-characters-or-more-x' }],
        },
      ],
    });
    const result = await admin('apply', file, '--region', 'eu');
    expect(result.stdout).toMatch(/0 instance\(s\), 1 key\(s\) of other regions/);
    const response = await call('/v1/person/get', {
      key: 'wombat-key-32-characters-or-more-x',
      region: 'eu',
      body: {},
    });
    expect(response.status).toBe(421);
    expect(response.body.error).toContain(`:${TEST_STACK.port + 1}`);
  });

  it('refuses an invalid file, naming the path of the bad entry, and writes nothing', async () => {
    const file = configFile({
      instances: [
        {
          id: 'broken',
          name: 'Broken',
          data_sources: [{ name: 'X', api_key: 'broken-key-32-characters-or-more-x' }],
          person_fields: [
            { id: 'str:cm:ok', name: 'Ok' },
            { id: 'nope', name: 'Bad' },
          ],
        },
      ],
    });
    const result = await admin('apply', file);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('instances[0].person_fields[1].id');
    expect(
      (await call('/v1/person/get', { key: 'broken-key-32-characters-or-more-x', body: {} }))
        .status,
    ).toBe(401);
  });

  it('explains its usage', async () => {
    const result = await admin('frobnicate');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown command "frobnicate"[\s\S]*usage:/);
  });
});

describe('unique fields (merge keys by declaration)', () => {
  const claims = (unique: boolean, mergeBy = ['str::email']) => ({
    instances: [
      {
        id: 'claims',
        name: 'Claims',
        region: 'default',
        data_sources: [
          { name: 'Web', api_key: 'claims-key-32-characters-or-more-x', merge_by: mergeBy },
        ],
        person_fields: [
          { id: 'str:cm:member-no', name: 'Member number', ...(unique ? { unique } : {}) },
        ],
      },
    ],
  });
  const mergeClaims = (body: Record<string, unknown>) =>
    call('/v1/person/merge', { key: 'claims-key-32-characters-or-more-x', body });

  it('refuses a data source that merges by a field that is not unique, saying why', async () => {
    const result = await admin('apply', configFile(claims(false, ['str:cm:member-no'])));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('instances[0].data_sources[0].merge_by[0]');
    expect(result.stderr).toContain('its values are not unique per instance');
    const last = await admin('apply', configFile(claims(false, ['str::last'])));
    expect(last.stderr).toContain('"str::last" cannot be a merge field');
  });

  it('claims the values people already hold, reports the shared ones, then merges by the field', async () => {
    expect((await admin('apply', configFile(claims(false)))).code).toBe(0);
    const people = [
      { 'str::email': 'ann@claims.test', 'str:cm:member-no': 'M-1' },
      { 'str::email': 'bob@claims.test', 'str:cm:member-no': 'M-2' },
      { 'str::email': 'cid@claims.test', 'str:cm:member-no': 'M-2' },
      { 'str::email': 'dee@claims.test' },
    ];
    const created = await mergeClaims({ people: people.map((fields) => ({ fields })) });
    const ids = (created.body.people as { person_id: string }[]).map((p) => p.person_id);
    // Not unique yet: merging by it is refused, saying why.
    const early = await mergeClaims({
      merge_by: ['str:cm:member-no'],
      people: [{ fields: { 'str:cm:member-no': 'M-1' } }],
    });
    expect(early.status).toBe(400);
    expect(early.body.error).toMatch(/merge_by\[0\]: "str:cm:member-no" cannot be a merge field/);

    const applied = await admin('apply', configFile(claims(true)), '--settle', '0');
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain(
      'claims: str:cm:member-no is now unique: 2 value(s) claimed; 1 value(s) held by several people:',
    );
    const shared = applied.stdout.split('\n').find((line) => line.includes('"M-2"')) ?? '';
    expect(shared).toContain(ids[1]);
    expect(shared).toContain(ids[2]);

    // Merging by the field finds the people who hold the values.
    const [byNumber] = (
      await mergeClaims({
        merge_by: ['str:cm:member-no'],
        // Found by the number (not the email, a new one that Ann takes).
        people: [{ fields: { 'str:cm:member-no': 'M-1', 'str::email': 'ann.new@claims.test' } }],
      })
    ).body.people as { person_id: string; status: string }[];
    expect(byNumber).toEqual({ person_id: ids[0], status: 'merged' });
    // A value someone holds cannot be given to another person.
    const taken = await mergeClaims({
      people: [
        { fields: { 'str::email': 'dee@claims.test', 'str:cm:member-no': 'M-1' } },
        { fields: { 'str::email': 'eve@claims.test' } },
      ],
    });
    expect((taken.body.people as { status: string; error: string }[])[0]).toMatchObject({
      status: 'invalid',
      error: expect.stringContaining('already belongs to another person') as unknown,
    });
    // Both people who shared M-2 (one holds the claim, one does not) can change it (no wedge).
    for (const email of ['bob@claims.test', 'cid@claims.test']) {
      const [moved] = (
        await mergeClaims({
          people: [{ fields: { 'str::email': email, 'str:cm:member-no': `M-${email[0] ?? ''}` } }],
        })
      ).body.people as { status: string }[];
      expect(moved?.status).toBe('merged');
    }
    // Applying again changes nothing and claims nothing new.
    const again = await admin('apply', configFile(claims(true)), '--settle', '0');
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('is now unique');
  });

  it('gives the claims back when the field is no longer unique', async () => {
    const result = await admin('apply', configFile(claims(false)));
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /claims: str:cm:member-no is no longer unique: \d+ claim\(s\) given back/,
    );
    // Two people may now share a value.
    const response = await mergeClaims({
      people: [{ fields: { 'str::email': 'fay@claims.test', 'str:cm:member-no': 'M-1' } }],
    });
    expect((response.body.people as { status: string }[])[0]?.status).toBe('created');
  });
});

// An instance of their own: a count read before and after the repair, or the repair's two
// snapshots, would see another suite's people written meanwhile.
describe('npm run admin -- repair counts', () => {
  it('recomputes the counters of an instance from its data and reports the drift', async () => {
    const { db } = stackDb();
    const seeded = await call('/v1/person/merge', {
      key: KEYS.repair,
      body: {
        people: [
          { fields: { 'str::email': `repair-a-${Date.now()}@admin.test`, 'bol::p': true } },
          { fields: { 'str::email': `repair-b-${Date.now()}@admin.test` } },
        ],
      },
    });
    expect(seeded.status).toBe(200);
    // Counters that drifted (as if requests had died between their writes).
    await db.send(
      new UpdateCommand({
        TableName: tableName('default', 'people'),
        Key: { pk: 'repair#C', sk: '3' },
        UpdateExpression: 'ADD contacts :five, subscribers :minus',
        ExpressionAttributeValues: { ':five': 5, ':minus': -2 },
      }),
    );
    const before = (await call('/v1/person/get', { key: KEYS.repair, body: { limit: 1 } })).body
      .meta as { total_contacts: number; total_subscribers: number };
    const result = await admin('repair', 'counts', '--instance', 'repair');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `fixed contacts: was ${before.total_contacts}, counted ${before.total_contacts - 5}`,
    );
    expect(result.stdout).toContain(
      `fixed subscribers: was ${before.total_subscribers}, counted ${before.total_subscribers + 2}`,
    );
    expect(result.stdout).toMatch(/Counters corrected: 2\./);
    const after = (await call('/v1/person/get', { key: KEYS.repair, body: { limit: 1 } })).body
      .meta as { total_contacts: number; total_subscribers: number };
    expect(after.total_contacts).toBe(before.total_contacts - 5);
    expect(after.total_subscribers).toBe(before.total_subscribers + 2);
    // A second run finds nothing to fix.
    const again = await admin('repair', 'counts', '--instance', 'repair');
    expect(again.stdout).toMatch(/Counters corrected: 0\./);
  });

  it('corrects member counts left too high', async () => {
    const { db } = stackDb();
    const organization = await call('/v1/organizations/merge', {
      key: KEYS.repair,
      body: {
        merge_by: ['str:o:name'],
        organizations: [{ fields: { 'str:o:name': `Drift ${Date.now()}` } }],
      },
    });
    const id =
      (organization.body.organizations as { organization_id: string }[])[0]?.organization_id ?? '';
    await db.send(
      new UpdateCommand({
        TableName: tableName('default', 'organizations'),
        Key: { pk: `repair#O#${id}`, sk: 'O' },
        UpdateExpression: 'ADD members :seven',
        ExpressionAttributeValues: { ':seven': 7 },
      }),
    );
    const result = await admin('repair', 'counts', '--instance', 'repair');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`fixed members of ${id}: was 7, counted 0`);
  });
});

describe('npm run admin -- repair indexes', () => {
  it("puts back every person's field index entries", async () => {
    const { db } = stackDb();
    const first = `Ix${Date.now().toString(36)}`;
    const merged = await call('/v1/person/merge', {
      key: KEYS.repair,
      body: { people: [{ fields: { 'str::email': `${first}@admin.test`, 'str::first': first } }] },
    });
    const id = (merged.body.people as { person_id: string }[])[0]?.person_id ?? '';
    const byFirst = { filter: { '$str::is': { field_id: 'str::first', value: first } } };
    expect(await idsEventually(KEYS.repair, byFirst, [id])).toEqual([id]);
    // The entry lost (a person written before the field index, or a stream batch given up).
    await db.send(
      new DeleteCommand({
        TableName: tableName('default', 'indexes'),
        Key: {
          pk: `repair#F#str::first#${listShard(id)}`,
          sk: entrySortKey(first.toLowerCase(), id),
        },
      }),
    );
    expect(await listAll(KEYS.repair, byFirst)).toEqual([]);
    // And an entry nobody holds (a stream batch given up after an erasure, say).
    const stale = {
      pk: `repair#F#str::first#${listShard(id)}`,
      sk: entrySortKey('nobody-holds-this', id),
    };
    await db.send(new PutCommand({ TableName: tableName('default', 'indexes'), Item: stale }));
    const result = await admin('repair', 'indexes', '--instance', 'repair');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^repair: \d+ people, \d+ entries put, \d+ removed\.$/m);
    expect((await listAll(KEYS.repair, byFirst)).map((c) => c.id)).toEqual([id]);
    const { Item } = await db.send(
      new GetCommand({ TableName: tableName('default', 'indexes'), Key: stale }),
    );
    expect(Item).toBeUndefined();
  });
});
