import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localOnlyEnv, run } from './cli.js';
import { KEYS, TEST_STACK, call } from './stack.js';

const env = localOnlyEnv({ DYNAMODB_PORT: String(TEST_STACK.dynamodbPort) });
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
    expect(noSource.stderr).toMatch(/has no data source "Nope" \(it has "Website", "Shop"\)/);
  });
});

describe('npm run admin -- apply', () => {
  const initech = (sources: { name: string; api_key: string }[]) => ({
    instances: [{ id: 'initech', name: 'Initech', region: 'default', data_sources: sources }],
  });

  it('applies a file idempotently and revokes the keys of data sources it drops', async () => {
    const both = configFile(
      initech([
        { name: 'A', api_key: 'initech-key-a' },
        { name: 'B', api_key: 'initech-key-b' },
      ]),
    );
    const first = await admin('apply', both);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Applied to region default: 1 instance\(s\) \(initech\)/);
    expect((await call('/v1/person/get', { key: 'initech-key-a', body: {} })).status).toBe(200);

    expect((await admin('apply', both)).code).toBe(0);
    expect((await call('/v1/person/get', { key: 'initech-key-a', body: {} })).status).toBe(200);

    const onlyA = configFile(initech([{ name: 'A', api_key: 'initech-key-a' }]));
    expect((await admin('apply', onlyA)).code).toBe(0);
    expect((await call('/v1/person/get', { key: 'initech-key-b', body: {} })).status).toBe(401);
    expect((await call('/v1/person/get', { key: 'initech-key-a', body: {} })).status).toBe(200);
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
          data_sources: [{ name: 'X', api_key: 'wombat-key' }],
        },
      ],
    });
    const result = await admin('apply', file, '--region', 'eu');
    expect(result.stdout).toMatch(/0 instance\(s\), 1 key\(s\) of other regions/);
    const response = await call('/v1/person/get', { key: 'wombat-key', region: 'eu', body: {} });
    expect(response.status).toBe(421);
    expect(response.body.error).toContain(`:${TEST_STACK.port + 1}`);
  });

  it('refuses an invalid file, naming the path of the bad entry, and writes nothing', async () => {
    const file = configFile({
      instances: [
        {
          id: 'broken',
          name: 'Broken',
          data_sources: [{ name: 'X', api_key: 'broken-key' }],
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
    expect((await call('/v1/person/get', { key: 'broken-key', body: {} })).status).toBe(401);
  });

  it('explains its usage', async () => {
    const result = await admin('frobnicate');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown command "frobnicate"[\s\S]*usage:/);
  });
});
