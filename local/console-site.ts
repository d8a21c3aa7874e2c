import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { extname, join, normalize, relative, resolve } from 'node:path';
import { consoleContentSecurityPolicy } from '../shared/console-csp.js';

/**
 * The console's pages as the local stack serves them under `/console/` of each regional API
 * (CloudFront and S3 on AWS): the files `vite build` wrote to `console/dist`, `config.json`
 * telling the pages where to sign in, and a strict Content-Security-Policy (scripts from the
 * console's own origin only; styles inline too, for the component library's theme).
 */
export const CONSOLE_DIR = resolve(import.meta.dirname, '..', 'console');
export const CONSOLE_DIST = join(CONSOLE_DIR, 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

export interface ConsoleSiteConfig {
  issuer: string;
  clientId: string;
  region: string;
}

export function contentSecurityPolicy(issuer: string): string {
  return consoleContentSecurityPolicy([new URL(issuer).origin]);
}

export interface SiteAnswer {
  statusCode: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A handler of `GET /console/…` (not the API under `/console/v1/`), or `undefined` for others. */
export function consoleSite(config: ConsoleSiteConfig, dist = CONSOLE_DIST) {
  const policy = contentSecurityPolicy(config.issuer);
  const headers = (type: string, cache: string) => ({
    'content-type': type,
    'cache-control': cache,
    'content-security-policy': policy,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  });
  const configJson = Buffer.from(
    JSON.stringify({ issuer: config.issuer, client_id: config.clientId, region: config.region }),
  );
  return (method: string, pathname: string): SiteAnswer | undefined => {
    if (pathname === '/console') {
      return { statusCode: 301, headers: { location: '/console/' }, body: Buffer.alloc(0) };
    }
    if (!pathname.startsWith('/console/') || pathname.startsWith('/console/v1/')) return undefined;
    if (method !== 'GET' && method !== 'HEAD') return undefined;
    const path = pathname.slice('/console/'.length);
    if (path === 'config.json') {
      return {
        statusCode: 200,
        headers: headers(TYPES['.json'] ?? '', 'no-store'),
        body: configJson,
      };
    }
    const file = normalize(join(dist, path));
    const inside = !relative(dist, file).startsWith('..');
    if (inside && path !== '' && existsSync(file) && statSync(file).isFile()) {
      return {
        statusCode: 200,
        headers: headers(
          TYPES[extname(file)] ?? 'application/octet-stream',
          path.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
        ),
        body: readFileSync(file),
      };
    }
    // Every other path is the page itself (the sign-in comes back to `/console/?code=…`).
    const index = join(dist, 'index.html');
    if (!existsSync(index)) return undefined;
    return {
      statusCode: 200,
      headers: headers(TYPES['.html'] ?? '', 'no-cache'),
      body: readFileSync(index),
    };
  };
}

/** Whether the pages need building: no build yet, or a source newer than it. */
export function consoleBuildStale(dir = CONSOLE_DIR): boolean {
  const index = join(dir, 'dist', 'index.html');
  if (!existsSync(index)) return true;
  const built = statSync(index).mtimeMs;
  const newest = (path: string): number =>
    statSync(path).isDirectory()
      ? Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))))
      : statSync(path).mtimeMs;
  return ['src', 'index.html', 'vite.config.ts'].some((name) => newest(join(dir, name)) > built);
}

/** Builds the pages with Vite (a few seconds), when they are stale. */
export async function buildConsole(dir = CONSOLE_DIR): Promise<void> {
  if (!consoleBuildStale(dir)) return;
  const { build } = await import('vite');
  // Built aside and moved in whole: a stack starting meanwhile serves the old build or the new.
  const aside = join(dir, `dist-${process.pid}`);
  await build({
    configFile: join(dir, 'vite.config.ts'),
    logLevel: 'warn',
    build: { outDir: aside, emptyOutDir: true },
  });
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  renameSync(aside, join(dir, 'dist'));
}
