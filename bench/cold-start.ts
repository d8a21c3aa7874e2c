/**
 * Figure 6, cold start: each function bundled as the CDK stack bundles it (esbuild, ESM,
 * minified, the AWS SDK bundled too), its size, and the time a fresh Node process
 * takes to load the bundle and answer a first request (from the process's start, its own
 * `performance.now()` at the answer), beside a hello-world handler bundled and measured the
 * same way: the table gives the median and the slowest function of each kind, a note every
 * function, and the log each one's load time. The first requests go to the bench stack (API functions: a small valid request
 * with the bench key; queue workers: an empty batch), with the environment the stack gives
 * its default-region functions. Median of `BENCH_COLD_RUNS` (3) processes each.
 *
 *   node --import tsx bench/cold-start.ts        # a stack of its own
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { FUNCTION_BUNDLING, FUNCTION_NODE_OPTIONS } from '../infra/constructs/function-bundling.js';
import { proxyEvent } from '../local/http-adapter.js';
import { ROUTES } from '../shared/routes.js';
import { WORKERS } from '../shared/workers.js';
import { fixed, median, printFigure, type FigureResult, type Row } from './lib/report.js';
import { BENCH_KEY, isMain, withBenchStack, type BenchStack } from './lib/stack.js';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');
const out = join(root, '.bench', 'cold-start');
const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 3);
const TARGET = 3;

/** A function bundled as `CdpFunction` bundles it (infra/constructs/function-bundling.ts). */
async function bundle(name: string, entry: string): Promise<string> {
  const file = join(out, name, 'index.mjs');
  await build({
    ...FUNCTION_BUNDLING,
    mainFields: [...FUNCTION_BUNDLING.mainFields],
    banner: { js: FUNCTION_BUNDLING.banner },
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    platform: 'node',
    logLevel: 'silent',
  });
  return file;
}

/** Loads a bundle in a fresh process and answers one event; the process's time at the answer. */
const RUNNER = `
import { readFileSync } from 'node:fs';
const [bundle, eventFile, name] = process.argv.slice(2);
const event = JSON.parse(readFileSync(eventFile, 'utf8'));
const { handler } = await import(bundle);
const loaded = performance.now();
const started = Date.now();
const context = {
  functionName: name, awsRequestId: 'cold-' + started, callbackWaitsForEmptyEventLoop: false,
  getRemainingTimeInMillis: () => 10000 - (Date.now() - started),
};
const result = await handler(event, context);
const at = performance.now();
process.stdout.write(JSON.stringify({ ms: at, loadMs: loaded, status: result?.statusCode ?? (result ? 'ok' : 'none') }) + '\\n');
process.exit(0);
`;

const BODIES: Record<string, unknown> = {
  'person-merge': { people: [{ fields: { 'str::email': 'cold@start.bench' } }] },
  'person-get': { limit: 10 },
  'activities-create': {
    activities: [
      {
        activity_id: 'act:cm:purchased',
        fields: { 'str::email': 'cold@start.bench' },
        attributes: { 'str:cm:item': 'Cold', 'int:cm:price': 1 },
      },
    ],
  },
  'organizations-merge': { organizations: [{ fields: { 'str:o:name': 'Cold Start' } }] },
  'organizations-get': { limit: 10 },
};

/**
 * The environment the stack gave its default-region API (functions read theirs at load), with
 * the Node options `CdpFunction` gives every function (source maps read at load).
 */
