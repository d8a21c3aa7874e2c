import { configAudienceApplier } from '../shared/worker/audience-runtime.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import type { SNSClient } from '@aws-sdk/client-sns';
import { ListQueuesCommand } from '@aws-sdk/client-sqs';
import { buildApp as buildFauxqs } from 'fauxqs';
import {
  NO_FAULTS,
  createDocumentClient,
  createDynamoDbClient,
  createS3Client,
  createSnsClient,
  createSqsClient,
} from '../shared/adapters/aws-clients.js';
import { LocalKeyWrapper } from '../shared/adapters/key-wrappers.js';
import { DynamoConfigStore } from '../shared/adapters/config-store.js';
import { createSesClient } from '../shared/adapters/ses-mailer.js';
import { EmailApiEnv } from '../shared/config/env.js';
import { DynamoPeopleStore } from '../shared/adapters/people-store.js';
import { parseFaults } from '../shared/adapters/dynamo-faults.js';
import { applyConfiguration } from '../shared/domain/configuration.js';
import { CdpError } from '../shared/domain/errors.js';
import {
  parseConfigurationFile,
  type ConfigurationFile,
} from '../shared/domain/instance-config.js';
import { type Region } from '../shared/domain/regions.js';
import {
  BUCKETS,
  TABLES,
  bucketVariable,
  localBucketName,
  queueName,
  queueUrlVariable,
  deadLetterUrlVariable,
  sesConfigurationSet,
  tableName,
  tableVariable,
} from '../shared/resources.js';
import { demoConfiguration, type DemoKeys } from './demo-config.js';
import { buildConsole } from './console-site.js';
import {
  CONSOLE_CLIENT_ID,
  loadConsoleUsers,
  startConsoleIssuer,
  type LocalConsoleUser,
} from './console-issuer.js';
import {
  dropTables,
  ensureBuckets,
  ensureQueues,
  ensureStreamFailuresQueue,
  ensureSesEventTopic,
  ensureSesSending,
  ensureTables,
  purgeQueues,
  type QueueUrls,
} from './resources.js';
import { startDynamoDbLocal } from './dynamodb-local.js';
import { firstAnswer, httpGet } from './http-get.js';
import { portProblem } from './port-check.js';
import { startSesGateway } from './ses-gateway.js';
import {
  AWS_SERVICES,
  baseUrl,
  localAwsEnv,
  offersSesV2,
  readStackSettings,
  regionPort,
  type RegionRole,
  useSesStandIn,
  type ExternalAws,
  type StackSettings,
} from './settings.js';

/**
 * `npm start`: the whole service on one machine. DynamoDB Local (the real AWS jar), fauxqs
 * for SQS and S3, aws-ses-v2-local for SES with its page of sent mail, then one process per
 * regional API (default on $PORT, au on $PORT+1, eu on $PORT+2) with its queue pollers.
 * Ctrl-C or SIGTERM stops every child process; a missing Java or a busy port is explained
 * in one line.
 *
 * With `CDP_AWS_ENDPOINT=external` no emulator is started: the tables, queues, buckets,
 * topics and SES identities are made on the endpoint the environment names (LocalStack,
 * `AWS_ENDPOINT_URL`), and only the APIs and pollers, the stand-ins of the Lambda functions,
 * run here. `CDP_EPHEMERAL=1` there empties the tables and queues of earlier runs first.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const children: { name: string; process: ChildProcess }[] = [];
const servers: { close: () => Promise<unknown> }[] = [];
let stopping = false;

class StartupError extends Error {}

async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    const exits = children
      .filter(({ process: child }) => child.exitCode === null && child.signalCode === null)
      .map(
        ({ process: child }) =>
          new Promise<void>((done) => {
            child.once('exit', () => {
              done();
            });
            child.kill('SIGTERM');
          }),
      );
    const timeout = new Promise<void>((done) => setTimeout(done, 5000).unref());
    await Promise.race([Promise.all(exits), timeout]);
    for (const { process: child } of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    await Promise.allSettled(servers.map((server) => server.close()));
  }
  process.exit(code);
}

function checkJava(): void {
  const result = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (result.error || result.status !== 0) {
    throw new StartupError(
      'Java 17 or later is needed to run DynamoDB Local, and `java` was not found: install it ' +
        '(e.g. `apt-get install -y openjdk-17-jre-headless`) and run npm start again.',
    );
  }
}

async function checkPortFree(port: number, variable: string): Promise<void> {
  const problem = await portProblem(port, variable);
  if (problem) throw new StartupError(problem);
}

function loadConfiguration(settings: StackSettings): {
  configuration: ConfigurationFile;
  demoKeys?: DemoKeys;
} {
  if (!settings.seedFile) {
    const demo = demoConfiguration(settings.dataDir, settings.ephemeral);
    return { configuration: parseConfigurationFile(demo.configuration), demoKeys: demo.keys };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(settings.seedFile, 'utf8'));
  } catch (error) {
    throw new StartupError(
      `CDP_SEED_FILE ${settings.seedFile} cannot be read as JSON: ${(error as Error).message}`,
    );
  }
  try {
    return { configuration: parseConfigurationFile(raw) };
  } catch (error) {
    if (error instanceof CdpError) {
      throw new StartupError(`CDP_SEED_FILE ${settings.seedFile}: ${error.message}`);
    }
    throw error;
  }
}

function watch(name: string, child: ChildProcess): void {
  children.push({ name, process: child });
  child.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(`cdp: ${name} stopped unexpectedly (${signal ?? `exit code ${code ?? '?'}`}).`);
    void shutdown(1);
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (stopping) return;
    if (await check().catch(() => false)) return;
    await new Promise((done) => setTimeout(done, 200));
  }
  throw new StartupError(`${what} did not become ready within ${timeoutMs / 1000} seconds.`);
}

/**
 * External mode fails at once, naming the variable, when nothing listens at an endpoint
 * (rather than after the SDK's timeouts on the first table). Any HTTP answer will do.
 */
