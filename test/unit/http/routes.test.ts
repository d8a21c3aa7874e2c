import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { EDGE_MAX_BODY_BYTES } from '../../../shared/edge.js';
import { FALLBACK_FUNCTION, ROUTES, matchRoute, routeKey } from '../../../shared/routes.js';
import { WORKERS } from '../../../shared/workers.js';

describe('the routes table', () => {
  it('lists the seven operations of the spec and the health check', () => {
    expect(ROUTES.map(routeKey)).toEqual(
      expect.arrayContaining([
        'POST /v1/transactional/send',
        'POST /v1/person/merge',
        'POST /v1/organizations/merge',
        'PUT /v1/organizations/contacts/add',
        'PUT /v1/organizations/contacts/remove',
        'POST /v1/activities/create',
        'POST /v1/person/get',
        'GET /health',
      ]),
    );
    expect(new Set(ROUTES.map(routeKey)).size).toBe(ROUTES.length);
  });

  it('requires a key on every /v1 route', () => {
    for (const route of ROUTES.filter((r) => r.path.startsWith('/v1/')))
      expect(route.auth).toBe(true);
  });

  it('grants the requests table to every route with a key (its rate-limit buckets)', () => {
    const keyed = ROUTES.filter((route) => route.auth);
    expect(keyed.length).toBeGreaterThan(10);
    for (const route of keyed) {
      expect({ route: routeKey(route), requests: route.access.includes('requests') }).toEqual({
        route: routeKey(route),
        requests: true,
      });
    }
  });

  it('sets the body limits of the spec, but where a Lambda invocation could not carry them', () => {
    const limit = (key: string) => ROUTES.find((r) => routeKey(r) === key)?.maxBodyBytes;
    // The spec says 6 MB; the edge's limit is what reaches a function on AWS (shared/edge.ts).
    expect(limit('POST /v1/transactional/send')).toBe(EDGE_MAX_BODY_BYTES);
    expect(Math.max(...ROUTES.map((route) => route.maxBodyBytes))).toBe(EDGE_MAX_BODY_BYTES);
    expect(limit('POST /v1/activities/create')).toBe(2 * 1024 * 1024);
  });

  it('points every route and worker at a handler that exists', () => {
    const functions = [...ROUTES, ...WORKERS, FALLBACK_FUNCTION].map((entry) => entry.function);
    for (const fn of functions) expect(existsSync(`functions/${fn}/handler.ts`)).toBe(true);
  });

  it('serves each accounts name with its organizations function, grants and limits', () => {
    const pairs = [
      ['POST /v1/accounts/merge', 'POST /v1/organizations/merge'],
      ['POST /v1/accounts/get', 'POST /v1/organizations/get'],
      ['POST /v1/accounts/get-by-ids', 'POST /v1/organizations/get-by-ids'],
      ['PUT /v1/accounts/contacts/add', 'PUT /v1/organizations/contacts/add'],
      ['PUT /v1/accounts/contacts/remove', 'PUT /v1/organizations/contacts/remove'],
    ];
    const route = (key: string) => {
      const found = ROUTES.find((r) => routeKey(r) === key);
      if (!found) throw new Error(`no route ${key}`);
      const { path: _path, ...rest } = found;
      return rest;
    };
    for (const [accounts, organizations] of pairs) {
      expect(route(accounts ?? '')).toEqual(route(organizations ?? ''));
    }
  });

  it('lets the read-only endpoints beyond the spec read only what they answer', () => {
    const access = (key: string) => ROUTES.find((r) => routeKey(r) === key)?.access;
    expect(access('POST /v1/person/subscriptions')).toEqual([
      'config:read',
      'people:read',
      'audiences:read',
      'requests',
    ]);
    expect(access('POST /v1/instance-schema/get')).toEqual(['config:read', 'requests']);
  });

  it('matches like API Gateway: route, wrong method, nothing', () => {
    expect(matchRoute('post', '/v1/person/merge')).toMatchObject({ kind: 'route' });
    expect(matchRoute('DELETE', '/v1/person/merge')).toEqual({
      kind: 'wrong-method',
      allowed: ['POST'],
    });
    expect(matchRoute('POST', '/v1/person/merge/')).toEqual({ kind: 'none' });
  });
});
