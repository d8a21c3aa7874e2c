import { describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import {
  startStreamPoller,
  toLambdaRecord,
  type StreamFailure,
} from '../../local/stream-poller.js';
import { createKeyedTable, stackAwsEnv, stackEndpoint } from './stack.js';

/**
 * The local DynamoDB Streams event source against the test stack's DynamoDB Local: every
 * change reaches the worker once in order, its filter keeps only the items it names, a failed
 * record is retried from where it failed (the records before it are not handed again), a
 * batch that keeps failing is described to `onFailure` and skipped, and a poller started again
 * with the same checkpoint file goes on after the last change it handled.
 *
 * "In order" is the stream's order. DynamoDB Local's stream (and AWS's) has one item's changes
 * in the order they were made; LocalStack's (4.x, its default DynamoDB provider) forwards each
 * write to its stream from a pool of threads, so that a change can land before one made earlier
 * (seen: an item's 8th write ahead of its 7th, though the 7th was answered before the 8th was
 * sent). The poller can only keep the order it reads, so each test compares what the handler
 * got with the stream itself, read whole afterwards.
 */
const client = {
  region: stackAwsEnv().AWS_REGION,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
};
const db = new DynamoDBClient({ ...client, endpoint: stackEndpoint('DYNAMODB') });
const streams = new DynamoDBStreamsClient({ ...client, endpoint: stackEndpoint('DYNAMODB') });

/** LocalStack's streams, on a machine busy with the rest of the suite, can take a minute. */
const PATIENCE_MS = process.env.CDP_AWS_ENDPOINT === 'external' ? 90_000 : 20_000;

/** The table's stream: its ARN and description (none while the table has no stream yet). */
async function streamOf(table: string) {
  const { Table } = await db.send(new DescribeTableCommand({ TableName: table }));
  const arn = Table?.LatestStreamArn;
  if (!arn) return undefined;
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: arn }));
  return { arn, status: StreamDescription?.StreamStatus, shards: StreamDescription?.Shards ?? [] };
}

