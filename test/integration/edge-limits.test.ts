import { describe, expect, it } from '@jest/globals';
import { request } from 'node:http';
import { EDGE_ERRORS, EDGE_MAX_BODY_BYTES } from '../../shared/edge.js';
import { ROUTES, routeKey } from '../../shared/routes.js';
import { KEYS, baseUrl, call } from './stack.js';

/**
 * The size edge of every endpoint, as the local adapter plays the AWS edge (shared/edge.ts):
 * the largest body an endpoint takes gets past the size checks, one byte more is a 413 in the
 * error envelope, whoever refuses it (the WAF rule, API Gateway or the function).
 */

/** A JSON object of exactly `bytes` bytes: `{}` and whitespace. */
function bodyOf(bytes: number): string {
  return '{}' + ' '.repeat(bytes - 2);
}

function expectEnvelope(
  response: { status: number; body: Record<string, unknown> },
  status: number,
  error: string | RegExp,
) {
  expect(response.status).toBe(status);
  expect(response.body).toEqual({
    request_id: expect.any(String) as unknown,
    code: status,
    error: typeof error === 'string' ? error : (expect.stringMatching(error) as unknown),
  });
}

/** A request sent as raw as a test needs: chunked, or with headers fetch would not send. */
function rawRequest(
  path: string,
  options: { headers: Record<string, string>; chunks?: Buffer[] },
): Promise<{ status: number; body: Record<string, unknown>; requestId?: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      `${baseUrl('default')}${path}`,
      // A fresh connection each: a refused request may leave its socket with a body unread.
      { method: 'POST', headers: options.headers, agent: false },
      (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () => {
          try {
            resolve({
              status: response.statusCode ?? 0,
              requestId: response.headers['x-request-id'] as string | undefined,
              body: JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>,
            });
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
      },
    );
    outgoing.on('error', reject);
    for (const chunk of options.chunks ?? []) outgoing.write(chunk);
    outgoing.end();
  });
}

const withBodies = ROUTES.filter((route) => route.method !== 'GET');

describe('the size edge of every endpoint', () => {
  it.each(withBodies.map((route) => [routeKey(route), route] as const))(
    '%s: the largest accepted body passes the size checks, one byte more is a 413',
    async (_key, route) => {
      const key = route.auth ? KEYS.acme : undefined;
      const method = route.method;
      const largest = await call(route.path, {
        key,
        method,
        rawBody: bodyOf(route.maxBodyBytes),
      });
      expect(largest.status).not.toBe(413);
      expect(largest.body.code ?? largest.status).toBe(largest.status);

      const over = await call(route.path, {
        key,
        method,
        rawBody: bodyOf(route.maxBodyBytes + 1),
      });
      expectEnvelope(
        over,
        413,
        route.maxBodyBytes === EDGE_MAX_BODY_BYTES
          ? EDGE_ERRORS.bodyRefused.message
          : `Request body is larger than the limit of ${route.maxBodyBytes} bytes`,
      );
    },
  );

  it('refuses a body over the edge limit by its Content-Length, before reading it', async () => {
    // Announced as 50 MB, nothing sent: the answer comes at once.
    const response = await rawRequest('/v1/person/merge', {
      headers: {
        'content-type': 'application/json',
        'content-length': String(50 * 1024 * 1024),
        'x-api-key': KEYS.acme,
      },
    });
    expectEnvelope(response, 413, EDGE_ERRORS.bodyRefused.message);
  });

  it('refuses a chunked body (no length to check), as the WAF rule does', async () => {
    const response = await rawRequest('/v1/person/merge', {
      headers: {
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
        'x-api-key': KEYS.acme,
      },
      chunks: [Buffer.from('{"people":'), Buffer.from('[]}')],
    });
    expectEnvelope(response, 413, EDGE_ERRORS.bodyRefused.message);
  });

  it('answers headers over the gateway cap in the envelope', async () => {
    const response = await rawRequest('/v1/person/merge', {
      headers: {
        'content-type': 'application/json',
        'x-api-key': KEYS.acme,
        'x-padding': 'x'.repeat(12_000),
        'content-length': '2',
      },
      chunks: [Buffer.from('{}')],
    });
    expectEnvelope(
      response,
      EDGE_ERRORS.headersTooLarge.status,
      EDGE_ERRORS.headersTooLarge.message,
    );
    expect(response.requestId).toBe(response.body.request_id);
  });
});
