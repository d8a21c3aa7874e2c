import { describe, expect, it, jest } from '@jest/globals';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { proxyEvent } from '../../../local/http-adapter.js';
import { z } from 'zod';
import {
  InvalidTimeZoneError,
  RateLimitedError,
  ServiceUnavailableError,
  UnknownApiKeyError,
  ValidationError,
} from '../../../shared/domain/errors.js';
import { apiHandler, publicHandler, routeHandlers } from '../../../shared/http/api-handler.js';
import { logger } from '../../../shared/lib/logger.js';
import { findRoute } from '../../../shared/routes.js';
import { testTenant } from '../fixtures.js';
import { MemoryIdempotencyStore } from './memory-idempotency-store.js';

const tenant = testTenant();
/** Another data source of the same instance (`acme`). */
const shopTenant = {
  ...tenant,
  dataSource: { ...tenant.dataSource, name: 'Shop' },
};

/** A REST API event with a text body (API Gateway sends base64 ones too: tested below). */
function event(
  body: string | undefined,
  headers: Record<string, string> = {},
): APIGatewayProxyEvent {
  return {
    ...proxyEvent({
      method: 'POST',
      url: '/v1/person/merge',
      headers: { 'content-type': 'application/json', ...headers },
      body: Buffer.alloc(0),
      requestId: 'req-123',
      resource: '/v1/person/merge',
    }),
    body: body ?? null,
    isBase64Encoded: false,
  };
}

