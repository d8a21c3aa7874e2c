import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROUTES } from '../../../shared/routes.js';

/**
 * What a function's code needs, its routes must be granted: a handler that reads the signing
 * keyring (cursors, signed links) falls back to the local key wrapper without `signing`, and
 * fails on AWS only.
 */
describe('route access', () => {
  it('grants signing to every function whose handler uses cursors or the signing keys', () => {
    const missing = ROUTES.filter((route) => {
      const source = readFileSync(join('functions', route.function, 'handler.ts'), 'utf8');
      const signs = /\bcursors\(|\bsigningKeys\(/.test(source);
      return signs && !route.access.includes('signing');
    }).map((route) => `${route.method} ${route.path}`);
    expect(missing).toEqual([]);
  });
});
