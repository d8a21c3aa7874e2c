import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Starting and stopping the local stack the integration tests run against: `local/start.ts` itself, started by
 * the global setup on ports of its own (so a developer's `npm start` can keep running),
 * in memory, with the fixture configuration. Node imports only: the global setup loads it
 * outside jest's module mapper.
 */
export interface StackPorts {
  port: number;
  dynamodbPort: number;
  sqsPort: number;
  sesPort: number;
}

/**
 * `CDP_TEST_PORT_OFFSET` moves every port of both test stacks, so that two checkouts can run
 * their suites side by side.
 */
const offset = Number(process.env.CDP_TEST_PORT_OFFSET ?? 0);

export function shifted(ports: StackPorts): StackPorts {
  return {
    port: ports.port + offset,
    dynamodbPort: ports.dynamodbPort + offset,
    sqsPort: ports.sqsPort + offset,
    sesPort: ports.sesPort + offset,
  };
}

export const PLAIN_STACK: StackPorts = shifted({
  port: 3900,
  dynamodbPort: 8900,
  sqsPort: 4966,
  sesPort: 8905,
});

/**
 * The same suite also runs against a stack whose DynamoDB calls meet injected faults
 * (jest project `integration-faults`): every result must be the same, only slower.
 */
export const FAULTS_STACK: StackPorts = shifted({
  port: 3920,
  dynamodbPort: 8920,
  sqsPort: 4986,
  sesPort: 8925,
});
export const FAULTS = 'conflict=0.2,throttle=0.1,stale=0.3';

/**
 * The suite against LocalStack (jest project `integration-localstack`, `npm run
 * test:localstack`): the APIs and pollers on these ports, every AWS service at
 * `$AWS_ENDPOINT_URL` (`CDP_AWS_ENDPOINT=external`). Its emulator ports are not used.
 */
export const LOCALSTACK_STACK: StackPorts = shifted({
  port: 3940,
  dynamodbPort: 8940,
  sqsPort: 5006,
  sesPort: 8945,
});

export type TestStackKind = 'plain' | 'faults' | 'localstack';

export const TEST_STACKS: Record<TestStackKind, StackPorts> = {
  plain: PLAIN_STACK,
  faults: FAULTS_STACK,
  localstack: LOCALSTACK_STACK,
};

const kind = process.env.CDP_TEST_STACK;

/** The stack the tests of this jest project talk to (the project's setup file says which). */
export const TEST_STACK: StackPorts =
  kind === 'faults' || kind === 'localstack' ? TEST_STACKS[kind] : PLAIN_STACK;

/** Whether the tests run against an external AWS endpoint (LocalStack) rather than emulators. */
export function externalAws(): boolean {
  return process.env.CDP_AWS_ENDPOINT === 'external';
}

/**
 * How long a test waits for what a worker does after the answer (a stream or queue worker):
 * LocalStack's streams (kinesis-mock) and queues lag behind on busy cores, and its one gateway
 * serves every poller of the three regions. In a whole LocalStack run (2026-11-27) the
 * people stream's workers read up to 103 s behind its writes after the 3,000-member test
 * (the pollers say so: "iterator age"), and a test waiting 120 s just after it failed.
 */
export const WORKER_PATIENCE_MS = externalAws() ? 240_000 : 30_000;

/** A test of the stream workers: long enough for a few waits of `WORKER_PATIENCE_MS`. */
export const WORKER_TEST_TIMEOUT_MS = externalAws() ? 600_000 : 300_000;

/**
 * Where a service of the test stack answers: its emulator, or the external endpoint, read
 * from the same variables as `local/settings.ts` reads (that module cannot be imported here).
 */
export function stackEndpoint(
  service: 'DYNAMODB' | 'SQS' | 'S3' | 'SNS',
  ports: StackPorts = TEST_STACK,
): string {
  if (externalAws()) {
    return (
      process.env[`AWS_ENDPOINT_URL_${service}`] ||
      process.env.AWS_ENDPOINT_URL ||
      'http://localhost:4566'
    );
  }
  return `http://127.0.0.1:${service === 'DYNAMODB' ? ports.dynamodbPort : ports.sqsPort}`;
}

/**
 * AWS SDK settings for a test's own client of the stack's tables, queues and buckets (the
 * region and credentials the stack uses: `local/settings.ts` `localAwsEnv`).
 */
export function stackAwsEnv(ports: StackPorts = TEST_STACK): Record<string, string> {
  const credentials = externalAws() ? 'test' : 'local';
  return {
    AWS_REGION: externalAws() ? (process.env.AWS_REGION ?? 'us-east-1') : 'us-east-1',
    AWS_ACCESS_KEY_ID: credentials,
    AWS_SECRET_ACCESS_KEY: credentials,
    AWS_ENDPOINT_URL_DYNAMODB: stackEndpoint('DYNAMODB', ports),
    AWS_ENDPOINT_URL_SQS: stackEndpoint('SQS', ports),
    AWS_ENDPOINT_URL_S3: stackEndpoint('S3', ports),
    AWS_ENDPOINT_URL_SNS: stackEndpoint('SNS', ports),
  };
}

/**
 * The suites' instances. Those the suites send concurrent requests to set a generous
 * `rate_limit`: a request is charged one token per started 250 ms of its function's time
 * (`extraCost`), and on a loaded two-core CI machine a contended merge takes seconds, so 50
 * simultaneous merges could empty the default bucket (200) and the suite's next read be
 * refused with 429. The rate limit has its own instance (`ratelimited`) and suite; a few
 * instances (acme, globex, koala, stroopwafel, nomail, cheapmail) keep the default limit.
 */
export const SEED_FILE = 'test/fixtures/seed.json';

export const KEYS = {
  acme: 'test-key-32-characters-or-more-acme-website',
  acmeShop: 'test-key-32-characters-or-more-acme-shop',
  globex: 'test-key-32-characters-or-more-globex',
  koala: 'test-key-32-characters-or-more-koala',
  stroopwafel: 'test-key-32-characters-or-more-stroopwafel',
  people: 'test-key-32-characters-or-more-people',
  peopleByEi: 'test-key-32-characters-or-more-people-ei',
  peopleCareful: 'test-key-32-characters-or-more-people-careful',
  ledger: 'test-key-32-characters-or-more-ledger',
  race: 'test-key-32-characters-or-more-race',
  pager: 'test-key-32-characters-or-more-pager',
  finder: 'test-key-32-characters-or-more-finder',
  lookup: 'test-key-32-characters-or-more-lookup',
  orgs: 'test-key-32-characters-or-more-orgs',
  members: 'test-key-32-characters-or-more-members',
  tracker: 'test-key-32-characters-or-more-tracker',
  trackerSkip: 'test-key-32-characters-or-more-tracker-skip',
  safety: 'test-key-32-characters-or-more-safety',
  cursors: 'test-key-32-characters-or-more-cursors',
  repair: 'test-key-32-characters-or-more-repair',
  freeplan: 'test-key-32-characters-or-more-freeplan',
  worker: 'test-key-32-characters-or-more-worker',
  wide: 'test-key-32-characters-or-more-wide',
  mailer: 'test-key-32-characters-or-more-mailer',
  nomail: 'test-key-32-characters-or-more-nomail',
  cheapmail: 'test-key-32-characters-or-more-cheapmail',
  ratelimited: 'test-key-32-characters-or-more-ratelimited',
  ratelimitedBackend: 'test-key-32-characters-or-more-ratelimited-backend',
  ratelimitedWorker: 'test-key-32-characters-or-more-ratelimited-worker',
  audiences: 'test-key-32-characters-or-more-audiences',
  audiencesOther: 'test-key-32-characters-or-more-audiences-other',
  hooks: 'test-key-32-characters-or-more-hooks',
  hooksOther: 'test-key-32-characters-or-more-hooks-other',
  fairness: 'test-key-32-characters-or-more-fairness',
  fairnessOther: 'test-key-32-characters-or-more-fairness-other',
} as const;

export function stackEnv(ports: StackPorts, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PORT: String(ports.port),
    DYNAMODB_PORT: String(ports.dynamodbPort),
    SQS_PORT: String(ports.sqsPort),
    SES_PORT: String(ports.sesPort),
    // Errors only: an unexpected 500 is logged with its cause, which the teardown shows.
    POWERTOOLS_LOG_LEVEL: 'ERROR',
    // Configuration applied by a test reaches the functions at once.
    CDP_CONFIG_CACHE_MS: '0',
    // A failing queued message comes back after 0.5, 1, 2, 4 s (then the dead-letter queue).
    INGEST_RETRY_BASE_SECONDS: '0.5',
    // Rebuilds after an audience's change start after a second, not twenty.
    AUDIENCE_BUILD_DEBOUNCE_SECONDS: '1',
    EMAIL_RETRY_BASE_SECONDS: '0.5',
    // SES events retried after 0.5 … 4 s, all within a confirmation window of 10 s.
    EMAIL_EVENTS_RETRY_BASE_SECONDS: '0.5',
    EMAIL_CONFIRM_WINDOW_SECONDS: '10',
    // Every test speaks from 127.0.0.1, and some send unknown keys on purpose: the limit of
    // unknown keys per address is tested on its own (test/unit/http/unknown-keys.test.ts).
    CDP_UNKNOWN_KEYS_PER_MINUTE: '1000000',
    // A request's time on the emulators (DynamoDB Local, LocalStack) is not the work it did:
    // on a loaded machine it would take tokens the rate-limit tests count exactly. The charge
    // itself is tested in test/unit/domain/rate-limit.test.ts and api-handler.test.ts.
    CDP_REQUEST_COST_MS: '60000',
    // The console's users: one per instance of the console tests, an admin, and one without groups.
    CDP_CONSOLE_USERS: 'test/fixtures/console-users.json',
    ...extra,
  };
}

const REGION_OFFSETS = { default: 0, au: 1, eu: 2 } as const;

export function baseUrl(
  region: keyof typeof REGION_OFFSETS,
  ports: StackPorts = TEST_STACK,
): string {
  return `http://127.0.0.1:${ports.port + REGION_OFFSETS[region]}`;
}

export function startStack(env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/start.ts'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

export async function waitForHealth(ports: StackPorts, child: ChildProcess, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error('the local stack exited during startup');
    const healthy = await Promise.all(
      (['default', 'au', 'eu'] as const).map((region) =>
        fetch(`${baseUrl(region, ports)}/health`)
          .then((response) => response.ok)
          .catch(() => false),
      ),
    );
    if (healthy.every(Boolean)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('the local stack did not become healthy in time');
}

/** Resolves once the stack has printed its banner (it does so after every API is healthy). */
export async function waitForBanner(output: () => string, child: ChildProcess, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  while (!output().includes('CDP API is running')) {
    if (child.exitCode !== null)
      throw new Error(`the local stack exited during startup:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`no banner in time:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function stopStack(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      resolve(code);
    }),
  );
  child.kill('SIGTERM');
  return exited;
}