function functionEnv(stack: BenchStack): NodeJS.ProcessEnv {
  const pid = stack.pids['the default API'];
  const raw = readFileSync(`/proc/${pid}/environ`, 'utf8');
  const env = Object.fromEntries(
    raw
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
  return { ...env, NODE_OPTIONS: FUNCTION_NODE_OPTIONS, POWERTOOLS_LOG_LEVEL: 'SILENT' };
}

async function coldRuns(file: string, eventFile: string, name: string, env: NodeJS.ProcessEnv) {
  const runner = join(out, 'runner.mjs');
  const times: number[] = [];
  const loads: number[] = [];
  let status = '';
  for (let n = 0; n < RUNS; n += 1) {
    const { stdout } = await run(process.execPath, [runner, file, eventFile, name], {
      env,
      cwd: out,
      timeout: 60_000,
    });
    const answer = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as {
      ms: number;
      loadMs: number;
      status: unknown;
    };
    times.push(answer.ms);
    loads.push(answer.loadMs);
    status = String(answer.status);
  }
  return { ms: median(times), loadMs: median(loads), status };
}

export async function coldStartFigure(stack: BenchStack): Promise<FigureResult> {
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'runner.mjs'), RUNNER);
  const env = functionEnv(stack);
  const hello = join(out, 'hello.ts');
  writeFileSync(
    hello,
    "export const handler = async () => ({ statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{}' });\n",
  );
  const helloFile = await bundle('hello-world', hello);
  const eventOf = (name: string, event: unknown) => {
    const file = join(out, `${name}.event.json`);
    writeFileSync(file, JSON.stringify(event));
    return file;
  };
  const apiEvent = (route: (typeof ROUTES)[number]) =>
    proxyEvent({
      method: route.method,
      url: route.path,
      headers: {
        host: '127.0.0.1',
        'content-type': 'application/json',
        ...(route.auth ? { 'x-api-key': BENCH_KEY } : {}),
      },
      body:
        route.method === 'GET'
          ? Buffer.alloc(0)
          : Buffer.from(JSON.stringify(BODIES[route.function] ?? {})),
      requestId: `cold-${route.function}`,
      resource: route.path,
    });
  const reference = await coldRuns(
    helloFile,
    eventOf('hello-world', { Records: [] }),
    'hello',
    env,
  );
  const functions = [
    ...ROUTES.map((route) => ({ name: route.function, event: apiEvent(route), kind: 'API' })),
    ...WORKERS.map((worker) => ({ name: worker.function, event: { Records: [] }, kind: 'worker' })),
  ].filter((fn, i, all) => all.findIndex((other) => other.name === fn.name) === i);
  const measured: {
    name: string;
    kind: string;
    kb: number;
    loadMs: number;
    ms: number;
    status: string;
  }[] = [];
  for (const fn of functions) {
    const file = await bundle(fn.name, join(root, 'functions', fn.name, 'handler.ts'));
    const run = await coldRuns(file, eventOf(fn.name, fn.event), fn.name, env);
    measured.push({ name: fn.name, kind: fn.kind, kb: statSync(file).size / 1024, ...run });
    console.error(
      `bench: ${fn.name} loaded ${fixed(run.loadMs)} ms, answered ${fixed(run.ms)} ms (${run.status})`,
    );
  }
  // The table gives the reference, the median and slowest function of each kind and how many
  // meet the target; a note, every function.
  const ref = `${fixed(reference.ms)} ms`;
  const target = `≤ ${TARGET}`;
  const timeText = (ms: number, loadMs: number, kb: number) =>
    `${fixed(ms)} ms (load ${fixed(loadMs)}), ${fixed(kb)} KB`;
  const rows: Row[] = [
    {
      figure: '6 cold start',
      measure: 'hello-world: first answer (the reference)',
      value: `${fixed(reference.ms)} ms (load ${fixed(reference.loadMs)}), ${fixed(statSync(helloFile).size / 1024, 1)} KB`,
    },
  ];
  for (const kind of ['API', 'worker']) {
    const ofKind = measured.filter((fn) => fn.kind === kind);
    if (ofKind.length === 0) continue;
    const middle = median(ofKind.map((fn) => fn.ms));
    const slowest = ofKind.reduce((a, b) => (b.ms > a.ms ? b : a));
    const label = kind === 'API' ? 'API functions' : 'queue workers';
    rows.push(
      {
        figure: '6 cold start',
        measure: `${label}: median of ${ofKind.length}, first answer`,
        value: timeText(
          middle,
          median(ofKind.map((fn) => fn.loadMs)),
          median(ofKind.map((fn) => fn.kb)),
        ),
        reference: ref,
        ratio: middle / reference.ms,
        target,
        met: middle / reference.ms <= TARGET,
      },
      {
        figure: '6 cold start',
        measure: `${label}: slowest, ${slowest.name}`,
        value: timeText(slowest.ms, slowest.loadMs, slowest.kb),
        reference: ref,
        ratio: slowest.ms / reference.ms,
        target,
        met: slowest.ms / reference.ms <= TARGET,
      },
    );
  }
  const within = measured.filter((fn) => fn.ms / reference.ms <= TARGET).length;
  rows.push({
    figure: '6 cold start',
    measure: `functions within ${TARGET} × the reference`,
    value: `${within} of ${measured.length}`,
    target: 'all',
    met: within === measured.length,
    notes: [
      `Cold start of each function: first answer in ms (its status), bundle KB, ratio to hello-world: ${measured.map((fn) => `${fn.name} ${fixed(fn.ms)} (${fn.status}), ${fixed(fn.kb)} KB, ${fixed(fn.ms / reference.ms, 2)}`).join('; ')}.`,
    ],
  });
  return {
    rows,
    notes: [
      `Cold start: bundles as infra/constructs/cdp-function.ts makes them (esbuild, ESM, node22, minified, source maps without the sources' text, the AWS SDK v3 bundled with the function's code rather than loaded from the Lambda runtime's copy), each loaded in a fresh \`node\` (${process.version}, \`--enable-source-maps\` as deployed) that answers one request against the bench stack; the time is the process's own clock at the answer (Node's start included; the load, at the handler's import), median of ${RUNS}. Target: each function's first answer within ${TARGET} times hello-world's. Lambda adds its own sandbox start-up to every function alike.`,
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Figure 6: cold start', await withBenchStack(coldStartFigure));
}
