import { describe, expect, it } from '@jest/globals';
import { basename } from 'node:path';
import { build } from 'esbuild';
import { FALLBACK_FUNCTION, ROUTES } from '../../shared/routes.js';
import { WORKERS } from '../../shared/workers.js';
import { FUNCTION_BUNDLING } from '../../infra/constructs/function-bundling.js';

/**
 * Every function's bundle, built as `CdpFunction` has CDK build it (esbuild, ESM, minified,
 * Node.js 22, the AWS SDK bundled), stays under 2 MB: cold starts grow with what a function
 * loads (1.6 MB at most in November 2026, transactional-send).
 */
const LIMIT_BYTES = 2 * 1024 * 1024;

/**
 * Each function's bundle size in bytes. One esbuild run with every entry point: each entry's
 * output is its own bundle (no code splitting), and the modules they share are read once.
 */
async function bundleSizes(functions: readonly string[]): Promise<Map<string, number>> {
  const result = await build({
    ...FUNCTION_BUNDLING,
    mainFields: [...FUNCTION_BUNDLING.mainFields],
    banner: { js: FUNCTION_BUNDLING.banner },
    // The JavaScript's size only: no map files among the outputs.
    sourcemap: false,
    entryPoints: Object.fromEntries(functions.map((fn) => [fn, `functions/${fn}/handler.ts`])),
    outdir: 'bundles',
    bundle: true,
    write: false,
    platform: 'node',
    logLevel: 'silent',
  });
  return new Map(
    result.outputFiles.map((file) => [basename(file.path, '.js'), file.contents.length]),
  );
}

describe('the function bundles', () => {
  const functions = [...new Set([...ROUTES, ...WORKERS, FALLBACK_FUNCTION].map((e) => e.function))];

  it('stay under 1 MB each', async () => {
    const sizes = await bundleSizes(functions);
    expect([...sizes.keys()].sort()).toEqual([...functions].sort());
    const over = [...sizes].filter(([, bytes]) => bytes > LIMIT_BYTES);
    expect(over).toEqual([]);
  });
});