const context = {
  awsRequestId: 'lambda-1',
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

function setup(
  run: (body: { people: unknown[] }) => Promise<unknown> = (body) => Promise.resolve(body),
  idempotency = new MemoryIdempotencyStore(),
) {
  const seenKeys: (string | undefined)[] = [];
  let runs = 0;
  const handler = apiHandler(
    findRoute('POST /v1/person/merge'),
    {
      authenticate: (key) => {
        seenKeys.push(key);
        if (key === 'limited') {
          return Promise.reject(new RateLimitedError(2, { requests_per_second: 1, burst: 3 }));
        }
        if (key === 'shop') return Promise.resolve(shopTenant);
        return key === 'good' ? Promise.resolve(tenant) : Promise.reject(new UnknownApiKeyError());
      },
      body: z.object({ people: z.array(z.unknown()).min(1).max(100) }),
      idempotency,
    },
    async ({ body }) => {
      runs += 1;
      return { body: await run(body) };
    },
  );
  return { handler, seenKeys, idempotency, runs: () => runs };
}

function parse(response: { body: string }) {
  return JSON.parse(response.body) as Record<string, unknown>;
}

describe('the HTTP stack', () => {
  it('hands the validated body to the domain and answers JSON with the request ID', async () => {
    const { handler } = setup();
    const response = await handler(event('{"people":[{"a":1}]}', { 'X-API-KEY': 'good' }), context);
    expect(response.statusCode).toBe(200);
    expect(parse(response)).toEqual({ people: [{ a: 1 }] });
    expect(response.headers['x-request-id']).toBe('req-123');
    expect(response.headers['content-type']).toMatch(/^application\/json/);
  });

  it('refuses an oversized body with 413 before authenticating or parsing', async () => {
    const { handler, seenKeys } = setup();
    const response = await handler(
      event('{' + ' '.repeat(2 * 1024 * 1024), { 'x-api-key': 'good' }),
      context,
    );
    expect(response.statusCode).toBe(413);
    expect(parse(response)).toEqual({
      request_id: 'req-123',
      code: 413,
      error: 'Request body is larger than the limit of 2097152 bytes',
    });
    expect(seenKeys).toEqual([]);
  });

  it('measures base64 bodies by their decoded size', async () => {
    const { handler } = setup();
    const body = Buffer.from('{"people":[1]}').toString('base64');
    const response = await handler(
      { ...event(body, { 'x-api-key': 'good' }), isBase64Encoded: true },
      context,
    );
    expect(response.statusCode).toBe(200);
  });

  it('authenticates before parsing: an unknown key gets 401 even with a broken body', async () => {
    const { handler } = setup();
    const response = await handler(event('{broken', { 'x-api-key': 'bad' }), context);
    expect(response.statusCode).toBe(401);
    expect(parse(response)).toMatchObject({ code: 401, error: 'Invalid API key' });
  });

  it('answers a rate-limited key 429 with Retry-After, before the body is read or kept', async () => {
    const { handler, idempotency, runs } = setup();
    const response = await handler(
      event('{broken', { 'x-api-key': 'limited', 'idempotency-key': 'k-429' }),
      context,
    );
    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('2');
    expect(response.headers['x-request-id']).toBe('req-123');
    expect(parse(response)).toEqual({
      request_id: 'req-123',
      code: 429,
      error:
        'Rate limit exceeded: this API key may make 1 request per second (bursts of 3); retry after 2 seconds',
    });
    expect(runs()).toBe(0);
    expect(idempotency.records.size).toBe(0);
  });

  it('answers malformed JSON with 400', async () => {
    const { handler } = setup();
    const response = await handler(event('{broken', { 'x-api-key': 'good' }), context);
    expect(response.statusCode).toBe(400);
    expect(parse(response).error).toMatch(/^Malformed JSON body/);
  });

  it('refuses a JSON body that tries to set __proto__', async () => {
    const { handler } = setup();
    const response = await handler(
      event('{"__proto__":{"x":1},"people":[1]}', { 'x-api-key': 'good' }),
      context,
    );
    expect(response.statusCode).toBe(400);
    expect(parse(response).error).toBe(
      'Forbidden member "__proto__" in the request body: it names an object prototype',
    );
  });

  it('names a nested prototype member by its path, escaped or not, and runs nothing', async () => {
    const { handler, runs } = setup();
    for (const [body, member] of [
      [
        '{"people":[{"fields":{"str::email":"a@b.co","__proto__":1}}]}',
        'people[0].fields.__proto__',
      ],
      ['{"people":[1,{"x":{"constructor":{"prototype":{}}}}]}', 'people[1].x.constructor'],
      ['{"people":[{"\\u005f_proto__":{"polluted":true}}]}', 'people[0].__proto__'],
    ]) {
      const response = await handler(event(body, { 'x-api-key': 'good' }), context);
      expect(response.statusCode).toBe(400);
      expect(parse(response)).toMatchObject({
        error: `Forbidden member "${member}" in the request body: it names an object prototype`,
        details: [{ field: member, error: 'forbidden member name' }],
      });
    }
    expect(runs()).toBe(0);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('says a deeply nested valid JSON body nests too deep, not that it is malformed', async () => {
    const { handler, runs } = setup();
    const deep = `{"people":[${'['.repeat(10_000)}${']'.repeat(10_000)}]}`;
    const response = await handler(event(deep, { 'x-api-key': 'good' }), context);
    expect(response.statusCode).toBe(400);
    expect(parse(response)).toMatchObject({
      code: 400,
      error: 'Request body nests deeper than 64 levels',
      details: [{ field: 'body', error: 'nests deeper than 64 levels of objects and arrays' }],
    });
    expect(runs()).toBe(0);
    // Brackets inside strings are text, not nesting; 64 levels are accepted.
    const text = JSON.stringify({ people: ['['.repeat(1000)] });
    expect((await handler(event(text, { 'x-api-key': 'good' }), context)).statusCode).toBe(200);
    const deepest = `{"people":${'['.repeat(63)}${']'.repeat(63)}}`;
    expect((await handler(event(deepest, { 'x-api-key': 'good' }), context)).statusCode).toBe(200);
  });

  it('refuses a lone UTF-16 surrogate in a value or a member name, naming the member', async () => {
    const { handler, runs } = setup();
    const inValue = await handler(
      event('{"people":[{"fields":{"str::email":"\\ud800@x.co"}}]}', { 'x-api-key': 'good' }),
      context,
    );
    expect(inValue.statusCode).toBe(400);
    expect(parse(inValue).error).toMatch(
      /^people\[0\]\.fields\.str::email: contains a lone UTF-16/,
    );
    const inName = await handler(
      event('{"people":[{"a\\udc00":1}]}', { 'x-api-key': 'good' }),
      context,
    );
    expect(parse(inName).error).toMatch(/^people\[0\]\.a\\udc00: contains a lone UTF-16/);
    expect(runs()).toBe(0);
    // A surrogate pair (an emoji) is text.
    const pair = await handler(
      event('{"people":[{"n":"\\ud83d\\ude00"}]}', { 'x-api-key': 'good' }),
      context,
    );
    expect(pair.statusCode).toBe(200);
  });

  it('names the member that failed validation', async () => {
    const { handler } = setup();
    const response = await handler(event('{"people":[]}', { 'x-api-key': 'good' }), context);
    expect(response.statusCode).toBe(400);
    const body = parse(response);
    expect(body.error).toMatch(/^Invalid request body: people: /);
    expect(body.details).toEqual([{ field: 'people', error: expect.any(String) as unknown }]);
  });

  it('passes domain errors through with their status and details', async () => {
    const { handler } = setup(() =>
      Promise.reject(
        new ValidationError('people[0]: bad', [{ index: 0, status: 'invalid', error: 'bad' }]),
      ),
    );
    const response = await handler(event('{"people":[1]}', { 'x-api-key': 'good' }), context);
    expect(response.statusCode).toBe(400);
    expect(parse(response)).toEqual({
      request_id: 'req-123',
      code: 400,
      error: 'people[0]: bad',
      details: [{ index: 0, status: 'invalid', error: 'bad' }],
    });
  });

  it('answers an invalid time zone as the spec prescribes', async () => {
    const { handler } = setup(() =>
      Promise.reject(new InvalidTimeZoneError('dtz::b', 'Mars/Base')),
    );
    const response = await handler(event('{"people":[1]}', { 'x-api-key': 'good' }), context);
    expect(response.statusCode).toBe(500);
    expect(parse(response)).toMatchObject({ code: 500, error: 'Internal Server Error' });
  });

  it('never lets internals out of a 500', async () => {
    const { handler } = setup(() =>
      Promise.reject(new Error('ConnectionRefused: dynamodb at 10.0.0.7 table cdp-people')),
    );
    const response = await handler(event('{"people":[1]}', { 'x-api-key': 'good' }), context);
    expect(response.statusCode).toBe(500);
    expect(parse(response)).toEqual({
      request_id: 'req-123',
      code: 500,
      error: 'Internal Server Error',
    });
    expect(response.body).not.toMatch(/dynamodb|10\.0\.0\.7|stack/i);
  });

  it('answers a request that runs out of its function time with a 503 to repeat, not a 500', async () => {
    const { handler } = setup(() => new Promise(() => undefined));
    const nearlyOut = { ...context, getRemainingTimeInMillis: () => 50 };
    const response = await handler(event('{"people":[1]}', { 'x-api-key': 'good' }), nearlyOut);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(parse(response)).toMatchObject({
      code: 503,
      error: expect.stringContaining('ran out of time before it finished') as unknown,
    });
  });

  it('serves public endpoints without a key', async () => {
    const handler = publicHandler(() => Promise.resolve({ body: { status: 'ok' } }));
    const response = await handler(event(undefined), context);
    expect(response.statusCode).toBe(200);
    expect(parse(response)).toEqual({ status: 'ok' });
  });

  it('answers 503 with Retry-After when the store stays unavailable', async () => {
    const { handler } = setup(() =>
      Promise.reject(
        new ServiceUnavailableError('store down', [{ index: 0, status: 'not_applied' }], 3),
      ),
    );
    const response = await handler(event('{"people":[1]}', { 'x-api-key': 'good' }), context);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('3');
    expect(parse(response)).toMatchObject({
      code: 503,
      details: [{ index: 0, status: 'not_applied' }],
    });
  });
});

describe('request cost', () => {
  it("charges the tenant's key for the time its request took, and a replay nothing", async () => {
    const charged: { tenant: string; elapsedMs: number }[] = [];
    const handler = apiHandler(
      findRoute('POST /v1/person/merge'),
      {
        authenticate: () => Promise.resolve(tenant),
        body: z.object({ people: z.array(z.unknown()) }),
        idempotency: new MemoryIdempotencyStore(),
        charge: (who, elapsedMs) => {
          charged.push({ tenant: who.instance.id, elapsedMs });
          return Promise.resolve();
        },
      },
      async ({ body }) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { body };
      },
    );
    const request = () =>
      event('{"people":[1]}', { 'x-api-key': 'good', 'idempotency-key': 'cost-1' });
    expect((await handler(request(), context)).statusCode).toBe(200);
    expect((await handler(request(), context)).headers['idempotent-replayed']).toBe('true');
    expect(charged).toHaveLength(1);
    expect(charged[0]?.tenant).toBe('acme');
    expect(charged[0]?.elapsedMs).toBeGreaterThanOrEqual(300);
  });
});

describe('Idempotency-Key', () => {
  const withKey = (body: string, key = 'k-1', apiKey = 'good') =>
    event(body, { 'x-api-key': apiKey, 'idempotency-key': key });

  it('keeps the keys of each data source apart: another data source is never answered with this one', async () => {
    const { handler, runs } = setup();
    const website = await handler(withKey('{"people":[{"a":1}]}', 'order-1', 'good'), context);
    const shop = await handler(withKey('{"people":[{"a":1}]}', 'order-1', 'shop'), context);
    expect(shop.headers['idempotent-replayed']).toBeUndefined();
    expect(website.headers['idempotent-replayed']).toBeUndefined();
    expect(runs()).toBe(2);
    // And another body under the same key is no 422 across data sources.
    const other = await handler(withKey('{"people":[{"a":2}]}', 'order-2', 'good'), context);
    const shopOther = await handler(withKey('{"people":[{"a":3}]}', 'order-2', 'shop'), context);
    expect([other.statusCode, shopOther.statusCode]).toEqual([200, 200]);
    // Each repeat is still its own data source's replay.
    const again = await handler(withKey('{"people":[{"a":1}]}', 'order-1', 'shop'), context);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(runs()).toBe(4);
  });

  it('replays a record kept before keys were scoped to data sources, for the same request', async () => {
    const idempotency = new MemoryIdempotencyStore();
    const { createHash } = await import('node:crypto');
    const legacy = createHash('sha256').update('before-upgrade', 'utf8').digest('hex');
    const { handler, runs } = setup(undefined, idempotency);
    // What the first request left under the key alone, before the upgrade.
    const first = await handler(withKey('{"people":[{"a":1}]}', 'before-upgrade'), context);
    const scoped = [...idempotency.records.entries()].find(([id]) => id.startsWith('acme#'));
    idempotency.records.clear();
    idempotency.records.set(`acme#${legacy}`, scoped?.[1] ?? { fingerprint: '' });
    const again = await handler(withKey('{"people":[{"a":1}]}', 'before-upgrade'), context);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(runs()).toBe(1);
  });

  it('replays the first answer to a repeat without running it again', async () => {
    const { handler, runs } = setup();
    const first = await handler(withKey('{"people":[{"a":1}]}'), context);
    // The same request spelled differently (whitespace, key order) is the same request.
    const again = await handler(withKey('{ "people" : [ { "a" : 1 } ] }'), context);
    expect(first.statusCode).toBe(200);
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(runs()).toBe(1);
  });

  it('refuses the same key with another body (422) and keeps the first answer', async () => {
    const { handler, runs } = setup();
    await handler(withKey('{"people":[1]}'), context);
    const other = await handler(withKey('{"people":[2]}'), context);
    expect(other.statusCode).toBe(422);
    expect(parse(other)).toMatchObject({
      code: 422,
      error: expect.stringMatching(/^Idempotency-Key: /) as unknown,
    });
    expect(runs()).toBe(1);
    const again = await handler(withKey('{"people":[1]}'), context);
    expect(parse(again)).toEqual({ people: [1] });
  });

  it('answers 409 to a repeat while the first is still running', async () => {
    let finish: () => void = () => undefined;
    const { handler } = setup(
      (body) =>
        new Promise((resolve) => {
          finish = () => {
            resolve(body);
          };
        }),
    );
    const first = handler(withKey('{"people":[1]}'), context);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const concurrent = await handler(withKey('{"people":[1]}'), context);
    expect(concurrent.statusCode).toBe(409);
    finish();
    expect((await first).statusCode).toBe(200);
  });

  it('forgets a 5xx answer so that the retry runs, and keeps a 4xx one', async () => {
    let fail = true;
    const { handler, runs } = setup((body) =>
      fail ? Promise.reject(new ServiceUnavailableError('down')) : Promise.resolve(body),
    );
    expect((await handler(withKey('{"people":[1]}'), context)).statusCode).toBe(503);
    fail = false;
    expect((await handler(withKey('{"people":[1]}'), context)).statusCode).toBe(200);
    expect(runs()).toBe(2);

    const refused = setup(() => Promise.reject(new ValidationError('people[0]: bad')));
    const first = await refused.handler(withKey('{"people":[1]}', 'k-2'), context);
    const repeat = await refused.handler(withKey('{"people":[1]}', 'k-2'), context);
    expect([first.statusCode, repeat.statusCode]).toEqual([400, 400]);
    expect(repeat.headers['idempotent-replayed']).toBe('true');
    expect(refused.runs()).toBe(1);
  });

  it('keeps a 5xx that reports records applied, so a repeat cannot apply them twice', async () => {
    const { handler, runs } = setup(() =>
      Promise.reject(
        new ServiceUnavailableError('stopped', [
          { index: 0, status: 'created', person_id: 'a'.repeat(24) },
          { index: 1, status: 'not_applied' },
        ]),
      ),
    );
    const first = await handler(withKey('{"people":[1,2]}', 'k-3'), context);
    const repeat = await handler(withKey('{"people":[1,2]}', 'k-3'), context);
    expect([first.statusCode, repeat.statusCode]).toEqual([503, 503]);
    expect(repeat.body).toBe(first.body);
    expect(repeat.headers['idempotent-replayed']).toBe('true');
    expect(runs()).toBe(1);
  });

  it('keeps keys per instance', async () => {
    const store = new MemoryIdempotencyStore();
    const { handler, runs } = setup(undefined, store);
    await handler(withKey('{"people":[1]}'), context);
    const [id] = [...store.records.keys()];
    expect(id).toMatch(new RegExp(`^${tenant.instance.id}#`));
    expect(runs()).toBe(1);
  });

  it('refuses a malformed key naming the header', async () => {
    const { handler } = setup();
    const response = await handler(withKey('{"people":[1]}', 'has space'), context);
    expect(response.statusCode).toBe(400);
    expect(parse(response).error).toMatch(/^Idempotency-Key: /);
  });
});

describe('the logs of a request', () => {
  it('are JSON lines carrying API Gateway’s request ID and the Lambda request ID', async () => {
    const lines: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    // The level is reset at the start of every invocation; a domain step logs mid-request.
    const { handler } = setup((body) => {
      logger.setLogLevel('INFO');
      logger.info('Merging', { records: body.people.length });
      logger.setLogLevel('SILENT');
      return Promise.resolve(body);
    });
    try {
      await handler(event('{"people":[1]}', { 'x-api-key': 'good' }), context);
    } finally {
      write.mockRestore();
    }
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toEqual([
      expect.objectContaining({
        message: 'Merging',
        level: 'INFO',
        records: 1,
        request_id: 'req-123',
        function_request_id: 'lambda-1',
      }),
    ]);
    expect(lines.join('')).not.toContain('good');
  });
});

describe('an error that quotes the request', () => {
  it('masks the request’s API key in the answer, the log and the kept idempotent answer', async () => {
    const key = 'secret-key-0123456789';
    const idempotency = new MemoryIdempotencyStore();
    const handler = apiHandler(
      findRoute('POST /v1/person/merge'),
      {
        authenticate: (given) =>
          given === key ? Promise.resolve(tenant) : Promise.reject(new UnknownApiKeyError()),
        body: z.object({ merge_by: z.array(z.string()) }),
        idempotency,
      },
      ({ body }) =>
        Promise.reject(
          new ValidationError(`merge_by[0]: "${body.merge_by[0] ?? ''}" cannot be a merge key`, [
            { field: 'merge_by', error: `"${body.merge_by[0] ?? ''}" is not a field` },
          ]),
        ),
    );
    // The log level is reset at each invocation: what is handed to the logger is checked.
    const logged: unknown[] = [];
    const info = jest.spyOn(logger, 'info').mockImplementation((...args: unknown[]) => {
      logged.push(args);
    });
    const request = () =>
      handler(
        event(JSON.stringify({ merge_by: [key] }), { 'x-api-key': key, 'idempotency-key': 'i-1' }),
        context,
      );
    let first: Awaited<ReturnType<typeof request>>;
    let again: Awaited<ReturnType<typeof request>>;
    try {
      first = await request();
      again = await request();
    } finally {
      info.mockRestore();
    }
    expect(first.statusCode).toBe(400);
    expect(parse(first)).toEqual({
      request_id: 'req-123',
      code: 400,
      error: 'merge_by[0]: "[redacted]" cannot be a merge key',
      details: [{ field: 'merge_by', error: '"[redacted]" is not a field' }],
    });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(JSON.stringify(logged)).toContain('Request refused');
    expect(JSON.stringify(logged)).toContain('[redacted]');
    expect(JSON.stringify(logged)).not.toContain(key);
  });
});

describe('routeHandlers', () => {
  it('answers each request with the handler of the route it came by', async () => {
    const answer = (name: string) => () =>
      Promise.resolve({ statusCode: 200, headers: {}, body: name });
    const handler = routeHandlers({
      'POST /v1/organizations/merge': answer('organizations'),
      'POST /v1/accounts/merge': answer('accounts'),
    });
    const on = (resource: string) =>
      proxyEvent({
        method: 'post',
        url: resource,
        headers: {},
        body: Buffer.alloc(0),
        requestId: 'req-1',
        resource,
      });
    expect((await handler(on('/v1/accounts/merge'), context)).body).toBe('accounts');
    expect((await handler(on('/v1/organizations/merge'), context)).body).toBe('organizations');
    expect(() => handler(on('/v1/person/merge'), context)).toThrow(/no handler/);
  });
});
