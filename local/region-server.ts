import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  createDynamoDbClient,
  createSqsClient,
  withoutCallLogging,
} from '../shared/adapters/aws-clients.js';
import { injectedFaults } from '../shared/adapters/dynamo-faults.js';
import { onTableWrites } from '../shared/adapters/table-writes.js';
import type { HttpHandler } from '../shared/http/api-handler.js';
import { isRegion } from '../shared/domain/regions.js';
import { queueUrlVariable, tableVariable } from '../shared/resources.js';
import { FALLBACK_FUNCTION, ROUTES, type RouteDefinition } from '../shared/routes.js';
import { keepsStreamRecord, STREAM_WORKERS, WORKERS } from '../shared/workers.js';
import { createRegionServer } from './http-adapter.js';
import { consoleSite } from './console-site.js';
import { regionRoleFrom, usesExternalAws, type RegionRole } from './settings.js';
import { recheckAllJob } from '../shared/worker/audience-runtime.js';
import { startQueuePoller, type SqsHandler } from './queue-poller.js';
import { startStreamPoller, type StreamHandler } from './stream-poller.js';

/**
 * One regional deployment of the local stack, in its own process so that, as on AWS, each
 * region's functions see only their own environment (tables, queues, addresses). Started by
 * `local/start.ts`; it loads every function of the routes and workers tables, serves the
 * HTTP API on `PORT` and polls the worker queues.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

async function loadHandler<T>(fn: string): Promise<T> {
  const module = (await import(
    pathToFileURL(resolve(root, 'functions', fn, 'handler.ts')).href
  )) as { handler?: T };
  if (!module.handler) throw new Error(`functions/${fn}/handler.ts exports no handler`);
  return module.handler;
}

async function main(): Promise<void> {
  const region = process.env.CDP_REGION;
  const port = Number(process.env.PORT);
  // What this process runs (local/settings.ts, `REGION_ROLES`): with `CDP_SPLIT_WORKERS=1` the
  // API, the queue workers and the stream workers run apart, as on AWS, so a burst of stream
  // records handled does not hold up the API's requests or the ingest worker's batches.
  const role = regionRoleFrom(process.env.CDP_REGION_ROLE);
  const serves = role === 'all' || role === 'api';
  if (!isRegion(region) || (serves && !Number.isInteger(port))) {
    throw new Error('region-server needs CDP_REGION and PORT (it is started by local/start.ts)');
  }
  const pollers: { stop: () => Promise<void> }[] = [];
  if (role !== 'api') await startWorkers(pollers, role);
  const server = serves ? await serve(port) : undefined;

  const stop = () => {
    if (process.env.CDP_FAULTS) {
      console.log(
        `cdp: DynamoDB faults injected in the ${region} region${role === 'all' ? '' : ` (${role})`}: ${JSON.stringify(injectedFaults())}`,
      );
    }
    server?.close();
    server?.closeAllConnections();
    // The pollers finish what they hold; if the emulators went first (the stack's whole
    // process group stopped at once), their calls would retry for minutes: ten seconds at most.
    setTimeout(() => process.exit(0), 10_000).unref();
    void Promise.all(pollers.map((poller) => poller.stop())).finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** Every function of the routes table, served on `port`. */
async function serve(port: number) {
  const routes = new Map<RouteDefinition, HttpHandler>();
  for (const route of ROUTES) routes.set(route, await loadHandler<HttpHandler>(route.function));
  const fallback = await loadHandler<HttpHandler>(FALLBACK_FUNCTION.function);
  const { CONSOLE_ISSUER, CONSOLE_CLIENT_ID, CDP_REGION } = process.env;
  const site =
    CONSOLE_ISSUER && CONSOLE_CLIENT_ID && CDP_REGION
      ? consoleSite({ issuer: CONSOLE_ISSUER, clientId: CONSOLE_CLIENT_ID, region: CDP_REGION })
      : undefined;
  const server = createRegionServer({ routes, fallback, ...(site ? { site } : {}) });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolveListen);
  });
  return server;
}

