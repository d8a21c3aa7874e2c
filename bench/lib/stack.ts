import { DescribeTableCommand, UpdateTableCommand } from '@aws-sdk/client-dynamodb';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import { startStack, stopStack, waitForBanner } from '../../test/integration/stack-process.js';

/**
 * The stack the benchmarks run against: `local/start.ts` on ports of its own (6300, 9600,
 * 6350, 9605 unless `BENCH_PORT`, `BENCH_DYNAMODB_PORT`, `BENCH_SQS_PORT`, `BENCH_SES_PORT`
 * say otherwise: not `npm start`'s nor the test stacks'), in memory, with
 * `bench/bench-config.json` (instance `bench`, key `BENCH_KEY`), stopped by its PID.
 * `CDP_FAULTS` is passed through. With `BENCH_AWS_ENDPOINT` (a LocalStack, say
 * `http://127.0.0.1:4566`) every AWS service is there instead (`CDP_AWS_ENDPOINT=external`):
 * DynamoDB Local's own streams slow every call as a stream grows (one SQLite connection that
 * reads stream records by scanning), so a figure over 100,000 people needs LocalStack's
 * (kinesis-mock).
 */
const external = process.env.BENCH_AWS_ENDPOINT;
export const BENCH_INSTANCE = 'bench';
export const BENCH_KEY = 'bench-key-32-characters-or-more-x';

export interface BenchStack {
  base: string;
  key: string;
  dynamodbEndpoint: string;
  /** The SES stand-in the email worker sends to (its gateway: `/messages`, `/raw/<id>`). */
  sesEndpoint: string;
  /** PIDs of the stack's processes, by the names its banner gives them. */
  pids: Record<string, number>;
  /** CPU seconds (user + system) a process has used so far (Linux `/proc`). */
  cpuSeconds(pid: number): number;
  output(): string;
}

const ports = {
  port: Number(process.env.BENCH_PORT ?? 6300),
  dynamodbPort: Number(process.env.BENCH_DYNAMODB_PORT ?? 9600),
  sqsPort: Number(process.env.BENCH_SQS_PORT ?? 6350),
  sesPort: Number(process.env.BENCH_SES_PORT ?? 9605),
};

