import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ENDPOINTS } from '../../../shared/api/endpoints.js';
import { operationId, undocumentedRoutes } from '../../../shared/api/document.js';
import { ROUTES, routeKey } from '../../../shared/routes.js';
import { generatedFiles } from '../../../local/openapi.js';
import { ContractChecker, type OpenApiDocument } from '../../contract.js';

/**
 * The OpenAPI document: one entry per route, committed as generated, valid OpenAPI 3.1, and
 * its examples valid against its own schemas.
 */
const committed = JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as OpenApiDocument;
const checker = new ContractChecker(committed);
const METHODS = ['get', 'post', 'put', 'delete'] as const;

describe('the OpenAPI document', () => {
  it('describes every route of the routes table, and nothing else', () => {
    // A route added to shared/routes.ts needs its entry in shared/api/endpoints.ts.
    expect({ 'routes without an entry in shared/api/endpoints.ts': undocumentedRoutes() }).toEqual({
      'routes without an entry in shared/api/endpoints.ts': [],
    });
    const routes = ROUTES.map(routeKey);
    expect(Object.keys(ENDPOINTS).filter((key) => !routes.includes(key as never))).toEqual([]);
    const operations = Object.entries(committed.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => method in item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual([...routes].sort());
  });

  it('is committed as `npm run openapi` generates it (document and client types)', async () => {
    const files = await generatedFiles();
    for (const [path, contents] of Object.entries(files)) {
      // Fails when a schema, an entry or a route changed: run `npm run openapi` and commit.
      expect({ path, upToDate: readFileSync(path, 'utf8') === contents }).toEqual({
        path,
        upToDate: true,
      });
    }
  });

  it('passes the OpenAPI 3.1 schema validator', async () => {
    const validator = new Validator();
    const result = await validator.validate(committed);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('names every operation uniquely', () => {
    const ids = ROUTES.map(operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operationId({ method: 'POST', path: '/v1/person/get-by-ids' })).toBe('personGetByIds');
  });

  it('documents the key, the idempotency header, the regions and the error statuses', () => {
    const components = committed.components as Record<string, Record<string, unknown>>;
    expect(components.securitySchemes).toEqual({
      ApiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }),
      ConsoleSignIn: expect.objectContaining({
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
      }),
    });
    expect(committed.servers).toHaveLength(3);
    const merge = committed.paths['/v1/person/merge']?.post as unknown as {
      parameters: unknown[];
      responses: Record<string, unknown>;
    };
    expect(merge.parameters).toEqual([{ $ref: '#/components/parameters/IdempotencyKey' }]);
    expect(Object.keys(merge.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '409', '413', '422', '429', '503']),
    );
    const health = committed.paths['/health']?.get as unknown as Record<string, unknown>;
    expect(health.security).toEqual([]);
    expect(Object.keys(health.responses as object)).not.toContain('401');
    // The console's routes take the signed-in user's token, never the key.
    const keys = committed.paths['/console/v1/keys/create']?.post as unknown as Record<
      string,
      unknown
    >;
    expect(keys.security).toEqual([{ ConsoleSignIn: [] }]);
    expect(keys.tags).toEqual(['Console']);
    expect(Object.keys(keys.responses as object)).toEqual(
      expect.arrayContaining(['200', '400', '401', '404']),
    );
  });

  it('gives examples that its own schemas accept', () => {
    let checked = 0;
    for (const [path, item] of Object.entries(committed.paths)) {
      for (const method of METHODS) {
        const operation = item[method];
        if (!operation) continue;
        const base = `/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}`;
        const request = operation.requestBody?.content['application/json'];
        if (request?.example !== undefined) {
          expect({
            [`${method} ${path} request`]: checker.problems(
              `${base}/requestBody/content/application~1json/schema`,
              request.example,
            ),
          }).toEqual({ [`${method} ${path} request`]: [] });
          checked += 1;
        }
        for (const [status, response] of Object.entries(operation.responses)) {
          const json = 'content' in response ? response.content?.['application/json'] : undefined;
          if (json?.example === undefined) continue;
          expect({
            [`${method} ${path} ${status}`]: checker.problems(
              `${base}/responses/${status}/content/application~1json/schema`,
              json.example,
            ),
          }).toEqual({ [`${method} ${path} ${status}`]: [] });
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(25);
    expect(
      checker.problems(
        '/components/schemas/Error',
        (
          committed.components.schemas.Error as {
            example: unknown;
          }
        ).example,
      ),
    ).toEqual([]);
  });

  it('refuses answers its schemas do not describe', () => {
    const answer = (status: number, body: unknown, path = '/v1/person/merge') =>
      checker.check({
        method: 'POST',
        path,
        status,
        contentType: 'application/json; charset=utf-8',
        text: JSON.stringify(body),
      });
    expect(
      answer(200, { people: [{ person_id: '66a1f0c2e4b0a1b2c3d4e5f6', status: 'created' }] }),
    ).toEqual([]);
    expect(answer(200, { people: [{ status: 'done' }] })).toEqual([
      '/people/0/status must be equal to one of the allowed values',
    ]);
    expect(answer(200, { people: [], extra: 1 })).toEqual([
      '(body) must NOT have additional properties',
    ]);
    expect(answer(418, {})[0]).toMatch(/^status 418 is not documented/);
    expect(answer(400, { request_id: 'r', code: 400, error: 'bad' })).toEqual([]);
    expect(answer(400, { code: 400, error: 'bad' })).toEqual([
      "(body) must have required property 'request_id'",
    ]);
    expect(answer(404, { request_id: 'r', code: 404, error: 'No endpoint' }, '/v1/nope')).toEqual(
      [],
    );
    expect(answer(200, {}, '/v1/nope')[0]).toMatch(/does not have/);
  });
});
