import { availableParallelism } from 'node:os';
import { WORKERS } from '../../shared/workers.js';
import { batchGet } from '../../shared/adapters/dynamo-helpers.js';
import { statusKey } from '../../shared/adapters/request-store.js';
import { tableName } from '../../shared/resources.js';
import { fixed, render, type FigureResult, type Row } from './render.js';
import {
  BENCH_INSTANCE,
  type BenchStack,
  benchDb,
  settle,
  withQueueWorkersHeld,
  withStackCpu,
  withStreamWorkersHeld,
} from './stack.js';

export { fixed, type FigureResult, type Row } from './render.js';

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

export const median = (values: number[]) => percentile(values, 50);

/**
 * The stack's CPU per record during an async drain and during the same records sent
 * synchronously (`withStackCpu`), and the cores each kept busy: while both fill the machine's
 * cores, the drain's rate is about the sync rate times the ratio of the two. For a row's note.
 */
export function cpuText(
  drain: RunCpu,
  sync: RunCpu,
  records: number,
  record: string,
  /** The sync run's records, when not as many as the drain's. */
  syncRecords = records,
) {
  const us = (run: { cpuSeconds: number }, count: number) => (run.cpuSeconds * 1e6) / count;
  const [drainUs, syncUs] = [us(drain, records), us(sync, syncRecords)];
  const cores = (run: { cpuSeconds: number; seconds: number }) =>
    fixed(run.cpuSeconds / run.seconds, 2);
  // DynamoDB Local's one database thread: how much of each run it was busy (of the drain's own
  // time, from its release to its last finish, where given: its CPU window outlasts that by up
  // to a poll), and for how long a record. Every figure against DynamoDB Local is bounded by
  // this one thread: the rates' ratio is about the ratio of the busy shares over that of the
  // times per record.
  const busy = (run: RunCpu) =>
    fixed((100 * (run.storeThreadSeconds ?? Number.NaN)) / (run.activeSeconds ?? run.seconds));
  const perRecord = (run: RunCpu, count: number) =>
    fixed(((run.storeThreadSeconds ?? Number.NaN) * 1e6) / count);
  const thread =
    Number.isFinite(drain.storeThreadSeconds) && Number.isFinite(sync.storeThreadSeconds)
      ? `; DynamoDB Local's database thread busy ${busy(drain)} % / ${busy(sync)} % (${perRecord(drain, records)} / ${perRecord(sync, syncRecords)} µs per ${record})`
      : '';
  return `the stack's CPU per ${record}: async ${fixed(drainUs)} µs, sync ${fixed(syncUs)} µs (ratio ${fixed(syncUs / drainUs, 2)}); cores busy ${cores(drain)} / ${cores(sync)} of ${availableParallelism()}${thread}`;
}

/** Per-request latencies as the notes give them. */
export const latencyText = (latencies: number[]) =>
  `p50/p95/p99 ${[50, 95, 99].map((p) => fixed(percentile(latencies, p))).join('/')} ms`;

/** The ratio of each round, in the order they ran (the row's ratio is their median). */
export const roundsText = (ratios: number[]) =>
  ratios.length === 1 ? 'one round' : `rounds ${ratios.map((r) => fixed(r, 2)).join(', ')}`;

/**
 * Calls a ceiling keeps in flight at most, across all its requests: below the 50 sockets the
 * AWS SDK's client opens to one endpoint. Above them, a call waits in the client's queue for a
 * socket, and that wait counts against its 2 s connection budget (`aws-clients.ts`): figure 1's
 * new-person ceiling at c=16 (16 requests × 16 transactions) failed on it, having measured the
 * queue rather than the store. Past some dozens in flight the store's rate no longer grows
 * (figure 1's ceilings: 183/s at 64 in flight, 204/s at 256 when it still ran).
 */
export const CEILING_IN_FLIGHT = 48;

