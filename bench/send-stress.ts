/**
 * Stress (a hostile send beside another tenant): one tenant sends a request of 100 recipients whose
 * `html_body` is about 1 MB of hostile markup (`<a ` repeated, which a backtracking link
 * regex takes quadratic time over) wrapped around a nested-loop Liquid template, with the
 * same loops in its subject; then the same markup with a benign template, so that every
 * recipient's body reaches the link scan; meanwhile another tenant makes small requests one
 * after the other. Measured in the same run, side by side:
 *
 * - the other tenant's latency alone (baseline), then while the hostile request runs;
 * - the hostile request's time against its deadline (the route's timeout), beside a benign
 *   request of 100 recipients (the reference of what a send costs).
 *
 * On AWS each request has a function of its own; locally every route of a region shares one
 * process, so this is the harder case: the other tenant waits whenever the hostile request
 * holds the event loop.
 *
 *   node --import tsx bench/send-stress.ts     # a stack of its own
 */
import { fixed, percentile, post, printFigure, type FigureResult } from './lib/report.js';
import { isMain, withBenchStack, type BenchStack } from './lib/stack.js';
import { ROUTES } from '../shared/routes.js';

const RECIPIENTS = 100;
const OTHER_KEY = 'bench-list-key-32-characters-or-more-x';
/** The hostile body's size: about 1 MB, under the 1 MiB `html_body` limit. */
const HOSTILE_BYTES = 1_000_000;
/** Baseline requests of the other tenant before the hostile request. */
const BASELINE_REQUESTS = Number(process.env.BENCH_STRESS_BASELINE ?? 60);

const SEND_TIMEOUT_MS =
  (ROUTES.find((route) => route.function === 'transactional-send')?.timeoutSeconds ?? 29) * 1000;

const NESTED_LOOPS =
  '{% for i in (1..3000) %}{% for j in (1..3000) %}{{ i }}-{{ j }} {% endfor %}{% endfor %}';

/** About 1 MB of `<a ` after a real link; with the nested loops in it, or a benign template. */
function hostileBody(loops: boolean): string {
  const text = loops ? NESTED_LOOPS : 'Hi, order {{ json.n }}.';
  const head = `<html><body><p>${text}</p><a href="https://shop.example/{{ json.n }}">x</a>`;
  const tail = '</body></html>';
  return head + '<a '.repeat(Math.floor((HOSTILE_BYTES - head.length - tail.length) / 3)) + tail;
}

function sendRequest(run: string, htmlBody: string, subject: string) {
  return {
    merge_by: ['str::email'],
    asset: {
      from_email: 'bench@mail.bench.test',
      from_name: 'Bench',
      subject,
      email_name: 'stress',
      html_body: htmlBody,
    },
    emails: Array.from({ length: RECIPIENTS }, (_, i) => ({
      fields: { 'str::email': `${run}-${i}@stress.bench` },
      json_values: { n: i },
    })),
  };
}

/** The other tenant's request: a small merge of one person, as a busy integration makes. */
async function otherRequest(stack: BenchStack, run: string, n: number): Promise<number> {
  const t0 = performance.now();
  await post(stack.base, OTHER_KEY, '/v1/person/merge', {
    merge_by: ['str::email'],
    people: [{ fields: { 'str::email': `${run}-${n}@other.bench`, 'str::first': `O${n}` } }],
  });
  return performance.now() - t0;
}

/** Sends `body` while the other tenant keeps making requests; both sides' figures. */
async function underLoad(stack: BenchStack, run: string, body: unknown) {
  const latencies: number[] = [];
  // An object, so that the loop reads what the send's end writes.
  const send = { done: false };
  const other = (async () => {
    for (let n = 0; !send.done; n += 1) latencies.push(await otherRequest(stack, `${run}-o`, n));
  })();
  const t0 = performance.now();
  let answer: Record<string, unknown> | undefined;
  let failure: string | undefined;
  try {
    answer = await post(stack.base, stack.key, '/v1/transactional/send', body);
  } catch (error) {
    failure = (error as Error).message.slice(0, 200);
  }
  const ms = performance.now() - t0;
  send.done = true;
  await other;
  const statuses: Record<string, number> = {};
  /** One error of each kind the answer gives (the text before its first colon and number). */
  const errors = new Map<string, string>();
  for (const entry of (answer?.emails ?? []) as { email_status?: string; error?: string }[]) {
    const status = entry.email_status ?? 'none';
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (entry.error) {
      const kind = entry.error.replace(/^emails\[\d+\]: /, '').replace(/\d+/g, 'n');
      if (!errors.has(kind.slice(0, 60))) errors.set(kind.slice(0, 60), entry.error.slice(0, 160));
    }
  }
  return { ms, latencies, statuses, errors: [...errors.values()], failure };
}

const p = (values: number[], q: number) => `${fixed(percentile(values, q))} ms`;

