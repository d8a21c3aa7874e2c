import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { localOnlyEnv, run } from './cli.js';
import {
  KEYS,
  SEED_FILE,
  baseUrl,
  stackEnv,
  startStack,
  stopStack,
  waitForBanner,
  waitForHealth,
  shifted,
} from './stack.js';
import { checkedFetch } from '../contract.js';

/**
 * `npm start` itself, on ports of its own: data survives a restart, Ctrl-C (SIGTERM) stops
 * every child, and the failures a newcomer meets are explained in one line.
 */
// Moved by CDP_TEST_PORT_OFFSET like the suite's stacks, and clear of theirs at any offset
// that is a multiple of 100 (the SQS port was 5066: the plain stack's at offset 100).
const PORTS = shifted({ port: 3950, dynamodbPort: 8950, sqsPort: 5006, sesPort: 8955 });

async function post(
  path: string,
  key: string,
  body: unknown,
  region: 'default' | 'au' = 'default',
) {
  const response = await checkedFetch(`${baseUrl(region, PORTS)}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function emails(key: string): Promise<unknown[]> {
  const { status, body } = await post('/v1/person/get', key, { fields: ['str::email'] });
  expect(status).toBe(200);
  return (body.contacts as { fields?: Record<string, unknown> }[]).map(
    (c) => c.fields?.['str::email'],
  );
}

async function allPortsClosed(): Promise<boolean> {
  const ports = [
    PORTS.port,
    PORTS.port + 1,
    PORTS.port + 2,
    PORTS.dynamodbPort,
    PORTS.sqsPort,
    PORTS.sesPort,
  ];
  const open = await Promise.all(
    ports.map(
      (port) =>
        new Promise<boolean>((resolve) => {
          const probe = createServer();
          probe.once('error', () => {
            resolve(true);
          });
          probe.listen(port, '127.0.0.1', () => {
            probe.close(() => {
              resolve(false);
            });
          });
        }),
    ),
  );
  return open.every((isOpen) => !isOpen);
}

describe('npm start', () => {
  it('keeps data across a restart and stops every child on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cdp-data-'));
    const env = stackEnv(PORTS, { CDP_DATA_DIR: dataDir });

    const first = startStack(env);
    let mintedKey = '';
    let demoKeys: Record<string, string> = {};
    try {
      await waitForHealth(PORTS, first.child);
      await waitForBanner(first.output, first.child);
      demoKeys = JSON.parse(readFileSync(join(dataDir, 'demo-keys.json'), 'utf8')) as Record<
        string,
        string
      >;
      expect(first.output()).toContain(demoKeys.default);
      // DynamoDB Local's JVM compiles with C1 alone (local/dynamodb-local.ts).
      const dynamoPid = /DynamoDB Local (\d+)/.exec(first.output())?.[1];
      expect(dynamoPid).toMatch(/^\d+$/);
      expect(readFileSync(`/proc/${dynamoPid}/environ`, 'utf8').split('\0')).toContain(
        'JDK_JAVA_OPTIONS=-XX:TieredStopAtLevel=1',
      );
      const merged = await post('/v1/person/merge', demoKeys.default ?? '', {
        people: [{ fields: { 'str::email': 'kept@example.com' } }],
      });
      expect(merged.status).toBe(200);
      expect((await post('/v1/person/get', demoKeys.au ?? '', {}, 'au')).status).toBe(200);

      const minted = await run(
        ['local/admin.ts', 'key', 'create', '--instance', 'demo', '--data-source', 'Demo'],
        localOnlyEnv({ DYNAMODB_PORT: String(PORTS.dynamodbPort) }),
      );
      mintedKey = minted.stdout.trim().split('\n').at(-1) ?? '';
      expect(await emails(mintedKey)).toEqual(['kept@example.com']);
    } finally {
      expect(await stopStack(first.child)).toBe(0);
    }
    expect(await allPortsClosed()).toBe(true);

    const second = startStack(env);
    try {
      await waitForHealth(PORTS, second.child);
      expect(await emails(demoKeys.default ?? '')).toEqual(['kept@example.com']);
      expect(await emails(mintedKey)).toEqual(['kept@example.com']);
    } finally {
      await stopStack(second.child);
    }
  }, 300_000);

  it('starts with every DynamoDB call of the API throttled, which then answers 503 with Retry-After', async () => {
    // Faults are for the API's and the workers' calls: the stack's own setup (tables, queues,
    // the configuration) and the admin CLI never meet them.
    const faulty = stackEnv(PORTS, {
      CDP_EPHEMERAL: '1',
      CDP_FAULTS: 'throttle=1',
      CDP_SEED_FILE: SEED_FILE,
      CDP_REQUEST_BUDGET_MS: '1500',
    });
    const stack = startStack(faulty);
    try {
      await waitForHealth(PORTS, stack.child);
      await waitForBanner(stack.output, stack.child);
      expect(stack.output()).toContain('DynamoDB faults injected (CDP_FAULTS): throttle=1');
      const response = await checkedFetch(`${baseUrl('default', PORTS)}/v1/person/merge`, {
        method: 'POST',
        headers: { 'x-api-key': KEYS.acme, 'content-type': 'application/json' },
        body: JSON.stringify({ people: [{ fields: { 'str::email': 'throttled@example.com' } }] }),
      });
      expect(response.status).toBe(503);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await response.json()).toMatchObject({ code: 503, error: expect.any(String) });

      const minted = await run(
        ['local/admin.ts', 'key', 'create', '--instance', 'acme', '--data-source', 'Website'],
        localOnlyEnv({ DYNAMODB_PORT: String(PORTS.dynamodbPort), CDP_FAULTS: 'throttle=1' }),
      );
      expect({ code: minted.code, stderr: minted.stderr }).toEqual({ code: 0, stderr: '' });
      expect(minted.stdout.trim().split('\n').at(-1)).toMatch(/^cdp_default_/);
    } finally {
      expect(await stopStack(stack.child)).toBe(0);
    }
  }, 120_000);

  it('explains a port in use in one line and exits non-zero', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(PORTS.port + 1, '127.0.0.1', resolve));
    try {
      const result = await run(['local/start.ts'], stackEnv(PORTS, { CDP_EPHEMERAL: '1' }));
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(
        `cdp: Port ${PORTS.port + 1} is already in use: stop what is using it, or choose another with PORT=<port>.`,
      );
    } finally {
      blocker.close();
    }
  });

  it('explains a missing Java in one line and exits non-zero', async () => {
    const result = await run(
      [join(process.cwd(), 'local/start.ts')],
      // node is started by its absolute path; with no PATH, `java` cannot be found.
      stackEnv(PORTS, { CDP_EPHEMERAL: '1', PATH: '/nonexistent' }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toMatch(/^cdp: Java 17 or later is needed to run DynamoDB Local/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('refuses an invalid seed file, naming the bad entry', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cdp-seed-')), 'seed.json');
    writeFileSync(file, JSON.stringify({ instances: [{ id: 'x', name: 'X', region: 'mars' }] }));
    const result = await run(
      ['local/start.ts'],
      stackEnv(PORTS, { CDP_EPHEMERAL: '1', CDP_SEED_FILE: file }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('instances[0].region');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});