async function checkExternalEndpoints(external: ExternalAws): Promise<void> {
  const variables = new Map<string, string[]>();
  for (const service of AWS_SERVICES) {
    const url = external.endpoints[service];
    variables.set(url, [...(variables.get(url) ?? []), service]);
  }
  for (const [url, services] of variables) {
    try {
      await firstAnswer(url);
    } catch (error) {
      const cause = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new StartupError(
        `CDP_AWS_ENDPOINT=external, but nothing answers at ${url} (${cause}), the endpoint of ` +
          `${services.join(', ')}: start LocalStack (\`localstack start\`) or set AWS_ENDPOINT_URL ` +
          `(or AWS_ENDPOINT_URL_<SERVICE>) to where it listens.`,
      );
    }
  }
}

/**
 * SES v2 for an external endpoint: the endpoint's own when `AWS_ENDPOINT_URL_SESV2` names one
 * or LocalStack lists `sesv2`; else (LocalStack's free edition has SES v1 only) the project's
 * SES stand-in, run here on `$SES_PORT` and publishing SES's events to the endpoint's SNS.
 */
async function chooseExternalSes(settings: StackSettings, external: ExternalAws): Promise<void> {
  if (external.sesv2Named) return;
  const health = await httpGet(`${external.endpoints.SESV2}/_localstack/health`, 3_000).catch(
    () => undefined,
  );
  if (offersSesV2(health)) return;
  await checkPortFree(settings.sesPort, 'SES_PORT');
  useSesStandIn(settings);
}

async function startDynamoDb(settings: StackSettings): Promise<DynamoDBClient> {
  const db = createDynamoDbClient();
  const ready = async () => {
    await db.send(new ListTablesCommand({ Limit: 1 }));
    return true;
  };
  if (settings.skipEmulators.has('dynamodb')) {
    await waitFor(`DynamoDB Local on port ${settings.dynamodbPort} (CDP_SKIP_EMULATORS)`, ready);
    return db;
  }
  const path = settings.ephemeral ? null : join(settings.dataDir, 'dynamodb');
  if (path) mkdirSync(path, { recursive: true });
  const child = startDynamoDbLocal({ path, port: settings.dynamodbPort, stdio: 'pipe' });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-2000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-2000)));
  child.once('exit', () => {
    if (!stopping && output.trim()) console.error(output.trim().split('\n').slice(-5).join('\n'));
  });
  watch('DynamoDB Local', child);
  await waitFor('DynamoDB Local', ready);
  return db;
}

async function startFauxqs(settings: StackSettings): Promise<void> {
  if (settings.skipEmulators.has('sqs')) {
    const sqs = createSqsClient();
    await waitFor(`fauxqs on port ${settings.sqsPort} (CDP_SKIP_EMULATORS)`, async () => {
      await sqs.send(new ListQueuesCommand({ MaxResults: 1 }));
      return true;
    });
    return;
  }
  const app = buildFauxqs({ logger: false });
  await app.listen({ port: settings.sqsPort, host: settings.host });
  servers.push({ close: () => app.close() });
}

