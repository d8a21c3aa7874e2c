import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { tableName } from '../../shared/resources.js';
import { adminEnv, run } from './cli.js';
import { asset, fetchLink, linkTokensOf, sendOk, statusOf, type Body } from './emails.js';
import { activitiesOf, uniqueEmail } from './people.js';
import {
  KEYS,
  SEED_FILE,
  baseUrl,
  call,
  shifted,
  stackDb,
  stackEnv,
  startStack,
  stopStack,
  waitForBanner,
  waitForHealth,
  type StackPorts,
} from './stack.js';
import { checkedFetch } from '../contract.js';

/**
 * The security checks: keys kept out of logs, answers and the admin CLI's output,
 * keys stored hashed, link tokens that cannot be forged or moved to another message, and
 * the security headers of every kind of answer.
 */
interface SeedFile {
  instances: { data_sources: { api_key: string }[] }[];
}
const SEED_KEYS = (JSON.parse(readFileSync(SEED_FILE, 'utf8')) as SeedFile).instances.flatMap(
  (instance) => instance.data_sources.map((source) => source.api_key),
);

/** Places `text` holds one of `keys`, with a little context, for a readable failure. */
function keysIn(text: string, keys: readonly string[]): string[] {
  return keys.flatMap((key) => {
    const at = text.indexOf(key);
    return at < 0 ? [] : [`${key} in …${text.slice(Math.max(0, at - 80), at + key.length + 20)}…`];
  });
}