/** The queue and stream workers with their pollers, and the daily re-evaluation. */
async function startWorkers(
  pollers: { stop: () => Promise<void> }[],
  role: RegionRole,
): Promise<void> {
  const sqs = createSqsClient();
  const queues = role !== 'stream-workers';
  // An idle poller's long poll: Lambda's 20 s against an external endpoint (LocalStack, whose
  // one gateway spent a sixth of a core answering sixty-odd pollers' 5 s polls while nothing
  // happened); 5 s against fauxqs, where a poll cut by a restart keeps waiting (queue-poller.ts).
  const external = usesExternalAws();
  const queueWaitSeconds = external ? 20 : 5;
  for (const worker of queues ? WORKERS : []) {
    const queueUrl = process.env[queueUrlVariable(worker.queue)];
    if (!queueUrl) throw new Error(`No ${queueUrlVariable(worker.queue)} for ${worker.function}`);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    const handler = await loadHandler<SqsHandler>(worker.function);
    // As many pollers as the event source's maximum concurrency: batches run that many at once.
    for (let n = 0; n < worker.maxConcurrency; n += 1) {
      pollers.push(
        startQueuePoller({
          sqs,
          queueUrl,
          queueArn: Attributes?.QueueArn ?? queueUrl,
          handler,
          functionName: worker.function,
          batchSize: worker.batchSize,
          timeoutSeconds: worker.timeoutSeconds,
          waitTimeSeconds: queueWaitSeconds,
        }),
      );
    }
  }

  // The stream workers, each fed by a poller of its table's stream (the Lambda event source).
  const db = createDynamoDbClient();
  const streams = withoutCallLogging(new DynamoDBStreamsClient({}));
  const failures = process.env.STREAM_FAILURES_QUEUE_URL;
  // With the API and every worker in this process (not CDP_SPLIT_WORKERS), the writes that
  // feed the streams are this process's own: each nudges the pollers of the tables it wrote,
  // which read at once. An idle shard then only waits for writes from elsewhere (the admin
  // CLI, a test's own client): up to 5 s, or 10 s against an external endpoint (LocalStack,
  // where each read costs its gateway ~9 ms of a core and kinesis-mock ~24 ms; at 2 s the
  // idle reads were a fifth of its calls in the integration suite). Split, the pollers hear
  // of no write: a second (2 s on LocalStack), as before.
  const nudged = role === 'all';
  const maxIdleMs = Number(
    process.env.CDP_STREAM_MAX_IDLE_MS ??
      (nudged ? (external ? 10_000 : 5_000) : external ? 2_000 : 1_000),
  );
  const pollersOf = new Map<string, { nudge: () => void }[]>();
  if (nudged) {
    onTableWrites((tables) => {
      for (const table of tables) for (const poller of pollersOf.get(table) ?? []) poller.nudge();
    });
  }
  for (const worker of role === 'queue-workers' ? [] : STREAM_WORKERS) {
    const tableName = process.env[tableVariable(worker.table)];
    if (!tableName || !failures) {
      throw new Error(
        `No ${tableVariable(worker.table)} or STREAM_FAILURES_QUEUE_URL for ${worker.function}`,
      );
    }
    const checkpoints = process.env.CDP_STREAM_CHECKPOINTS;
    const poller = startStreamPoller({
      db,
      streams,
      tableName,
      handler: await loadHandler<StreamHandler>(worker.function),
      functionName: worker.function,
      batchSize: worker.batchSize,
      parallelization: worker.parallelization,
      // An idle shard is read less and less often, down to `maxIdleMs` (above: twenty-odd
      // pollers of three regions would otherwise keep the endpoint busy doing nothing; at 1 s
      // the idle stack kept 0.38 of a core busy in LocalStack's gateway and 0.29 in
      // kinesis-mock); `CDP_STREAM_MAX_IDLE_MS` changes it (the benchmarks'
      // `BENCH_STREAM_MAX_IDLE_MS`).
      maxIdleMs,
      // Every stream is described again once a minute while all its shards are read: a
      // shard that closes wakes the poller at once, this only catches what nothing told.
      describeEveryMs: 60_000,
      // A shard with records is read four times a second, as Lambda polls (not behind).
      pollEveryMs: Number(process.env.CDP_STREAM_POLL_MS ?? 250),
      timeoutSeconds: worker.timeoutSeconds,
      maxRetryAttempts: worker.maxRetryAttempts,
      keep: (record) => keepsStreamRecord(worker, record),
      onFailure: async (failure) => {
        console.error(`${worker.function} gave up on a stream batch`, failure);
        await sqs.send(
          new SendMessageCommand({ QueueUrl: failures, MessageBody: JSON.stringify(failure) }),
        );
      },
      ...(checkpoints
        ? { checkpointFile: checkpoints.replace(/\.json$/, `-${worker.function}.json`) }
        : {}),
    });
    pollers.push(poller);
    pollersOf.set(tableName, [...(pollersOf.get(tableName) ?? []), poller]);
  }

  if (!queues) return;
  // The daily re-evaluation of audiences (EventBridge Scheduler on AWS): at start, then daily.
  const audiencesQueue = process.env[queueUrlVariable('audience-jobs')];
  const recheck = async () => {
    if (!audiencesQueue) return;
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: audiencesQueue,
        MessageBody: JSON.stringify(recheckAllJob()),
      }),
    );
  };
  const queueRecheck = () => {
    recheck().catch((error: unknown) => {
      console.error('Queueing the daily re-evaluation failed', error);
    });
  };
  queueRecheck();
  const daily = setInterval(queueRecheck, 86_400_000);
  daily.unref();
}

main().catch((error: unknown) => {
  console.error(`region server (${process.env.CDP_REGION ?? '?'}):`, error);
  process.exit(1);
});