/**
 * aws-ses-v2-local behind the gateway that keeps raw messages and publishes SES's sending
 * events to each region's topic (configuration set `cdp-<region>`), as on AWS.
 */
async function startSes(
  settings: StackSettings,
  sns: SNSClient,
  topics: Map<string, string>,
): Promise<void> {
  const gateway = await startSesGateway({
    host: settings.host,
    port: settings.sesPort,
    sns,
    topics,
  });
  servers.push({ close: () => gateway.close() });
}

/**
 * The domains a region's emails may be sent from: its instances' sending domains and the
 * fallback domain (`EMAIL_FALLBACK_DOMAIN`) for the other From addresses.
 */
function sendingDomains(configuration: ConfigurationFile, region: Region): string[] {
  const fallback = EmailApiEnv.shape.EMAIL_FALLBACK_DOMAIN.parse(process.env.EMAIL_FALLBACK_DOMAIN);
  const domains = configuration.instances
    .filter((instance) => instance.region === region)
    .flatMap((instance) => instance.sending_domains);
  return [...new Set([...domains, fallback].map((domain) => domain.toLowerCase()))];
}

/** A region's queues: the workers' queues, and where stream workers describe failed batches. */
interface RegionQueues {
  queues: QueueUrls;
  streamFailures: string;
}

function regionEnv(
  settings: StackSettings,
  region: Region,
  { queues, streamFailures }: RegionQueues,
) {
  const env: Record<string, string> = {
    CDP_REGION: region,
    // The console's sign-in: the local issuer stands in for the region's Cognito user pool.
    CONSOLE_ISSUER: consoleIssuerUrl(settings),
    CONSOLE_CLIENT_ID: CONSOLE_CLIENT_ID,
    PORT: String(regionPort(settings, region)),
    BASE_URL_DEFAULT: baseUrl(settings, 'default'),
    BASE_URL_AU: baseUrl(settings, 'au'),
    BASE_URL_EU: baseUrl(settings, 'eu'),
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'WARN',
    GEOCODER: 'offline',
    // SES events of this region's emails come back through its configuration set.
    SES_CONFIGURATION_SET: sesConfigurationSet(region),
    // Webhooks may deliver to http://127.0.0.1 here, and only here (docs/webhooks.md).
    CDP_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    ...localAwsEnv(settings),
  };
  for (const table of TABLES) env[tableVariable(table.name)] = tableName(region, table.name);
  for (const bucket of BUCKETS)
    env[bucketVariable(bucket.name)] = localBucketName(region, bucket.name);
  for (const [queue, url] of Object.entries(queues)) {
    env[queueUrlVariable(queue as keyof QueueUrls)] = url;
  }
  env.STREAM_FAILURES_QUEUE_URL = streamFailures;
  // Stream positions outlive a restart with the data (an external endpoint made ephemeral
  // starts its streams from nothing, as its tables).
  if (!settings.ephemeral) {
    env.CDP_STREAM_CHECKPOINTS = join(settings.dataDir, 'streams', `${region}.json`);
  }
  // The email worker reads the depth of the SES events' dead-letter queue (deliver.ts), the
  // console's overview every dead-letter queue's: each URL is its queue's, with its name.
  for (const [queue, url] of Object.entries(queues)) {
    env[deadLetterUrlVariable(queue as keyof QueueUrls)] = url.replace(
      /[^/]+$/,
      queueName(region, queue as keyof QueueUrls, true),
    );
  }
  return env;
}

const consoleIssuerUrl = (settings: StackSettings) =>
  `http://${settings.host}:${settings.consoleIssuerPort}`;

/** Where each region's console is served (its sign-in returns there). */
const consoleUrls = (settings: StackSettings) =>
  settings.regions.map((region) => `${baseUrl(settings, region)}/console/`);

async function startIssuer(settings: StackSettings): Promise<LocalConsoleUser[]> {
  const users = loadConsoleUsers(settings.dataDir, settings.ephemeral);
  const issuer = await startConsoleIssuer({
    host: settings.host,
    port: settings.consoleIssuerPort,
    consoleUrls: consoleUrls(settings),
    users,
    dataDir: settings.dataDir,
    ephemeral: settings.ephemeral,
  });
  servers.push(issuer);
  return users;
}