describe('API keys in logs and answers', () => {
  // A stack of this test's own, logging at DEBUG (the suite's stacks log nothing), on ports
  // clear of the suite's stacks and of lifecycle.test.ts's and process-faults.test.ts's (jest
  // runs two files at once); one per jest project.
  const kind = ['plain', 'faults', 'localstack'].indexOf(process.env.CDP_TEST_STACK ?? 'plain');
  const ports: StackPorts = shifted({
    port: 3970 + 4 * Math.max(kind, 0),
    dynamodbPort: 8970 + Math.max(kind, 0),
    sqsPort: 5036 + Math.max(kind, 0),
    sesPort: 8980 + Math.max(kind, 0),
  });
  let stack: { child: ChildProcess; output: () => string } | undefined;

  beforeAll(async () => {
    const started = startStack(
      stackEnv(ports, {
        CDP_SEED_FILE: SEED_FILE,
        CDP_EPHEMERAL: '1',
        POWERTOOLS_LOG_LEVEL: 'DEBUG',
      }),
    );
    stack = started;
    try {
      await waitForHealth(ports, started.child);
      await waitForBanner(started.output, started.child);
    } catch (error) {
      await stopStack(started.child);
      throw error;
    }
  }, 120_000);

  afterAll(async () => {
    if (stack) await stopStack(stack.child);
  }, 30_000);

  it('logs requests but never a key, and no answer repeats a key', async () => {
    const wrong = `${KEYS.acme}-wrong`;
    const sent: string[] = [KEYS.acme, KEYS.koala, KEYS.stroopwafel, wrong];
    const answers: string[] = [];
    const request = async (
      path: string,
      init: { key?: string; body?: string; headers?: Record<string, string>; method?: string },
      region: 'default' | 'au' | 'eu' = 'default',
    ) => {
      const response = await checkedFetch(`${baseUrl(region, ports)}${path}`, {
        method: init.method ?? 'POST',
        headers: {
          'content-type': 'application/json',
          ...(init.key === undefined ? {} : { 'x-api-key': init.key }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      const text = await response.text();
      answers.push(text);
      return { status: response.status, text };
    };
    const merge = JSON.stringify({ people: [{ fields: { 'str::email': uniqueEmail('log') } }] });

    // A good key, on a write and a read.
    expect((await request('/v1/person/merge', { key: KEYS.acme, body: merge })).status).toBe(200);
    expect((await request('/v1/person/get', { key: KEYS.acme, body: '{}' })).status).toBe(200);
    // A wrong key, a key of another region (both ways), no key.
    expect((await request('/v1/person/get', { key: wrong, body: '{}' })).status).toBe(401);
    expect((await request('/v1/person/get', { key: KEYS.koala, body: '{}' })).status).toBe(421);
    expect(
      (await request('/v1/person/get', { key: KEYS.stroopwafel, body: '{}' }, 'au')).status,
    ).toBe(421);
    expect((await request('/v1/person/get', { body: '{}' })).status).toBe(401);
    // Keys where no key belongs: body members, a query string, another header.
    for (const body of [
      { people: [{ fields: { 'str::email': uniqueEmail() } }], api_key: KEYS.acme },
      { people: KEYS.acme },
      { people: [{ fields: { 'str::email': KEYS.acme } }] },
      { people: [{ fields: { 'str::email': uniqueEmail() } }], merge_by: [KEYS.acme] },
    ]) {
      const answer = await request('/v1/person/merge', {
        key: KEYS.acme,
        body: JSON.stringify(body),
      });
      expect(answer.status).toBeLessThan(500);
    }
    expect((await request(`/v1/person/get?api_key=${KEYS.acme}`, { body: '{}' })).status).toBe(401);
    expect(
      (
        await request('/v1/person/get', {
          body: '{}',
          headers: { authorization: `Bearer ${KEYS.acme}` },
        })
      ).status,
    ).toBe(401);
    // Malformed keys (cut short, with a space, a near miss in case, very long); a path and a
    // method that do not exist; a body that is not JSON.
    for (const key of [
      KEYS.acme.slice(0, -1),
      `${KEYS.acme.slice(0, 8)} ${KEYS.acme.slice(8)}`,
      KEYS.acme.toUpperCase(),
      `${KEYS.acme}${'x'.repeat(4000)}`,
    ]) {
      sent.push(key);
      const answer = await request('/v1/person/get', { key, body: '{}' });
      expect([400, 401]).toContain(answer.status);
    }
    expect((await request('/v1/nowhere', { key: KEYS.acme, body: '{}' })).status).toBe(404);
    expect(
      (await request('/v1/person/get', { key: KEYS.acme, method: 'PUT', body: '{}' })).status,
    ).toBe(405);
    expect(
      (await request('/v1/person/merge', { key: KEYS.acme, body: '{"people": [' })).status,
    ).toBe(400);

    // Let the last lines reach the pipe.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const output = stack?.output() ?? '';
    // The functions did log (at DEBUG and INFO), so the absence of keys means something.
    expect(output).toMatch(/Request refused/);
    expect(output.length).toBeGreaterThan(2000);
    expect(keysIn(output, [...new Set([...sent, ...SEED_KEYS])])).toEqual([]);
    expect(keysIn(answers.join('\n'), [...new Set([...sent, ...SEED_KEYS])])).toEqual([]);
  }, 60_000);
});

describe('API keys at rest', () => {
  it('holds only SHA-256 hashes of keys, never a plaintext', async () => {
    const { db } = stackDb();
    for (const region of ['default', 'au', 'eu'] as const) {
      const items: Record<string, unknown>[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await db.send(
          new ScanCommand({ TableName: tableName(region, 'config'), ExclusiveStartKey: start }),
        );
        items.push(...(page.Items ?? []));
        start = page.LastEvaluatedKey;
      } while (start);
      const text = JSON.stringify(items);
      expect({ region, plaintexts: keysIn(text, SEED_KEYS) }).toEqual({ region, plaintexts: [] });
      const keyItems = items.filter((item) => String(item.pk).startsWith('KEY#'));
      expect(keyItems.length).toBeGreaterThanOrEqual(SEED_KEYS.length);
      for (const item of keyItems) {
        expect(item.pk).toMatch(/^KEY#[0-9a-f]{64}$/);
        expect(item.key_hash).toMatch(/^[0-9a-f]{64}$/);
        expect(item.pk).toBe(`KEY#${String(item.key_hash)}`);
      }
    }
  });
});

describe('link tokens', () => {
  /** One character changed, in the payload (names) or in the signature. */
  const altered = (token: string, at: number) => {
    const c = token.charAt(at);
    return `${token.slice(0, at)}${c === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
  };
  /**
   * What a link could have changed: the email minus SES's own delivery events, which arrive
   * whenever the SES stand-in publishes them (a `delivered` may land mid-test).
   */
  const trackedOf = async (messageId: string) => {
    const email = (await statusOf(messageId)) as { events?: { type: string }[] };
    return {
      ...email,
      events: (email.events ?? []).filter((event) => !['sent', 'delivered'].includes(event.type)),
    };
  };
  const spliced = (payloadOf: string, signatureOf: string) =>
    `${payloadOf.split('.')[0] ?? ''}.${signatureOf.split('.')[1] ?? ''}`;

  it('refuses forged, moved and repurposed tokens with the 404 envelope and records nothing', async () => {
    const [one, other] = await sendOk({
      asset: asset({
        html_body:
          '<html><body><a href="https://shop.example/one">one</a><a href="{{ urls.unsubscribe }}">u</a></body></html>',
      }),
      emails: [
        { fields: { 'str::email': uniqueEmail('token-one') } },
        { fields: { 'str::email': uniqueEmail('token-other') } },
      ],
    });
    const mine = await linkTokensOf('mailer', one?.message_id as string);
    const theirs = await linkTokensOf('mailer', other?.message_id as string);
    const base = baseUrl('default');
    const before = {
      status: await trackedOf(one?.message_id as string),
      activities: await activitiesOf(KEYS.mailer, one?.person_id as string),
      theirs: await trackedOf(other?.message_id as string),
    };

    const attempts: [string, 'GET' | 'POST', string][] = [];
    for (const [path, token] of [
      ['/t/c', mine.click],
      ['/t/u', mine.unsubscribe],
    ] as const) {
      const methods: ('GET' | 'POST')[] = path === '/t/u' ? ['GET', 'POST'] : ['GET'];
      for (const method of methods) {
        attempts.push(
          [path, method, altered(token, 2)],
          [path, method, altered(token, token.length - 3)],
          [path, method, spliced(theirs.click, token)],
          [path, method, spliced(token, theirs.unsubscribe)],
        );
      }
    }
    // Another purpose's token of the same message.
    attempts.push(
      ['/t/c', 'GET', mine.open],
      ['/t/c', 'GET', mine.unsubscribe],
      ['/t/u', 'POST', mine.click],
      ['/t/u', 'POST', mine.open],
      ['/t/o', 'GET', mine.click],
      ['/t/o', 'GET', altered(mine.open, 3)],
    );
    for (const [path, method, token] of attempts) {
      const response = await fetchLink(`${base}${path}?t=${token}`, method);
      const body = (await response.json()) as Body;
      expect({ path, method, token, status: response.status, body }).toEqual({
        path,
        method,
        token,
        status: 404,
        body: { request_id: expect.any(String), code: 404, error: 'This link is not valid' },
      });
      expect(response.headers.get('location')).toBeNull();
    }
    const after = {
      status: await trackedOf(one?.message_id as string),
      activities: await activitiesOf(KEYS.mailer, one?.person_id as string),
      theirs: await trackedOf(other?.message_id as string),
    };
    expect(after).toEqual(before);
  });
});

describe('security headers', () => {
  /** What every answer carries; `page` for the public links' HTML, whose CSP is their own. */
  const expectSecure = (headers: Headers, what: string, page = false) => {
    const got = {
      what,
      hsts: headers.get('strict-transport-security'),
      nosniff: headers.get('x-content-type-options'),
      csp: headers.get('content-security-policy'),
      frames: headers.get('x-frame-options'),
      referrer: headers.get('referrer-policy'),
    };
    expect(got).toEqual({
      what,
      hsts: expect.stringMatching(/max-age=\d{6,}/),
      nosniff: 'nosniff',
      csp: page
        ? expect.stringMatching(/default-src 'none'.*sandbox/)
        : expect.stringMatching(/frame-ancestors 'none'.*sandbox/),
      frames: expect.stringMatching(/^deny$/i),
      referrer: expect.stringMatching(/no-referrer/),
    });
  };

  it('are on a 200, a 4xx, a 404 of no route and the public link pages', async () => {
    const ok = await call('/v1/person/get', { key: KEYS.acme, body: { limit: 1 } });
    expect(ok.status).toBe(200);
    expectSecure(ok.headers, '200');
    const refused = await call('/v1/person/get', { key: 'nope', body: {} });
    expect(refused.status).toBe(401);
    expectSecure(refused.headers, '401');
    const invalid = await call('/v1/person/get', { key: KEYS.acme, body: { limit: 'x' } });
    expect(invalid.status).toBe(400);
    expectSecure(invalid.headers, '400');
    const nowhere = await call('/v1/nowhere', { key: KEYS.acme, body: {} });
    expect(nowhere.status).toBe(404);
    expectSecure(nowhere.headers, 'no route');
    const health = await checkedFetch(`${baseUrl('default')}/health`);
    expectSecure(health.headers, 'health');

    const [entry] = await sendOk({
      asset: asset({
        html_body:
          '<html><body><a href="https://shop.example/h">h</a><a href="{{ urls.unsubscribe }}">u</a></body></html>',
      }),
      emails: [{ fields: { 'str::email': uniqueEmail('headers') } }],
    });
    const tokens = await linkTokensOf('mailer', entry?.message_id as string);
    const base = baseUrl('default');
    const page = await checkedFetch(`${base}/t/u?t=${tokens.unsubscribe}`);
    expect(page.status).toBe(200);
    expectSecure(page.headers, 'unsubscribe page', true);
    const click = await checkedFetch(`${base}/t/c?t=${tokens.click}`, { redirect: 'manual' });
    expect(click.status).toBe(302);
    expectSecure(click.headers, 'click', true);
    const pixel = await checkedFetch(`${base}/t/o?t=${tokens.open}`);
    expect(pixel.status).toBe(200);
    expectSecure(pixel.headers, 'open pixel', true);
    // Mail clients of any origin embed the pixel: same-origin would have browsers block it.
    expect(pixel.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(ok.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    const badLink = await checkedFetch(`${base}/t/c?t=nothing`, { redirect: 'manual' });
    expect(badLink.status).toBe(404);
    expectSecure(badLink.headers, 'refused link', true);
  });
});

describe('the admin CLI and keys', () => {
  const admin = (...args: string[]) => run(['local/admin.ts', ...args], adminEnv());
  const fileKey = 'test-key-32-characters-or-more-cli-secret-file-key';

  it('prints no key but the one it mints, alone on the last line', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cdp-security-')), 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        instances: [
          {
            id: 'clisec',
            name: 'CLI security',
            region: 'default',
            plan: 'business',
            data_sources: [{ name: 'App', api_key: fileKey }],
          },
        ],
      }),
    );
    const outputs: string[] = [];
    const record = async (args: string[]) => {
      const result = await admin(...args);
      outputs.push(`${args.join(' ')}\n${result.stdout}\n${result.stderr}`);
      return result;
    };
    expect((await record(['apply', file])).code).toBe(0);
    expect((await record(['usage', '--instance', 'acme'])).code).toBe(0);
    expect((await record(['dlq', 'list'])).code).toBe(0);
    // Wrong uses print their usage, not keys.
    expect((await record(['key', 'create', '--instance', 'clisec'])).code).not.toBe(0);
    const minted = await record(['key', 'create', '--instance', 'clisec', '--data-source', 'App']);
    expect(minted.code).toBe(0);

    const known = [...SEED_KEYS, fileKey];
    expect(keysIn(outputs.join('\n'), known)).toEqual([]);
    const lines = minted.stdout.trim().split('\n');
    const key = lines.at(-1) ?? '';
    expect(key).toMatch(/^cdp_default_[A-Za-z0-9_-]{43}$/);
    // The key appears once: on its line, nowhere else in any output.
    const everything = outputs.join('\n');
    expect(everything.split(key).length - 1).toBe(1);
    const keyLike = /cdp_(default|au|eu)_[A-Za-z0-9_-]{20,}/g;
    expect(everything.match(keyLike)).toEqual([key]);
    expect((await call('/v1/person/get', { key, body: {} })).status).toBe(200);
  }, 120_000);
});
