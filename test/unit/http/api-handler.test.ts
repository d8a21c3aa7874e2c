import { describe, expect, it } from '@jest/globals';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { z } from 'zod';
import {
  InvalidTimeZoneError,
  UnknownApiKeyError,
  ValidationError,
} from '../../../shared/domain/errors.js';
import { apiHandler, publicHandler } from '../../../shared/http/api-handler.js';
import { findRoute } from '../../../shared/routes.js';
import { testTenant } from '../fixtures.js';

const tenant = testTenant();

function event(
  body: string | undefined,
  headers: Record<string, string> = {},
): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'POST /v1/person/merge',
    rawPath: '/v1/person/merge',
    rawQueryString: '',
    headers: { 'content-type': 'application/json', ...headers },
    requestContext: {
      accountId: '1',
      apiId: 'api',
      domainName: 'api.test',
      domainPrefix: 'api',
      http: {
        method: 'POST',
        path: '/v1/person/merge',
        protocol: 'HTTP/1.1',
        sourceIp: '1.2.3.4',
        userAgent: 'test',
      },
      requestId: 'req-123',
      routeKey: 'POST /v1/person/merge',
      stage: '$default',
      time: '',
      timeEpoch: 0,
    },
    isBase64Encoded: false,
    ...(body === undefined ? {} : { body }),
  };
}

const context = {
  awsRequestId: 'lambda-1',
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

function setup(
  run: (body: { people: unknown[] }) => Promise<unknown> = (body) => Promise.resolve(body),
) {
  const seenKeys: (string | undefined)[] = [];
  const handler = apiHandler(
    findRoute('POST /v1/person/merge'),
    {
      authenticate: (key) => {
        seenKeys.push(key);
        return key === 'good' ? Promise.resolve(tenant) : Promise.reject(new UnknownApiKeyError());
      },
      body: z.object({ people: z.array(z.unknown()).min(1).max(100) }),
    },
    async ({ body }) => ({ body: await run(body) }),
  );
  return { handler, seenKeys };
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

  it('serves public endpoints without a key', async () => {
    const handler = publicHandler(() => Promise.resolve({ body: { status: 'ok' } }));
    const response = await handler(event(undefined), context);
    expect(response.statusCode).toBe(200);
    expect(parse(response)).toEqual({ status: 'ok' });
  });
});