/** A gate that lets at most `limit` calls run at once; the others wait their turn, in order. */
export function gate(limit: number): <T>(call: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (call) => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running += 1;
    try {
      return await call();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

/**
 * Batches the ingest worker runs at once (its event source's maximum concurrency): the
 * concurrency of the synchronous requests an async drain is compared with (the same
 * concurrency on both sides; the knob, docs/api.md).
 */
export const INGEST_CONCURRENCY =
  WORKERS.find((worker) => worker.queue === 'ingest')?.maxConcurrency ?? 1;

export const perSecond = (count: number, ms: number) => (count * 1000) / ms;

/** A count the bench takes from the environment (`name`), at least 1; `fallback` unless set. */
function countFromEnv(name: string, fallback: number): number {
  return Math.max(1, Number(process.env[name] ?? fallback));
}

/** A figure's request count times `BENCH_SCALE` (more for steadier figures, fewer for speed). */
export const scaled = (count: number) => Math.ceil(count * Number(process.env.BENCH_SCALE ?? 1));

/**
 * The concurrency levels of figures 1 and 2: `BENCH_LEVELS=1,4` for fewer on a loaded machine,
 * `BENCH_LEVELS=` for none (their async rows alone).
 */
export const LEVELS = (process.env.BENCH_LEVELS ?? '1,4,16')
  .split(',')
  .map(Number)
  .filter((level) => level > 0);

/**
 * Rounds of a figure's API run and its ceiling, one after the other (`BENCH_ROUNDS`, 3 by
 * default): the row's ratio is the median of the rounds' ratios, each round's listed beside.
 */
export const ROUNDS = countFromEnv('BENCH_ROUNDS', 3);

/** Requests per concurrency level: enough for a steady rate, few enough for the time budget. */
export const requestsAt = (concurrency: number) => scaled(Math.max(6, concurrency * 3));

/** Runs `work(n)` for n = 0..count-1 with `concurrency` at a time; the elapsed milliseconds. */
export async function burst(
  count: number,
  concurrency: number,
  work: (n: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (let n = next++; n < count; n = next++) await work(n);
    }),
  );
  return performance.now() - started;
}