export async function sendStressFigure(stack: BenchStack): Promise<FigureResult> {
  const run = `stress-${Date.now().toString(36)}`;
  // Warm both tenants' paths (configuration caches, the first merge of each), then the baseline.
  await otherRequest(stack, `${run}-warm`, 0);
  await post(
    stack.base,
    stack.key,
    '/v1/transactional/send',
    sendRequest(`${run}-warm`, '<p>warm</p>', 'warm'),
  );
  const baseline: number[] = [];
  for (let n = 0; n < BASELINE_REQUESTS; n += 1) {
    baseline.push(await otherRequest(stack, `${run}-b`, n));
  }
  const benign = await underLoad(
    stack,
    `${run}-benign`,
    sendRequest(
      `${run}-benign`,
      '<html><body><p>Hi, order {{ json.n }}.</p><a href="https://shop.example/{{ json.n }}">Track it</a></body></html>',
      'Order {{ json.n }}',
    ),
  );
  const body = hostileBody(true);
  const hostile = await underLoad(
    stack,
    `${run}-hostile`,
    sendRequest(`${run}-hostile`, body, NESTED_LOOPS),
  );
  // The same markup with a benign template: every render succeeds, so each recipient's 1 MB
  // body reaches the link scan (with the loops, the renders fail first).
  const markupBody = hostileBody(false);
  const markup = await underLoad(
    stack,
    `${run}-markup`,
    sendRequest(`${run}-markup`, markupBody, 'Order {{ json.n }}'),
  );
  const ratio95 = percentile(hostile.latencies, 95) / percentile(baseline, 95);
  const markupRatio95 = percentile(markup.latencies, 95) / percentile(baseline, 95);
  return {
    rows: [
      {
        figure: 'stress',
        measure: `hostile send of ${RECIPIENTS} (html_body ${fixed(body.length / 1e6, 2)} MB, nested-loop Liquid): time`,
        value: `${fixed(hostile.ms)} ms`,
        reference: `deadline ${SEND_TIMEOUT_MS} ms; benign send of ${RECIPIENTS}: ${fixed(benign.ms)} ms`,
        ratio: hostile.ms / SEND_TIMEOUT_MS,
        target: '< deadline',
        met: hostile.ms < SEND_TIMEOUT_MS && hostile.failure === undefined,
      },
      {
        figure: 'stress',
        measure: `other tenant's merge, p50 / p95 / max while the hostile send runs (${hostile.latencies.length} requests)`,
        value: `${p(hostile.latencies, 50)} / ${p(hostile.latencies, 95)} / ${p(hostile.latencies, 100)}`,
        reference: `alone: ${p(baseline, 50)} / ${p(baseline, 95)} / ${p(baseline, 100)}`,
        ratio: ratio95,
        target: 'p95 ≤ 3 × alone',
        met: ratio95 <= 3,
      },
      {
        figure: 'stress',
        measure: `hostile markup only (html_body ${fixed(markupBody.length / 1e6, 2)} MB of \`<a \`, benign Liquid) to ${RECIPIENTS}: time`,
        value: `${fixed(markup.ms)} ms`,
        reference: `deadline ${SEND_TIMEOUT_MS} ms`,
        ratio: markup.ms / SEND_TIMEOUT_MS,
        target: '< deadline',
        met: markup.ms < SEND_TIMEOUT_MS && markup.failure === undefined,
      },
      {
        figure: 'stress',
        measure: `other tenant's merge, p50 / p95 / max while the markup-only send runs (${markup.latencies.length} requests)`,
        value: `${p(markup.latencies, 50)} / ${p(markup.latencies, 95)} / ${p(markup.latencies, 100)}`,
        reference: `alone: ${p(baseline, 50)} / ${p(baseline, 95)} / ${p(baseline, 100)}`,
        ratio: markupRatio95,
        target: 'p95 ≤ 3 × alone',
        met: markupRatio95 <= 3,
      },
      {
        figure: 'stress',
        measure: `other tenant's merge, p50 / p95 while a benign send runs (${benign.latencies.length} requests)`,
        value: `${p(benign.latencies, 50)} / ${p(benign.latencies, 95)}`,
        reference: `alone: ${p(baseline, 50)} / ${p(baseline, 95)}`,
        ratio: percentile(benign.latencies, 95) / percentile(baseline, 95),
      },
    ],
    notes: [
      `Hostile send answered ${hostile.failure ?? JSON.stringify(hostile.statuses)}; markup-only send ${markup.failure ?? JSON.stringify(markup.statuses)}; benign send ${benign.failure ?? JSON.stringify(benign.statuses)}.`,
      `Errors, one of each kind: hostile send ${JSON.stringify(hostile.errors)}; markup-only send ${JSON.stringify(markup.errors)}; benign send ${JSON.stringify(benign.errors)}.`,
      `The other tenant's requests run one after the other, from the start of each send to its answer; the baseline is ${BASELINE_REQUESTS} of them alone, just before.`,
      'Locally every route of a region shares one Node process (on AWS each request has its own function): the other tenant only keeps its latency if the hostile request yields between its pieces of work.',
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure(
    'Stress: a hostile send beside another tenant',
    await withBenchStack(sendStressFigure),
  );
}