async function streamTable(): Promise<string> {
  const name = `stream-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  await createKeyedTable(db, name, { stream: true });
  // Its stream takes writes once it has a shard (LocalStack makes it after the table, and
  // drops the changes made before).
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const stream = await streamOf(name);
    if (stream?.status === 'ENABLED' && stream.shards.length > 0) return name;
    if (Date.now() > deadline) throw new Error(`the stream of ${name} is not ready`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Every record of the table's stream, as Lambda would get it, in the stream's order. */
async function wholeStream(table: string): Promise<DynamoDBRecord[]> {
  const { arn = '', shards = [] } = (await streamOf(table)) ?? {};
  const records: DynamoDBRecord[] = [];
  for (const shard of shards) {
    let position = (
      await streams.send(
        new GetShardIteratorCommand({
          StreamArn: arn,
          ShardId: shard.ShardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      )
    ).ShardIterator;
    while (position) {
      const answer = await streams.send(new GetRecordsCommand({ ShardIterator: position }));
      const page = answer.Records ?? [];
      if (page.length === 0) break;
      records.push(...page.map((record) => toLambdaRecord(record, arn, 'local')));
      position = answer.NextShardIterator;
    }
  }
  return records;
}

const put = (table: string, pk: string, sk: string, n: number) =>
  db.send(
    new PutItemCommand({
      TableName: table,
      Item: { pk: { S: pk }, sk: { S: sk }, n: { N: String(n) } },
    }),
  );

async function until(check: () => boolean, timeoutMs = PATIENCE_MS) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const describeRecord = (record: DynamoDBRecord) =>
  `${record.eventName ?? ''} ${record.dynamodb?.Keys?.pk?.S ?? ''} ${record.dynamodb?.NewImage?.n?.N ?? '-'}`;

describe('the local DynamoDB Streams event source', () => {
  it('hands every kept change once, in order, retries from the failed record, and resumes from its checkpoint', async () => {
    const table = await streamTable();
    const checkpointFile = join(mkdtempSync(join(tmpdir(), 'cdp-streams-')), 'positions.json');
    const seen: string[] = [];
    let failOnce = true;
    const options = {
      db,
      streams,
      tableName: table,
      functionName: 'test-stream-worker',
      batchSize: 100,
      timeoutSeconds: 10,
      maxRetryAttempts: 3,
      idleMs: 20,
      retryBaseMs: 20,
      checkpointFile,
      keep: (record: DynamoDBRecord) => record.dynamodb?.Keys?.sk?.S === 'P',
      onFailure: () => Promise.resolve(),
      handler: (event: { Records: DynamoDBRecord[] }) => {
        const failures: { itemIdentifier: string }[] = [];
        for (const record of event.Records) {
          // The second person's first change fails once: it and what follows come again.
          if (failOnce && record.dynamodb?.Keys?.pk?.S === 'b' && failures.length === 0) {
            failOnce = false;
            failures.push({ itemIdentifier: record.dynamodb.SequenceNumber ?? '' });
          }
          if (failures.length === 0) seen.push(describeRecord(record));
        }
        return Promise.resolve({ batchItemFailures: failures });
      },
    };
    const first = startStreamPoller(options);
    try {
      await put(table, 'a', 'P', 1);
      await put(table, 'a', 'X', 1); // not kept: another kind of item
      await put(table, 'b', 'P', 1);
      await put(table, 'a', 'P', 2);
      await db.send(
        new DeleteItemCommand({ TableName: table, Key: { pk: { S: 'b' }, sk: { S: 'P' } } }),
      );
      await until(() => seen.length >= 4);
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await first.stop();
    }
    const written = ['INSERT a 1', 'INSERT b 1', 'MODIFY a 2', 'REMOVE b -'];
    const streamed = (await wholeStream(table)).filter(options.keep).map(describeRecord);
    expect([...streamed].sort()).toEqual([...written].sort());
    expect(seen).toEqual(streamed);

    // Changes made while no poller runs are handed to the next one, and nothing before them.
    await put(table, 'c', 'P', 1);
    const second = startStreamPoller(options);
    try {
      await until(() => seen.length >= 5);
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await second.stop();
    }
    expect(seen.slice(4)).toEqual(['INSERT c 1']);
    expect((await wholeStream(table)).filter(options.keep).map(describeRecord)).toEqual([
      ...streamed,
      'INSERT c 1',
    ]);
  });

  it('with a parallelization factor, runs batches of different keys at once and keeps each key in order', async () => {
    const table = await streamTable();
    const seen = new Map<string, number[]>();
    let inFlight = 0;
    let mostInFlight = 0;
    let failOnce = true;
    const poller = startStreamPoller({
      db,
      streams,
      tableName: table,
      functionName: 'test-parallel-worker',
      batchSize: 5,
      parallelization: 4,
      timeoutSeconds: 10,
      maxRetryAttempts: 3,
      idleMs: 20,
      retryBaseMs: 20,
      onFailure: () => Promise.resolve(),
      handler: async (event) => {
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 30));
        inFlight -= 1;
        const failures: { itemIdentifier: string }[] = [];
        for (const record of event.Records) {
          const pk = record.dynamodb?.Keys?.pk?.S ?? '';
          // One change of key k3 fails once: it and what follows it are handed again.
          if (failOnce && pk === 'k3' && failures.length === 0) {
            failOnce = false;
            failures.push({ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' });
          }
          if (failures.length > 0) break;
          seen.set(pk, [...(seen.get(pk) ?? []), Number(record.dynamodb?.NewImage?.n?.N)]);
        }
        return { batchItemFailures: failures };
      },
    });
    try {
      // 8 keys, 10 changes each, interleaved, written before the poller reads them.
      for (let n = 1; n <= 10; n += 1) {
        await Promise.all(Array.from({ length: 8 }, (_, k) => put(table, `k${k}`, 'P', n)));
      }
      await until(
        () => seen.size === 8 && [...seen.values()].every((ns) => new Set(ns).size === 10),
      );
    } finally {
      await poller.stop();
    }
    expect(mostInFlight).toBeGreaterThan(1);
    const streamed = new Map<string, number[]>();
    for (const record of await wholeStream(table)) {
      const pk = record.dynamodb?.Keys?.pk?.S ?? '';
      streamed.set(pk, [...(streamed.get(pk) ?? []), Number(record.dynamodb?.NewImage?.n?.N)]);
    }
    expect(seen.size).toBe(8);
    for (const [pk, ns] of seen) {
      // Every change of the key, in the stream's order; a change handed again after a failure
      // comes after the ones before it.
      const inStream = streamed.get(pk) ?? [];
      expect([...inStream].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 10 }, (_, i) => i + 1),
      );
      const firsts = ns.filter((n, i) => ns.indexOf(n) === i);
      expect({ pk, firsts }).toEqual({ pk, firsts: inStream });
      const positions = ns.map((n) => inStream.indexOf(n));
      for (let i = 1; i < positions.length; i += 1) {
        if ((positions[i] ?? 0) < (positions[i - 1] ?? 0)) {
          // Only a redelivery from an earlier point goes back, and it goes on in order.
          const rest = positions.slice(i);
          expect(rest).toEqual([...rest].sort((a, b) => a - b));
        }
      }
    }
  });

  it('says when it reads the stream far behind its writes (iterator age)', async () => {
    const table = await streamTable();
    await put(table, 'old-1', 'P', 1);
    await put(table, 'old-2', 'P', 1);
    // The records are seconds old when the poller first reads them.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const said = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const seen: string[] = [];
    const poller = startStreamPoller({
      db,
      streams,
      tableName: table,
      functionName: 'test-late-worker',
      batchSize: 100,
      timeoutSeconds: 10,
      maxRetryAttempts: 1,
      idleMs: 20,
      reportAgeOverMs: 1_500,
      onFailure: () => Promise.resolve(),
      handler: (event) => {
        seen.push(...event.Records.map(describeRecord));
        return Promise.resolve({ batchItemFailures: [] });
      },
    });
    let ages: string[];
    try {
      await until(() => seen.length >= 2);
    } finally {
      await poller.stop();
      ages = said.mock.calls
        .map(([message]) => String(message))
        .filter((message) => message.includes('iterator age'));
      said.mockRestore();
    }
    expect(ages.length).toBeGreaterThanOrEqual(1);
    for (const age of ages) {
      expect(age).toMatch(
        new RegExp(
          `^test-late-worker: ${table}'s stream is read \\d+ s behind its writes \\(iterator age\\)$`,
        ),
      );
    }
    expect(Number(/read (\d+) s/.exec(ages[0] ?? '')?.[1])).toBeGreaterThanOrEqual(2);
  });

  it('reads a shard that is not behind four times a second, as Lambda polls, not once per write', async () => {
    const table = await streamTable();
    // Reads that found records: a loaded machine's slow puts leave gaps in which the poller
    // reads an empty shard every `idleMs`, which says nothing of how often it reads a busy one.
    let reads = 0;
    const counted = {
      send: async (command: GetRecordsCommand, options?: { abortSignal?: AbortSignal }) => {
        const answer = await streams.send(command, options);
        if (command instanceof GetRecordsCommand && (answer.Records?.length ?? 0) > 0) reads += 1;
        return answer;
      },
    } as unknown as DynamoDBStreamsClient;
    const seen = new Set<string>();
    const poller = startStreamPoller({
      db,
      streams: counted,
      tableName: table,
      functionName: 'test-polled-worker',
      batchSize: 100,
      timeoutSeconds: 10,
      maxRetryAttempts: 1,
      idleMs: 20,
      onFailure: () => Promise.resolve(),
      handler: (event) => {
        for (const record of event.Records) seen.add(record.dynamodb?.Keys?.pk?.S ?? '');
        return Promise.resolve({ batchItemFailures: [] });
      },
    });
    try {
      // One write every 40 ms for two seconds: a shard that always has something new.
      const before = reads;
      const started = Date.now();
      for (let n = 0; n < 50; n += 1) {
        await put(table, `w${n}`, 'P', n);
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      const seconds = (Date.now() - started) / 1000;
      await until(() => seen.size === 50);
      // 4 reads a second, not one per write (50 or more).
      expect(reads - before).toBeLessThanOrEqual(Math.ceil(seconds * 4) + 2);
    } finally {
      await poller.stop();
    }
  });

  it('reads an idle shard at once when told of a write, however long its idle wait', async () => {
    const table = await streamTable();
    // Four minutes between reads of an idle shard: only the nudge can bring the write sooner.
    let emptyReads = 0;
    let firstIdle: () => void = () => {};
    const idle = new Promise<void>((resolve) => {
      firstIdle = resolve;
    });
    const counted = {
      send: async (command: GetRecordsCommand, options?: { abortSignal?: AbortSignal }) => {
        const answer = await streams.send(command, options);
        if (command instanceof GetRecordsCommand && (answer.Records?.length ?? 0) === 0) {
          emptyReads += 1;
          firstIdle();
        }
        return answer;
      },
    } as unknown as DynamoDBStreamsClient;
    const seen: string[] = [];
    const poller = startStreamPoller({
      db,
      streams: counted,
      tableName: table,
      functionName: 'test-nudged-worker',
      batchSize: 100,
      timeoutSeconds: 10,
      maxRetryAttempts: 1,
      idleMs: 240_000,
      maxIdleMs: 240_000,
      onFailure: () => Promise.resolve(),
      handler: (event) => {
        for (const record of event.Records) seen.push(describeRecord(record));
        return Promise.resolve({ batchItemFailures: [] });
      },
    });
    try {
      await idle;
      expect(emptyReads).toBe(1);
      await put(table, 'told', 'P', 1);
      poller.nudge();
      await until(() => seen.length > 0);
      expect(seen).toEqual(['INSERT told 1']);
    } finally {
      await poller.stop();
    }
  });

  it('describes a batch that keeps failing to onFailure and goes on after it', async () => {
    const table = await streamTable();
    const failures: StreamFailure[] = [];
    const seen: string[] = [];
    const poller = startStreamPoller({
      db,
      streams,
      tableName: table,
      functionName: 'test-failing-worker',
      batchSize: 1,
      timeoutSeconds: 10,
      maxRetryAttempts: 2,
      idleMs: 20,
      retryBaseMs: 10,
      onFailure: (failure) => {
        failures.push(failure);
        return Promise.resolve();
      },
      handler: (event) => {
        const [record] = event.Records;
        if (record?.dynamodb?.Keys?.pk?.S === 'poison') throw new Error('cannot handle this one');
        if (record) seen.push(describeRecord(record));
        return Promise.resolve({ batchItemFailures: [] });
      },
    });
    try {
      await put(table, 'poison', 'P', 1);
      await put(table, 'after', 'P', 1);
      await until(() => seen.length >= 1);
    } finally {
      await poller.stop();
    }
    expect(seen).toEqual(['INSERT after 1']);
    expect(failures).toEqual([
      expect.objectContaining({
        functionName: 'test-failing-worker',
        batchSize: 1,
        attempts: 3,
        startSequenceNumber: expect.stringMatching(/\d+/) as unknown,
      }),
    ]);
  });
});
