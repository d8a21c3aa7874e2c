/**
 * How every function is bundled and started, in esbuild's terms: `CdpFunction` hands these to
 * NodejsFunction, and the bundles test and figure 6 (bench/cold-start.ts) build with the same
 * values, so what they measure is what is deployed. No CDK import here: the bench loads it.
 */
export const FUNCTION_BUNDLING = {
  format: 'esm',
  target: 'node22',
  minify: true,
  sourcemap: true,
  // Stack traces name the source file and line (`--enable-source-maps`); the sources' text is
  // left out of the map, which Node reads at load: a map a third the size, a first answer
  // about 40 ms sooner (measured in an earlier docs/benchmarks.md).
  sourcesContent: false,
  mainFields: ['module', 'main'],
  // Nothing is left to the runtime, the AWS SDK included: esbuild keeps the parts of it a
  // function uses in one module, which loads faster than the runtime's packages read file by
  // file (a first answer about 210 ms sooner: the same part), and the function runs the SDK
  // and `@smithy/*` the tests ran (one copy of each, the lockfile's version; a new SDK is a
  // deploy, not the runtime's).
  external: [] as string[],
  // Some dependencies still call require(); ESM bundles need it defined.
  banner:
    "import { createRequire as __cdpCreateRequire } from 'node:module'; const require = __cdpCreateRequire(import.meta.url);",
} as const;

/** Every function's `NODE_OPTIONS`: stack traces through the source maps. */
export const FUNCTION_NODE_OPTIONS = '--enable-source-maps';
