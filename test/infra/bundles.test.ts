import { describe, expect, it } from '@jest/globals';
import { build } from 'esbuild';
import { FALLBACK_FUNCTION, ROUTES } from '../../shared/routes.js';
import { WORKERS } from '../../shared/workers.js';

/**
 * Every function's bundle, built as `CdpFunction` has CDK build it (esbuild, ESM, minified,
 * Node.js 22, the AWS SDK left to the runtime), stays under 1 MB: cold starts grow with it.
 */
const LIMIT_BYTES = 1024 * 1024;

async function bundleSize(fn: string): Promise<number> {
  const result = await build({
    entryPoints: [`functions/${fn}/handler.ts`],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    mainFields: ['module', 'main'],
    external: ['@aws-sdk/*'],
    banner: {
      js: "import { createRequire as __cdpCreateRequire } from 'node:module'; const require = __cdpCreateRequire(import.meta.url);",
    },
    logLevel: 'silent',
  });
  return result.outputFiles.reduce((sum, file) => sum + file.contents.length, 0);
}

describe('the function bundles', () => {
  const functions = [...new Set([...ROUTES, ...WORKERS, FALLBACK_FUNCTION].map((e) => e.function))];

  it('stay under 1 MB each', async () => {
    const sizes = await Promise.all(
      functions.map(async (fn) => ({ fn, kb: Math.round((await bundleSize(fn)) / 1024) })),
    );
    const over = sizes.filter(({ kb }) => kb * 1024 > LIMIT_BYTES);
    expect(over).toEqual([]);
    expect(sizes).toHaveLength(functions.length);
  });
});