/** CPU seconds of a process from `/proc/<pid>/stat` (utime + stime, in clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  try {
    return statSeconds(`/proc/${pid}/stat`);
  } catch {
    return Number.NaN;
  }
}

/** utime + stime of a `/proc` `stat` file (a process's or a thread's), in seconds. */
function statSeconds(path: string): number {
  const stat = readFileSync(path, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function pidsOf(output: string): Record<string, number> {
  const line = output.split('\n').find((l) => l.includes('Processes:')) ?? '';
  const pids: Record<string, number> = {};
  for (const part of line.replace(/.*Processes:\s*/, '').split(', ')) {
    const match = /^(.*) (\d+)$/.exec(part.trim());
    if (match?.[1] && match[2]) pids[match[1]] = Number(match[2]);
  }
  return pids;
}

/** The AWS SDK settings of the bench stack's emulators, for in-process clients. */
export function benchAwsEnv(): Record<string, string> {
  if (external) {
    return {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL: external,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
  }
  return {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${ports.dynamodbPort}`,
    AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${ports.sqsPort}`,
    AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${ports.sqsPort}`,
    AWS_ENDPOINT_URL_SNS: `http://127.0.0.1:${ports.sqsPort}`,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

/** Starts a fresh bench stack, runs `work` against it, and stops it (by its PID) whatever happens. */
export async function withBenchStack<T>(work: (stack: BenchStack) => Promise<T>): Promise<T> {
  const started = startStack({
    ...process.env,
    PORT: String(ports.port),
    DYNAMODB_PORT: String(ports.dynamodbPort),
    SQS_PORT: String(ports.sqsPort),
    SES_PORT: String(ports.sesPort),
    CDP_EPHEMERAL: '1',
    CDP_SEED_FILE: 'bench/bench-config.json',
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR',
    // SES is not what is measured: the worker sends as fast as it can.
    SES_MAX_SEND_RATE: process.env.SES_MAX_SEND_RATE ?? '1000',
    INGEST_RETRY_BASE_SECONDS: '1',
    EMAIL_RETRY_BASE_SECONDS: '1',
    // Stream pollers read a shard 100 ms after records and 200 ms after an empty read,
    // doubling while it stays empty up to a second (as `npm start` does). Every read of
    // DynamoDB Local's streams takes its one database connection: three regions' two dozen
    // pollers reading every 200 ms held it most of the time, and the figures measured that.
    CDP_STREAM_MAX_IDLE_MS: process.env.BENCH_STREAM_MAX_IDLE_MS ?? '1000',
    // A shard with records is read once a second (Lambda, and `npm start`: four times): on AWS
    // stream reads cost the table nothing, here each is a query on the connection the writes
    // measured need (figure 2's existing people at c=1 and c=4: 0.54 and 0.41 of the ceiling
    // at 250 ms, 0.52 and 0.87 at 1 s, one run each). The lag rows carry this second.
    CDP_STREAM_POLL_MS: process.env.BENCH_STREAM_POLL_MS ?? '1000',
    // The region measured alone (bench-config.json's instance is in it): on AWS the others are
    // deployments of their own, here their idle pollers' stream reads cost the one DynamoDB
    // Local every figure runs against (each read of a stream is a query of its one database
    // connection, slower as the streams grow). `BENCH_REGIONS` to run more.
    CDP_REGIONS: process.env.BENCH_REGIONS ?? 'default',
    // The workers in a process of their own, as on AWS (functions of their own): on one event
    // loop with the API, each second's burst of stream records handled held up its requests.
    CDP_SPLIT_WORKERS: process.env.BENCH_SPLIT_WORKERS ?? '1',
    // DynamoDB Local's JVM with its defaults (the optimising compiler too), not the local
    // stack's quick compiler alone: the figures measure throughput over hundreds of thousands
    // of calls, where C2 pays for itself once warm (figure 2 alone took 230 s with it, 392 s
    // without; its drain alone 0.84 and 0.51 of sync). `BENCH_DYNAMODB_JAVA_OPTIONS` to change.
    CDP_DYNAMODB_JAVA_OPTIONS: process.env.BENCH_DYNAMODB_JAVA_OPTIONS ?? '',
    ...(external ? { CDP_AWS_ENDPOINT: 'external', AWS_ENDPOINT_URL: external } : {}),
  });
  const stop = () => stopStack(started.child);
  const onSignal = () => void stop().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  console.error(
    `bench: starting a stack on http://127.0.0.1:${ports.port} (pid ${started.child.pid ?? '?'})…`,
  );
  try {
    await waitForBanner(started.output, started.child, 180_000);
    Object.assign(process.env, benchAwsEnv());
    return await work({
      base: `http://127.0.0.1:${ports.port}`,
      key: BENCH_KEY,
      dynamodbEndpoint: external ?? `http://127.0.0.1:${ports.dynamodbPort}`,
      sesEndpoint: `http://127.0.0.1:${ports.sesPort}`,
      pids: pidsOf(started.output()),
      cpuSeconds,
      output: started.output,
    });
  } catch (error) {
    // What the stack printed (the error behind a 500 among it), kept for a look after.
    mkdirSync('.data', { recursive: true });
    writeFileSync('.data/bench-stack.log', started.output());
    console.error('bench: the stack output is in .data/bench-stack.log');
    throw error;
  } finally {
    await stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * CPU seconds the threads of a process whose names start with `prefix` have used so far
 * (Linux `/proc/<pid>/task`; a thread's name is cut to 15 characters there).
 */
function threadCpuSeconds(pid: number, prefix: string): number {
  let seconds = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        if (!readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').startsWith(prefix)) continue;
        seconds += statSeconds(`/proc/${pid}/task/${task}/stat`);
      } catch {
        // The thread ended meanwhile.
      }
    }
  } catch {
    return Number.NaN;
  }
  return seconds;
}

/**
 * DynamoDB Local's one database thread (sqlite4java's `SQLiteQueue`): every SQLite statement
 * of every table, and each item's JSON, runs on it, so that every figure against DynamoDB
 * Local is bounded by this one thread's time.
 */
const STORE_THREAD = 'SQLiteQueue';

/** CPU seconds DynamoDB Local's database thread has used so far (NaN without one). */
function storeThreadSeconds(stack: BenchStack): number {
  const pid = stack.pids['DynamoDB Local'];
  return pid === undefined ? Number.NaN : threadCpuSeconds(pid, STORE_THREAD);
}

/** CPU seconds every process of the stack has used so far. */
function stackCpuSeconds(stack: BenchStack): number {
  return Object.values(byProcess(stack)).reduce((sum, seconds) => sum + seconds, 0);
}

/** CPU seconds each process of the stack has used so far, by its banner's name. */
function byProcess(stack: BenchStack): Record<string, number> {
  return Object.fromEntries(
    Object.entries(stack.pids).map(([name, pid]) => [name, stack.cpuSeconds(pid) || 0]),
  );
}

/**
 * Waits until the stack is idle: its processes together use under `idleCores` of CPU over a
 * half-second window, at most `timeoutMs`. A run measured right after another also measured
 * the other's tail (its stream records still being read and handled by the workers, which
 * share DynamoDB Local and, locally, the API's process): a ratio then said which of the two
 * runs came first more than what either did.
 */
export async function settle(
  stack: BenchStack,
  idleCores = 0.15,
  timeoutMs = 60_000,
): Promise<{ ms: number; idle: boolean }> {
  const used = () => stackCpuSeconds(stack);
  const started = Date.now();
  for (;;) {
    const before = used();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idle = (used() - before) / 0.5 < idleCores;
    if (idle || Date.now() - started > timeoutMs) return { ms: Date.now() - started, idle };
  }
}

/**
 * Runs `work` and answers what it did with the CPU every process of the stack spent while it
 * ran, and how long it ran: what a path costs the machine, whichever process does it. Two runs
 * that each keep the machine's cores busy run at rates in about the inverse ratio of their CPU
 * per record. (Not until the stack is idle again: once DynamoDB Local's streams have grown, its
 * pollers' reads never let it idle, and that would be counted as well.)
 */
export async function withStackCpu<T>(
  stack: BenchStack,
  work: () => Promise<T>,
): Promise<{
  result: T;
  cpuSeconds: number;
  seconds: number;
  /** The same CPU seconds, process by process (the banner's names). */
  processes: Record<string, number>;
  /** Of DynamoDB Local's, its database thread's (`STORE_THREAD`; NaN where not found). */
  storeThreadSeconds: number;
}> {
  const before = byProcess(stack);
  const storeBefore = storeThreadSeconds(stack);
  const started = performance.now();
  const result = await work();
  const after = byProcess(stack);
  const storeThread = storeThreadSeconds(stack) - storeBefore;
  const processes = Object.fromEntries(
    Object.entries(after).map(([name, seconds]) => [name, seconds - (before[name] ?? 0)]),
  );
  return {
    result,
    cpuSeconds: Object.values(processes).reduce((sum, seconds) => sum + seconds, 0),
    seconds: (performance.now() - started) / 1000,
    processes,
    storeThreadSeconds: storeThread,
  };
}

/**
 * Runs `work` with the stack's queue workers stopped (SIGSTOP, and SIGCONT after it whatever
 * happens): requests queued meanwhile wait, to be drained alone once the workers go on, as on
 * AWS, where the API and the workers never share a core. Needs the workers in a process of
 * their own (`BENCH_SPLIT_WORKERS`, on by default).
 */
export function withQueueWorkersHeld<T>(stack: BenchStack, work: () => Promise<T>): Promise<T> {
  return withHeld(stack, 'the default queue workers', work);
}

/**
 * Runs `work` with the stack's stream workers stopped: the stream records its writes make wait
 * in DynamoDB Local's streams, to be handled once the workers go on (after the run measured,
 * as on AWS, where stream workers are functions of their own and do not share the API's or the
 * ingest worker's cores).
 */
export function withStreamWorkersHeld<T>(stack: BenchStack, work: () => Promise<T>): Promise<T> {
  return withHeld(stack, 'the default stream workers', work);
}

/**
 * A run measured on its own: once the stack is idle (`settle`), with the stream workers held
 * (`withStreamWorkersHeld`). A run of a second met the stream workers' reads and writes for
 * its own records (polled once a second) or did not, and its ratio moved with that more than
 * with what the path did.
 */
export async function isolated<T>(stack: BenchStack, work: () => Promise<T>): Promise<T> {
  await settle(stack);
  return withStreamWorkersHeld(stack, work);
}

async function withHeld<T>(stack: BenchStack, name: string, work: () => Promise<T>): Promise<T> {
  const pid = stack.pids[name];
  if (pid === undefined) {
    throw new Error(`${name} have no process of their own (BENCH_SPLIT_WORKERS=0)`);
  }
  process.kill(pid, 'SIGSTOP');
  try {
    return await work();
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}

/** Whether nothing listens on a local port any more. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => {
      resolve(true);
    });
  });
}

/**
 * Waits (up to `timeoutMs`) until a stopped bench stack's ports are free, so that the next one
 * can start on them: its processes take a few seconds to go.
 */
export async function benchPortsFreed(timeoutMs = 30_000): Promise<void> {
  const all = [ports.port, ports.dynamodbPort, ports.sqsPort, ports.sesPort];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const free = await Promise.all(all.map(portFree));
    if (free.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error(`bench: ports ${all.join(', ')} still taken`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A document client of the bench stack's DynamoDB Local without injected faults. */
export function benchDb() {
  return createDocumentClient(createDynamoDbClient(), '');
}

/** Whether the module is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && pathToFileURL(process.argv[1]).href === moduleUrl;
}

/**
 * Turns a table's stream off and returns what turns it on again (a new stream, which the
 * stream poller finds by describing the table, as a mapping would be re-pointed on AWS).
 */
export async function pauseStream(TableName: string): Promise<() => Promise<void>> {
  const client = createDynamoDbClient();
  const { Table } = await client.send(new DescribeTableCommand({ TableName }));
  const view = Table?.StreamSpecification?.StreamViewType;
  if (!Table?.StreamSpecification?.StreamEnabled || !view) return () => Promise.resolve();
  const enable = new UpdateTableCommand({
    TableName,
    StreamSpecification: { StreamEnabled: true, StreamViewType: view },
  });
  await client.send(
    new UpdateTableCommand({ TableName, StreamSpecification: { StreamEnabled: false } }),
  );
  const paused = Date.now();
  // LocalStack keeps a table's one kinesis-mock stream when its stream is turned off (it
  // forwards no records meanwhile), so turning it on again answers a 500 naming
  // ResourceInUseException after the table is marked enabled: the stream is back then.
  return async () => {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, paused + 2_000 - Date.now())));
    try {
      await client.send(enable);
    } catch (error) {
      const { Table: after } = await client.send(new DescribeTableCommand({ TableName }));
      if (!/already exists/.test(String(error)) || !after?.StreamSpecification?.StreamEnabled) {
        throw error;
      }
    }
  };
}