/** A JSON POST to the API; the parsed answer, or an error naming the status. */
export async function post(
  base: string,
  key: string,
  path: string,
  body: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** `count` asynchronous requests of `records` records each, `concurrency` at a time. */
interface QueuedRun {
  base: string;
  key: string;
  path: string;
  count: number;
  concurrency: number;
  records: number;
  body: (n: number) => Record<string, unknown>;
}

/**
 * Asynchronous requests (`async: true`) accepted `concurrency` at a time: their request IDs,
 * in the order accepted, and the accept rate in records per second.
 */
export async function acceptAll(run: QueuedRun): Promise<{ ids: string[]; accept: number }> {
  const { base, key, path, count, concurrency, records, body } = run;
  const ids: string[] = [];
  const acceptMs = await burst(count, concurrency, async (n) => {
    const answer = await post(base, key, path, { ...body(n), async: true });
    ids.push(String(answer.request_id));
  });
  return { ids, accept: perSecond(count * records, acceptMs) };
}

/** When a wait for queued requests gives up (`BENCH_DRAIN_SECONDS`, 180 s by default). */
const drainDeadline = () => Date.now() + Number(process.env.BENCH_DRAIN_SECONDS ?? 180) * 1000;

/**
 * Polls (`/v1/async/get`) until every request is done, every `intervalMs`; a failed one fails
 * the run.
 */
export async function untilDone(
  base: string,
  key: string,
  ids: string[],
  intervalMs = 50,
): Promise<void> {
  let pending = [...ids];
  const deadline = drainDeadline();
  // Asked in order, each round only up to the first request not done yet: the drain is over
  // when every one is, and asking after all of them at every round took the store's time
  // from the worker being measured.
  while (pending.length > 0) {
    if (Date.now() > deadline)
      throw new Error(`async requests not done in time: ${pending.join(', ')}`);
    while (pending.length > 0) {
      const [id = ''] = pending;
      // A poll the stack answers 503 (out of time under load) is asked again next round.
      const status = await post(base, key, '/v1/async/get', { request_id: id }).then(
        (answer) => answer.status,
        (error: unknown) => {
          if (/HTTP 503/.test(String(error))) return 'unknown';
          throw error;
        },
      );
      if (status === 'failed') throw new Error(`async request failed: ${id}`);
      if (status !== 'done') break;
      pending = pending.slice(1);
    }
    // Every 50 ms by default: a drain of 2 s would otherwise end up to a tenth later than it did.
    if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Asynchronous requests accepted `concurrency` at a time, then polled until every one is
 * done: the accept rate and the drain rate (first accept to last done: the worker drains
 * while the API accepts), in records per second.
 */
export async function acceptAndDrain(
  base: string,
  key: string,
  path: string,
  count: number,
  concurrency: number,
  records: number,
  body: (n: number) => Record<string, unknown>,
): Promise<{ accept: number; drain: number }> {
  const started = performance.now();
  const { ids, accept } = await acceptAll({ base, key, path, count, concurrency, records, body });
  await untilDone(base, key, ids);
  return { accept, drain: perSecond(count * records, performance.now() - started) };
}

/**
 * Waits until every request is done, asking the store (the status items of the first
 * `STORE_POLL_KEYS` requests not yet done, strongly consistent, every `intervalMs`), and
 * returns when the last one finished as the worker wrote it (epoch ms). A failed one fails
 * the run. Asking after every request at every poll read about one item per record drained
 * from the DynamoDB Local the drain writes to (a drain of new people, 11 s at scale 2, met
 * some 5,000 reads of its 48 requests' items).
 */
async function finishedInStore(ids: string[], intervalMs: number): Promise<number> {
  const deadline = drainDeadline();
  const table = tableName('default', 'requests');
  let pending = ids;
  let last = 0;
  for (;;) {
    const items = await batchGet(
      benchDb(),
      table,
      pending.slice(0, STORE_POLL_KEYS).map((id) => statusKey(BENCH_INSTANCE, id)),
      true,
    );
    const done = new Set<string>();
    for (const item of items) {
      const id = String(item.request_id);
      if (item.status === 'failed') throw new Error(`async request failed: ${id}`);
      if (item.status !== 'done') continue;
      const finished = Date.parse(String(item.updated_at));
      if (Number.isNaN(finished)) throw new Error(`drained request ${id} has no finish time`);
      done.add(id);
      last = Math.max(last, finished);
    }
    pending = pending.filter((id) => !done.has(id));
    if (pending.length === 0) return last;
    if (Date.now() > deadline)
      throw new Error(`async requests not done in time: ${pending.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** How often the drain alone asks the store whether its requests are done, and about how many. */
const DRAIN_POLL_MS = 200;
const STORE_POLL_KEYS = 10;

/**
 * The drain alone: requests accepted while the queue workers are held, then drained with
 * nothing else running (records per second from the moment the workers go on to the last
 * request's finish, as the worker wrote it in the request's status), with the CPU the stack
 * spent meanwhile. Whether the requests are done is asked of the store, not of the API: each
 * `/v1/async/get` of a done request cost the API process 4-7 ms (it reads, unzips and sends
 * the whole answer), about 30 µs of the two cores per activity drained, taken from the worker
 * being measured; a client's retrieval of its answers is not the
 * drain. On one machine the end-to-end run (`acceptAndDrain`) also measures the accepts and
 * the polls, which share its two cores with the worker; on AWS they run on functions of their
 * own.
 */
export async function drainAlone(
  stack: BenchStack,
  path: string,
  count: number,
  concurrency: number,
  records: number,
  body: (n: number) => Record<string, unknown>,
): Promise<Timed<number>> {
  const { ids } = await withQueueWorkersHeld(stack, () =>
    acceptAll({ base: stack.base, key: stack.key, path, count, concurrency, records, body }),
  );
  const released = Date.now();
  let finished = 0;
  const drained = await withStackCpu(stack, async () => {
    finished = await finishedInStore(ids, DRAIN_POLL_MS);
  });
  // The rate from the store's times; `seconds` stays the CPU's window (cores busy).
  return {
    cpuSeconds: drained.cpuSeconds,
    seconds: drained.seconds,
    processes: drained.processes,
    storeThreadSeconds: drained.storeThreadSeconds,
    activeSeconds: (finished - released) / 1000,
    result: perSecond(count * records, finished - released),
  };
}

/** What a run's CPU text (`cpuText`) reads of it. */
type RunCpu = Pick<
  Timed<unknown>,
  'cpuSeconds' | 'seconds' | 'storeThreadSeconds' | 'activeSeconds'
>;

/** A run measured with the stack's CPU (`withStackCpu`). */
interface Timed<T> {
  result: T;
  cpuSeconds: number;
  seconds: number;
  /** The CPU seconds process by process, where measured. */
  processes?: Record<string, number>;
  /** DynamoDB Local's database thread's CPU seconds, where measured (`withStackCpu`). */
  storeThreadSeconds?: number;
  /** A drain alone's own time (release to last finish), inside its CPU window `seconds`. */
  activeSeconds?: number;
}

/** A run's CPU seconds by process, largest first, for the log ("DynamoDB Local 12.3 s, …"). */
function processesText(processes: Record<string, number> = {}): string {
  return Object.entries(processes)
    .filter(([, seconds]) => seconds >= 0.05)
    .sort(([, a], [, b]) => b - a)
    .map(([name, seconds]) => `${name} ${fixed(seconds, 1)} s`)
    .join(', ');
}

/**
 * Runs of the same number of records as one: the records over their summed time (the harmonic
 * mean of the rates: a run's `seconds` is the window its CPU was measured in, which for a
 * drain alone outlasts the drain), the mean CPU.
 */
function allRuns<T>(runs: Timed<T>[], rate: (run: Timed<T>) => number) {
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  return {
    rate: runs.length / runs.reduce((sum, run) => sum + 1 / rate(run), 0),
    cpuSeconds: mean(runs.map((run) => run.cpuSeconds)),
    seconds: mean(runs.map((run) => run.seconds)),
    storeThreadSeconds: mean(runs.map((run) => run.storeThreadSeconds ?? Number.NaN)),
    activeSeconds: mean(runs.map((run) => run.activeSeconds ?? run.seconds)),
  };
}

/**
 * Unmeasured drains alone before the measured ones (`BENCH_DRAIN_WARMUPS`, 3 unless set):
 * the worker's process has handled a hundred-odd requests by then where the API's has handled
 * hundreds, and its CPU per record kept falling over its next three or four drains of 96
 * requests (V8 compiling its paths).
 */
export const DRAIN_WARMUPS = countFromEnv('BENCH_DRAIN_WARMUPS', 3);
/**
 * How long the stack may take to become idle before the drains and their reference start: the
 * figure's earlier runs leave their stream records to the stream workers, whose reads of
 * DynamoDB Local's grown streams can take more than the 60 s `settle` gives by default.
 */
const DRAIN_SETTLE_MS = 180_000;
/** Cycles of sync, drain, drain, sync measured (`BENCH_DRAIN_CYCLES`, 6 unless set). */
export const DRAIN_CYCLES = countFromEnv('BENCH_DRAIN_CYCLES', 6);

/**
 * The drain alone and its synchronous reference, run in cycles of sync, drain, drain, sync,
 * each side given as all its runs together, with each cycle's own ratio (`cycles`): every run
 * grows the tables and DynamoDB Local's streams, so a drain measured only after its reference
 * met larger tables than the reference did (its ratio then said which ran first). `round`
 * numbers the runs, for a caller whose runs need records of their own (figure 1's new people;
 * figure 2's activities get new IDs in any case). Before them, once the stack is idle,
 * `DRAIN_WARMUPS` drains alone and one sync run, unmeasured.
 *
 * The stream workers are held from the warm-ups to the last run, and each run starts as the
 * one before ends: no run meets their reads and writes for another run's records, and none
 * waits for a settle. Settled before each run instead (up to 2026-12-02), a cycle read
 * 0.79-1.23 on the same code, as how much of the stream workers' backlog a settle left
 * depended on the streams' size; held through, 0.82-1.06.
 * Their backlog, every run's stream records, is left when this returns: the comparison is the
 * last work of its figure's stack (working through it took DynamoDB Local minutes, and calls
 * made meanwhile timed out).
 */
export async function drainBesideSync<S extends { rate: number }>(
  stack: BenchStack,
  runs: {
    sync: (round: number) => Promise<Timed<S>>;
    alone: (round: number) => Promise<Timed<number>>;
  },
): Promise<{ sync: Timed<S>; alone: Timed<number>; cycles: number[] }> {
  const sync: Timed<S>[] = [];
  const alone: Timed<number>[] = [];
  const cycles: number[] = [];
  const steps = ['sync', 'alone', 'alone', 'sync'] as const;
  // Where each run's CPU went, said as it ends (the rows give the two sides' totals), and when.
  const say = (what: string, run: Timed<unknown>, rate: number) => {
    console.error(
      `bench: ${new Date().toISOString().slice(11, 19)} ${what} ${fixed(rate)}/s in ${fixed(run.seconds, 1)} s; CPU ${processesText(run.processes)}${Number.isFinite(run.storeThreadSeconds) ? `; DynamoDB Local's database thread ${fixed(run.storeThreadSeconds ?? 0, 1)} s` : ''}`,
    );
  };
  const settled = await settle(stack, undefined, DRAIN_SETTLE_MS);
  console.error(
    `bench: the drains and their reference start, the stack ${settled.idle ? 'idle' : 'still busy'} after ${fixed(settled.ms / 1000)} s`,
  );
  await withStreamWorkersHeld(stack, async () => {
    let round = 0;
    for (let n = 0; n < DRAIN_WARMUPS; n += 1) {
      const run = await runs.alone(round);
      round += 1;
      say('drain alone (warm-up, unmeasured)', run, run.result);
    }
    const warm = await runs.sync(round);
    round += 1;
    say('sync (warm-up, unmeasured)', warm, warm.result.rate);
    for (let cycle = 0; cycle < DRAIN_CYCLES; cycle += 1) {
      const cycleSync: Timed<S>[] = [];
      const cycleAlone: Timed<number>[] = [];
      for (const step of steps) {
        if (step === 'sync') {
          const run = await runs.sync(round);
          cycleSync.push(run);
          say('sync', run, run.result.rate);
        } else {
          const run = await runs.alone(round);
          cycleAlone.push(run);
          say('drain alone', run, run.result);
        }
        round += 1;
      }
      const ratio =
        allRuns(cycleAlone, (run) => run.result).rate /
        allRuns(cycleSync, (run) => run.result.rate).rate;
      console.error(
        `bench: cycle ${cycle + 1} of ${DRAIN_CYCLES}: drain alone / sync ${fixed(ratio, 2)}`,
      );
      cycles.push(ratio);
      sync.push(...cycleSync);
      alone.push(...cycleAlone);
    }
  });
  const syncAll = allRuns(sync, (run) => run.result.rate);
  const aloneAll = allRuns(alone, (run) => run.result);
  return {
    sync: { ...syncAll, result: { ...(sync[0] as Timed<S>).result, rate: syncAll.rate } },
    alone: { ...aloneAll, result: aloneAll.rate },
    cycles,
  };
}

/**
 * How the drain alone and its reference are run (`drainBesideSync`), and why its rows have no
 * target: the note both figures' drain rows share.
 */
export const DRAIN_METHOD = `Async drain alone (figures 1 and 2): requests accepted while the queue workers are held, then drained with nothing else running, from the workers' release to the last finish the worker wrote (read from the store); beside the same records sent synchronously at the ingest worker's concurrency. ${DRAIN_WARMUPS} drains and one sync run unmeasured, then ${DRAIN_CYCLES} cycles of sync, drain, drain, sync, each run as the one before ends, the stream workers held through them all; each side is all its runs together. Reported without a target: on one machine both sides are bounded by DynamoDB Local's one database thread, so the ratio measures the emulator's CPU per call, not the platform.`;

/**
 * The two rows of an async drain against the same records sent synchronously at the worker's
 * concurrency: from the first accept to the last done (the accepts share the cores), and the
 * drain alone. Neither has a target (`DRAIN_METHOD`).
 */
export function drainRows(run: {
  figure: string;
  /** What the records are, in the rows' text ("activities", "new people"). */
  what: string;
  /** One record, for the CPU text ("activity", "person"). */
  record: string;
  /** The records of each drain alone and each sync run. */
  records: number;
  /** The end-to-end run's, when not as many. */
  endToEndRecords?: number;
  concurrency: number;
  /** Said of the end-to-end run (how many requests, how they were accepted). */
  detail: string;
  endToEnd: RunCpu & { result: { drain: number } };
  alone: RunCpu & { result: number };
  sync: RunCpu & { result: { rate: number } };
  /** Each cycle's own ratio of the drain alone to sync (`drainBesideSync`). */
  cycles: number[];
}): Row[] {
  const { figure, what, record, records, concurrency, endToEnd, alone, sync } = run;
  const reference = `${fixed(sync.result.rate)}/s sync, c=${concurrency}`;
  const What = what.charAt(0).toUpperCase() + what.slice(1);
  return [
    {
      figure,
      measure: `async ${what}/s, first accept to last done`,
      value: `${fixed(endToEnd.result.drain)}/s`,
      reference,
      ratio: endToEnd.result.drain / sync.result.rate,
      notes: [
        `${What}, async accept and drain: ${run.detail}; from the first accept to the last request done as the API answers it, the accepts and polls sharing the cores with the worker; ${cpuText(endToEnd, sync, run.endToEndRecords ?? records, record, records)}.`,
      ],
    },
    {
      figure,
      measure: `async ${what}/s, drain alone`,
      value: `${fixed(alone.result)}/s`,
      reference,
      ratio: alone.result / sync.result.rate,
      notes: [
        DRAIN_METHOD,
        `${What}, drain alone: ${records.toLocaleString('en')} records a run; each cycle's ratio ${run.cycles.map((ratio) => fixed(ratio, 2)).join(', ')}; ${cpuText(alone, sync, records, record)}.`,
      ],
    },
  ];
}

/** A whole run of one figure on its own: a stack of its own, the rows printed. */
export function printFigure(title: string, result: FigureResult): void {
  console.log(`\n${title}\n\n${render([result])}\n`);
}
