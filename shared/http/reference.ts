import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { z } from 'zod';
import { ApiEnv } from '../config/env.js';
import { REGIONS, type Region } from '../domain/regions.js';
import type { ContentSecurityPolicy } from './api-handler.js';
import type { HttpResponse } from './responses.js';

/**
 * The API's reference, served by every regional deployment without a key: the OpenAPI
 * document (`GET /openapi.json`), a page that renders it with Swagger UI (`GET /docs`), and
 * Swagger UI's own files (`GET /docs/<file>`), read from the npm package `swagger-ui-dist`
 * (copied into the function's bundle on AWS: `packageFiles` in the routes table). Nothing is
 * fetched from elsewhere at run time. Paths are relative, so the page works under API
 * Gateway's stage prefix (`/api/docs`) as it does locally (`/docs`).
 */

export const ReferenceEnv = ApiEnv.pick({
  CDP_REGION: true,
  BASE_URL_DEFAULT: true,
  BASE_URL_AU: true,
  BASE_URL_EU: true,
});
export type ReferenceEnv = z.infer<typeof ReferenceEnv>;

const Servers = z.array(z.object({ url: z.string(), description: z.string() }));

/**
 * The committed document with this deployment's addresses as its servers, its own region
 * first (the one the reference page's requests go to).
 */
export function servedDocument(
  document: Record<string, unknown>,
  env: ReferenceEnv,
): Record<string, unknown> {
  const urls: Record<Region, string> = {
    default: env.BASE_URL_DEFAULT,
    au: env.BASE_URL_AU,
    eu: env.BASE_URL_EU,
  };
  const described = Servers.parse(document.servers);
  const servers = REGIONS.map((region, index) => ({
    url: urls[region],
    description: described[index]?.description ?? region,
  }));
  const own = REGIONS.indexOf(env.CDP_REGION);
  return {
    ...document,
    servers: [...servers.slice(own, own + 1), ...servers.filter((_, i) => i !== own)],
  };
}

const INITIALIZER = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json',
    dom_id: '#reference',
    deepLinking: true,
    validatorUrl: null,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
  });
});`;

/**
 * The page's policy: its scripts are the renderer's file and the initializer above (by its
 * hash); styles and images its own; requests ("Try it out") to this region only.
 */
export const REFERENCE_PAGE_POLICY: ContentSecurityPolicy = {
  'default-src': "'none'",
  'script-src': `'self' 'sha256-${createHash('sha256').update(INITIALIZER).digest('base64')}'`,
  'style-src': "'self' 'unsafe-inline'",
  'img-src': "'self' data:",
  'font-src': "'self' data:",
  'connect-src': "'self'",
  'form-action': "'self'",
  'base-uri': "'none'",
  sandbox: false,
  // Swagger UI writes HTML through React, which trusted types would refuse.
  'require-trusted-types-for': false,
  'upgrade-insecure-requests': false,
};

export function referencePage(): HttpResponse {
  return {
    statusCode: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'public, max-age=300',
    },
    body: `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Customer data platform API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head><body>
<div id="reference"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script>${INITIALIZER}</script>
</body></html>`,
  };
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

interface LoadedAsset {
  type: string;
  plain: Buffer;
  gzipped: Buffer;
}

/**
 * Serves files of an npm package, each read and compressed once per container. Answers gzip
 * to clients that accept it (every browser): Swagger UI's script is 1.7 MB, 0.5 MB gzipped.
 */
export function packageAssets(pkg: string, files: readonly string[]) {
  const resolveFile = createRequire(import.meta.url).resolve;
  const loaded = new Map<string, LoadedAsset>();
  const load = (file: string): LoadedAsset => {
    const found = loaded.get(file);
    if (found) return found;
    const plain = readFileSync(resolveFile(`${pkg}/${file}`));
    const type = CONTENT_TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream';
    const asset = { type, plain, gzipped: gzipSync(plain) };
    loaded.set(file, asset);
    return asset;
  };
  return (path: string, acceptEncoding: string | undefined): HttpResponse => {
    const file = files.find((name) => path.endsWith(`/${name}`));
    if (!file) throw new Error(`No asset for ${path}`);
    const asset = load(file);
    const gzip = /\bgzip\b/i.test(acceptEncoding ?? '');
    return {
      statusCode: 200,
      headers: {
        'content-type': asset.type,
        'cache-control': 'public, max-age=86400',
        vary: 'accept-encoding',
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      },
      body: (gzip ? asset.gzipped : asset.plain).toString('base64'),
      isBase64Encoded: true,
    };
  };
}
