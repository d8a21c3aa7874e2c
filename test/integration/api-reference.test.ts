import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { ROUTES } from '../../shared/routes.js';
import { checkedFetch } from '../contract.js';
import { baseUrl } from './stack.js';

/**
 * Each regional API serves its description without a key: the OpenAPI document with its own
 * addresses, the reference page, and the page's renderer from the npm package.
 */
const committed = JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as {
  paths: Record<string, unknown>;
  servers: { url: string; description: string }[];
};

describe('the API reference', () => {
  it('serves the OpenAPI document with the deployment’s addresses, its own region first', async () => {
    for (const region of ['default', 'au'] as const) {
      const response = await checkedFetch(`${baseUrl(region)}/openapi.json`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const served = (await response.json()) as typeof committed;
      expect(served.servers[0]?.url).toBe(baseUrl(region));
      expect(served.servers.map((server) => server.url).sort()).toEqual(
        [baseUrl('default'), baseUrl('au'), baseUrl('eu')].sort(),
      );
      expect(served.paths).toEqual(committed.paths);
    }
  });

  it('serves the reference page, with a policy that allows its own scripts only', async () => {
    const response = await checkedFetch(`${baseUrl('default')}/docs`);
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain('<script src="docs/swagger-ui-bundle.js"></script>');
    expect(page).toContain('<link rel="stylesheet" href="docs/swagger-ui.css">');
    const policy = response.headers.get('content-security-policy') ?? '';
    expect(policy).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/);
    expect(policy).toContain("connect-src 'self'");
    expect(policy).not.toContain('http');
  });

  it('serves the renderer from the npm package, gzipped when accepted', async () => {
    for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css']) {
      const original = readFileSync(`node_modules/swagger-ui-dist/${file}`, 'utf8');
      const gzipped = await checkedFetch(`${baseUrl('default')}/docs/${file}`, {
        headers: { 'accept-encoding': 'gzip' },
      });
      expect(gzipped.headers.get('content-encoding')).toBe('gzip');
      expect(await gzipped.text()).toBe(original);
      const plain = await checkedFetch(`${baseUrl('default')}/docs/${file}`, {
        headers: { 'accept-encoding': 'identity' },
      });
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(plain.headers.get('content-type')).toMatch(
        file.endsWith('.js') ? /javascript/ : /css/,
      );
      expect(await plain.text()).toBe(original);
    }
  });

  it('answers the documentation routes without a key, and only to GET', async () => {
    const documentation = ROUTES.filter((route) => !route.auth && route.path !== '/health');
    expect(documentation.length).toBeGreaterThanOrEqual(4);
    const refused = await checkedFetch(`${baseUrl('default')}/docs`, { method: 'POST' });
    expect(refused.status).toBe(405);
    expect(refused.headers.get('allow')).toBe('GET');
  });
});