async function startRegion(settings: StackSettings, region: Region, queues: RegionQueues) {
  const spawnRole = (role: RegionRole) =>
    spawn(
      process.execPath,
      [
        // CDP_CPU_PROFILE=<dir>: each regional process writes a V8 CPU profile there on exit.
        ...(process.env.CDP_CPU_PROFILE
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.CDP_CPU_PROFILE}`]
          : []),
        '--import',
        'tsx',
        join(root, 'local', 'region-server.ts'),
      ],
      {
        env: { ...process.env, ...regionEnv(settings, region, queues), CDP_REGION_ROLE: role },
        stdio: 'inherit',
      },
    );
  // CDP_SPLIT_WORKERS=1: the region's queue workers and stream workers in processes of their
  // own, beside its API.
  if (settings.splitWorkers) {
    watch(`the ${region} API`, spawnRole('api'));
    watch(`the ${region} queue workers`, spawnRole('queue-workers'));
    watch(`the ${region} stream workers`, spawnRole('stream-workers'));
  } else {
    watch(`the ${region} API`, spawnRole('all'));
  }
  await waitFor(`The ${region} API`, async () => {
    const response = await fetch(`${baseUrl(settings, region)}/health`);
    return response.ok;
  });
}

function serviceLines(settings: StackSettings): string[] {
  if (settings.external) {
    const { endpoints, sesStandIn } = settings.external;
    const standIn = (service: string) =>
      sesStandIn && service === 'SESV2'
        ? "  (the project's SES stand-in: the endpoint has no SES v2; sent mail at /)"
        : '';
    return [
      `  AWS services (CDP_AWS_ENDPOINT=external; ${sesStandIn ? 'SES v2 alone' : 'nothing'} emulated here):`,
      ...AWS_SERVICES.map(
        (service) => `    ${service.padEnd(9)} ${endpoints[service]}${standIn(service)}`,
      ),
      settings.ephemeral
        ? '  Data: emptied at start (CDP_EPHEMERAL=1), then kept by that endpoint'
        : '  Data: kept by that endpoint',
    ];
  }
  return [
    `  Sent mail (SES stand-in): http://${settings.host}:${settings.sesPort}/  (JSON: /store)`,
    `  DynamoDB Local:           http://${settings.host}:${settings.dynamodbPort}`,
    `  SQS and S3 (fauxqs):      http://${settings.host}:${settings.sqsPort}`,
    `  Data: ${settings.ephemeral ? 'in memory (CDP_EPHEMERAL=1)' : relative(process.cwd(), settings.dataDir) || '.'}`,
    ...(settings.skipEmulators.size > 0
      ? [`  Not started here (CDP_SKIP_EMULATORS): ${[...settings.skipEmulators].join(', ')}`]
      : []),
  ];
}

function printBanner(
  settings: StackSettings,
  configuration: ConfigurationFile,
  users: LocalConsoleUser[],
  keys?: DemoKeys,
) {
  const lines = ['', 'CDP API is running (Ctrl-C stops it).', ''];
  for (const region of settings.regions) {
    lines.push(`  ${region.padEnd(8)} ${baseUrl(settings, region)}`);
  }
  lines.push(
    '',
    ...serviceLines(settings),
    ...(settings.faults ? [`  DynamoDB faults injected (CDP_FAULTS): ${settings.faults}`] : []),
    // For killing one part on purpose (the process-fault tests) or finding a stuck one.
    `  Processes: ${[
      `stack ${process.pid}`,
      ...children.map(({ name, process: child }) => `${name} ${child.pid ?? '?'}`),
    ].join(', ')}`,
    '',
  );
  if (keys) {
    lines.push('Demo API keys (send as X-Api-Key):');
    for (const region of settings.regions) lines.push(`  ${region.padEnd(8)} ${keys[region]}`);
  } else {
    const ids = configuration.instances.map((i) => `${i.id} (${i.region})`).join(', ');
    lines.push(`Instances from ${settings.seedFile ?? ''}: ${ids || 'none'}`);
  }
  lines.push('', `Console: ${consoleUrls(settings).join('  ')}`);
  lines.push(`Console sign-in (issuer ${consoleIssuerUrl(settings)}):`);
  for (const user of users) {
    lines.push(`  ${user.email}  ${user.password}  ${user.groups.join(', ') || '(no groups)'}`);
  }
  lines.push(
    '',
    'Try: curl -s -X POST -H "X-Api-Key: <key>" -H "Content-Type: application/json" \\',
  );
  lines.push(`       -d '{"limit": 10}' ${baseUrl(settings, 'default')}/v1/person/get`, '');
  console.log(lines.join('\n'));
}

async function main(): Promise<void> {
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  const settings = readStackSettings();
  const { external } = settings;
  if (!external) checkJava();
  const ports: (readonly [number, string])[] = settings.regions.map((region) => [
    regionPort(settings, region),
    'PORT',
  ]);
  if (!external) {
    // An emulator run by someone else (CDP_SKIP_EMULATORS) is meant to be on its port.
    if (!settings.skipEmulators.has('dynamodb'))
      ports.push([settings.dynamodbPort, 'DYNAMODB_PORT']);
    if (!settings.skipEmulators.has('sqs')) ports.push([settings.sqsPort, 'SQS_PORT']);
    ports.push([settings.sesPort, 'SES_PORT']);
  }
  ports.push([settings.consoleIssuerPort, 'CONSOLE_ISSUER_PORT']);
  for (const [port, variable] of ports) await checkPortFree(port, variable);
  const { configuration, demoKeys } = loadConfiguration(settings);
  const away = configuration.instances.filter((i) => !settings.regions.includes(i.region));
  if (settings.seedFile && away.length > 0) {
    throw new StartupError(
      `CDP_REGIONS=${settings.regions.join(',')} leaves out the region of ${away.map((i) => `${i.id} (${i.region})`).join(', ')}`,
    );
  }
  if (settings.faults) {
    try {
      parseFaults(settings.faults);
    } catch (error) {
      throw new StartupError((error as Error).message);
    }
  }
  Object.assign(process.env, localAwsEnv(settings));

  let dynamodb: DynamoDBClient;
  if (external) {
    await checkExternalEndpoints(external);
    await chooseExternalSes(settings, external);
    Object.assign(process.env, localAwsEnv(settings));
    dynamodb = createDynamoDbClient();
  } else {
    dynamodb = await startDynamoDb(settings);
    await startFauxqs(settings);
  }

  const sqs = createSqsClient();
  const sns = createSnsClient();
  const s3 = createS3Client();
  const ses = createSesClient();
  // The stack's own setup never meets CDP_FAULTS: they are for the API's and the workers'
  // calls (the regional processes), so that a fully throttled store can still be started.
  const documents = createDocumentClient(dynamodb, NO_FAULTS);
  const queues = new Map<Region, RegionQueues>();
  const sesTopics = new Map<string, string>();
  // On an external endpoint "ephemeral" is forgetting what earlier runs left there.
  const forget = external !== undefined && settings.ephemeral;
  for (const region of settings.regions) {
    if (forget) await dropTables(dynamodb, region);
    await ensureTables(dynamodb, region);
    queues.set(region, {
      queues: await ensureQueues(sqs, region),
      streamFailures: await ensureStreamFailuresQueue(sqs, region),
    });
    if (forget) await purgeQueues(sqs, region);
    const topic = await ensureSesEventTopic(sns, sqs, region);
    sesTopics.set(sesConfigurationSet(region), topic);
    await ensureBuckets(s3, region);
    // The local SES gateway sends from any address and maps configuration sets to topics
    // itself (`sesTopics`); an external SES needs the identities and the configuration set.
    if (external && !external.sesStandIn) {
      await ensureSesSending(ses, region, topic, sendingDomains(configuration, region));
    }
    const store = new DynamoConfigStore(
      documents,
      tableName(region, 'config'),
      new LocalKeyWrapper(),
    );
    const people = new DynamoPeopleStore(documents, {
      people: tableName(region, 'people'),
      activities: tableName(region, 'activities'),
      organizations: tableName(region, 'organizations'),
    });
    const audiences = configAudienceApplier(
      documents,
      sqs,
      { config: tableName(region, 'config'), audiences: tableName(region, 'audiences') },
      (queues.get(region) as RegionQueues).queues['audience-jobs'],
    );
    // No function of this stack runs yet: nothing can hold the previous configuration.
    await applyConfiguration(configuration, region, store, {
      keyClaims: people,
      settleMs: 0,
      audiences,
    });
  }
  if (!external || external.sesStandIn) await startSes(settings, sns, sesTopics);
  const consoleUsers = await startIssuer(settings);
  await buildConsole();
  await Promise.all(
    settings.regions.map((region) =>
      startRegion(settings, region, queues.get(region) as RegionQueues),
    ),
  );
  if (!stopping) printBanner(settings, configuration, consoleUsers, demoKeys);
}

main().catch((error: unknown) => {
  if (error instanceof StartupError) console.error(`cdp: ${error.message}`);
  else console.error('cdp: the local stack could not start:', error);
  void shutdown(1);
});
