import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  TrimmedDataAccessException,
  type _Record as StreamRecord,
  type DynamoDBStreamsClient,
  type Shard,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';
import type {
  AttributeValue as LambdaAttributeValue,
  Context,
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
} from 'aws-lambda';
import { lambdaContext } from './http-adapter.js';

/**
 * Plays the Lambda DynamoDB Streams event source against DynamoDB Local (or LocalStack):
 * reads every shard of a table's stream in order, parents before children, hands batches of
 * the records its filter keeps to a worker handler as DynamoDB stream events, and moves on
 * past what the handler did not report as failed (`batchItemFailures`: Lambda retries from
 * the first failed record). A batch that keeps failing is retried with backoff
 * `maxRetryAttempts` times, then described to `onFailure` (as Lambda's on-failure destination
 * gets it) and skipped. Positions are kept per shard in a checkpoint file (with a data
 * directory), so a restarted stack goes on where it stopped: at least once, as on AWS.
 */
export type StreamHandler = (
  event: DynamoDBStreamEvent,
  context: Context,
) => Promise<DynamoDBBatchResponse | undefined>;

export interface StreamFailure {
  /** Lambda's on-failure record, in short: the stream, the shard and the batch's range. */
  streamArn: string;
  shardId: string;
  startSequenceNumber: string;
  endSequenceNumber: string;
  batchSize: number;
  attempts: number;
  functionName: string;
}

export interface StreamPollerOptions {
  db: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  tableName: string;
  handler: StreamHandler;
  functionName: string;
  batchSize: number;
  /**
   * Batches of one shard handled at once (Lambda's parallelization factor, 1 by default):
   * records are spread over that many lanes by their partition key, so changes of one key
   * stay in order, and each lane hands its records to the handler `batchSize` at a time.
   */
  parallelization?: number;
  timeoutSeconds: number;
  maxRetryAttempts: number;
  /** Records of which items reach the handler (Lambda's event filter); all by default. */
  keep?: (record: DynamoDBRecord) => boolean;
  onFailure(failure: StreamFailure): Promise<void>;
  /** Where shard positions are kept between runs; in memory only without. */
  checkpointFile?: string;
  /** How long to wait before reading a shard that had nothing new (ms). */
  idleMs?: number;
  /**
   * The shortest time between two reads of a shard that is not behind (ms): Lambda's event
   * source polls each shard four times a second (250 ms by default). A read that came back
   * full is followed by the next at once.
   */
  pollEveryMs?: number;
  /**
   * The longest wait of a shard that stays idle (ms): the wait doubles from `idleMs` with each
   * empty read up to this (no backoff by default; LocalStack's stacks wait up to a second,
   * since every read of its streams costs its one gateway and kinesis-mock).
   */
  maxIdleMs?: number;
  /** How often the stream is described again while all its shards are read (ms). */
  describeEveryMs?: number;
  /** First retry of a failed batch after this (ms), doubling each time. */
  retryBaseMs?: number;
  /**
   * Said on the console when the records read are older than this (ms; Lambda's
   * `IteratorAge` metric): at most once per such interval, so a worker falling behind shows
   * in the stack's output. 60 s by default.
   */
  reportAgeOverMs?: number;
}

/** Shard positions: the last sequence number handled in each shard, and shards read to the end. */
interface Checkpoints {
  after: Record<string, string>;
  finished: string[];
}

function loadCheckpoints(file: string | undefined): Checkpoints {
  if (!file || !existsSync(file)) return { after: {}, finished: [] };
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<Checkpoints>;
  return { after: parsed.after ?? {}, finished: parsed.finished ?? [] };
}

function saveCheckpoints(file: string | undefined, checkpoints: Checkpoints): void {
  if (!file) return;
  mkdirSync(dirname(file), { recursive: true });
  // Written whole and renamed: a process killed while writing leaves the previous file.
  writeFileSync(`${file}.tmp`, JSON.stringify(checkpoints));
  renameSync(`${file}.tmp`, file);
}

/**
 * An attribute value as Lambda delivers it. The streams client hands an empty map of DynamoDB
 * Local's as `{}` (no type at all), which Lambda gives as `{"M": {}}`.
 */
function lambdaValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value).filter(([, inner]) => inner !== undefined);
  if (entries.length === 0) return { M: {} };
  const [[type, inner]] = entries as [[string, unknown]];
  if (type === 'M' && typeof inner === 'object' && inner !== null) {
    return { M: lambdaImage(inner) };
  }
  if (type === 'L' && Array.isArray(inner)) return { L: inner.map(lambdaValue) };
  return { [type]: inner };
}

function lambdaImage(image: object): Record<string, LambdaAttributeValue> {
  return Object.fromEntries(
    Object.entries(image).map(([name, value]) => [name, lambdaValue(value)]),
  ) as Record<string, LambdaAttributeValue>;
}

/** The SDK's record as Lambda delivers it (epoch seconds, the same attribute-value JSON). */
export function toLambdaRecord(
  record: StreamRecord,
  streamArn: string,
  awsRegion: string,
): DynamoDBRecord {
  const change = record.dynamodb ?? {};
  const image = (value: object | undefined) => (value ? lambdaImage(value) : undefined);
  return {
    eventID: record.eventID ?? '',
    eventName: record.eventName ?? 'MODIFY',
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion,
    eventSourceARN: streamArn,
    dynamodb: {
      ApproximateCreationDateTime: Math.floor(
        (change.ApproximateCreationDateTime?.getTime() ?? Date.now()) / 1000,
      ),
      ...(change.Keys ? { Keys: image(change.Keys) } : {}),
      ...(change.NewImage ? { NewImage: image(change.NewImage) } : {}),
      ...(change.OldImage ? { OldImage: image(change.OldImage) } : {}),
      SequenceNumber: change.SequenceNumber ?? '',
      SizeBytes: change.SizeBytes ?? 0,
      ...(change.StreamViewType ? { StreamViewType: change.StreamViewType } : {}),
    },
  };
}

/** Records spread over `count` lanes by partition key (`pk`), each in stream order. */
function lanes(records: DynamoDBRecord[], count: number): DynamoDBRecord[][] {
  if (count <= 1) return [records];
  const spread: DynamoDBRecord[][] = Array.from({ length: count }, () => []);
  for (const record of records) {
    const pk = JSON.stringify(record.dynamodb?.Keys?.pk ?? '');
    let hash = 0;
    for (let i = 0; i < pk.length; i += 1) hash = (hash * 31 + pk.charCodeAt(i)) >>> 0;
    spread[hash % count]?.push(record);
  }
  return spread.filter((lane) => lane.length > 0);
}

/** Waits, or less when stopped (its listener goes with it: pollers wait very often). */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

export function startStreamPoller(options: StreamPollerOptions): {
  stop: () => Promise<void>;
  /** The table was written to: idle shards are read at once, then less and less often again. */
  nudge: () => void;
} {
  const { db, streams, tableName, functionName } = options;
  const abort = new AbortController();
  const stopped = () => abort.signal.aborted;
  const checkpoints = loadCheckpoints(options.checkpointFile);
  const finished = new Set(checkpoints.finished);
  const awsRegion = process.env.AWS_REGION ?? 'us-east-1';
  const idleMs = options.idleMs ?? 200;
  const pollEveryMs = options.pollEveryMs ?? 250;
  const maxIdleMs = Math.max(idleMs, options.maxIdleMs ?? idleMs);
  const parallelization = Math.max(1, options.parallelization ?? 1);
  const describeEveryMs = options.describeEveryMs ?? 10_000;
  const retryBaseMs = options.retryBaseMs ?? 500;
  const reportAgeOverMs = options.reportAgeOverMs ?? 60_000;
  const reading = new Map<string, Promise<void>>();
  let ageReportedAt = 0;
  // Writes told so far (`nudge`), and the idle waits they end: a reader whose read began
  // before a write does not wait after it, the record may be just after what it read.
  let nudges = 0;
  const idleWaits = new Set<() => void>();
  /** An idle wait: true when a write ended it (its timer and listener go with it). */
  const idleWait = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (abort.signal.aborted) {
        resolve(false);
        return;
      }
      const done = (woken: boolean) => {
        clearTimeout(timer);
        idleWaits.delete(wake);
        abort.signal.removeEventListener('abort', elapsed);
        resolve(woken);
      };
      const wake = () => {
        done(true);
      };
      const elapsed = () => {
        done(false);
      };
      const timer = setTimeout(elapsed, ms);
      idleWaits.add(wake);
      abort.signal.addEventListener('abort', elapsed, { once: true });
    });
  const nudge = () => {
    nudges += 1;
    for (const wake of [...idleWaits]) wake();
  };

  /** Says how far behind the stream the handler is, when it is far (the last record's age). */
  const reportAge = (records: StreamRecord[]) => {
    const created = records.at(-1)?.dynamodb?.ApproximateCreationDateTime?.getTime();
    const now = Date.now();
    if (created === undefined || now - created <= reportAgeOverMs) return;
    if (now - ageReportedAt <= reportAgeOverMs) return;
    ageReportedAt = now;
    console.error(
      `${functionName}: ${tableName}'s stream is read ${Math.round((now - created) / 1000)} s behind its writes (iterator age)`,
    );
  };

  const checkpoint = (shardId: string, sequenceNumber: string) => {
    checkpoints.after[shardId] = sequenceNumber;
    saveCheckpoints(options.checkpointFile, checkpoints);
  };
  const finish = (shardId: string) => {
    finished.add(shardId);
    checkpoints.finished = [...finished];
    saveCheckpoints(options.checkpointFile, checkpoints);
  };

  const iterator = async (
    streamArn: string,
    shardId: string,
    type: ShardIteratorType,
    sequenceNumber?: string,
  ) => {
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shardId,
        ShardIteratorType: type,
        ...(sequenceNumber ? { SequenceNumber: sequenceNumber } : {}),
      }),
    );
    return ShardIterator;
  };

  /** From the checkpoint on, or the shard's oldest record (TRIM_HORIZON, as the stack's mappings). */
  const resume = (streamArn: string, shardId: string) => {
    const after = checkpoints.after[shardId];
    return after
      ? iterator(streamArn, shardId, 'AFTER_SEQUENCE_NUMBER', after)
      : iterator(streamArn, shardId, 'TRIM_HORIZON');
  };

  /** Hands one batch to the handler until it passes or the attempts run out. */
  const deliver = async (streamArn: string, shardId: string, records: StreamRecord[]) => {
    let pending = records;
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      const kept = pending
        .map((record) => toLambdaRecord(record, streamArn, awsRegion))
        .filter((record) => options.keep?.(record) ?? true);
      let failedFrom: number | undefined;
      if (kept.length > 0) {
        const failed = new Set<string>();
        // Each lane's batches in order; the lanes at once. A lane stops at its first failure.
        await Promise.all(
          lanes(kept, parallelization).map(async (lane) => {
            for (let start = 0; start < lane.length; start += options.batchSize) {
              const batch = lane.slice(start, start + options.batchSize);
              try {
                const result = await options.handler(
                  { Records: batch },
                  lambdaContext(functionName, options.timeoutSeconds),
                );
                const failures = result?.batchItemFailures ?? [];
                for (const failure of failures) failed.add(failure.itemIdentifier);
                if (failures.length > 0) return;
              } catch (error) {
                console.error(`${functionName} failed a stream batch; it will be retried`, error);
                failed.add(batch[0]?.dynamodb?.SequenceNumber ?? '');
                return;
              }
            }
          }),
        );
        // Retried from the earliest failure of any lane (what came after it again: at least once).
        const index = pending.findIndex((record) =>
          failed.has(record.dynamodb?.SequenceNumber ?? ''),
        );
        failedFrom = index === -1 ? undefined : index;
      }
      if (failedFrom === undefined) {
        const last = pending.at(-1)?.dynamodb?.SequenceNumber;
        if (last) checkpoint(shardId, last);
        return;
      }
      const done = pending[failedFrom - 1]?.dynamodb?.SequenceNumber;
      if (done) checkpoint(shardId, done);
      pending = pending.slice(failedFrom);
      if (attempt > options.maxRetryAttempts) {
        await options.onFailure({
          streamArn,
          shardId,
          startSequenceNumber: pending[0]?.dynamodb?.SequenceNumber ?? '',
          endSequenceNumber: pending.at(-1)?.dynamodb?.SequenceNumber ?? '',
          batchSize: pending.length,
          attempts: attempt,
          functionName,
        });
        const last = pending.at(-1)?.dynamodb?.SequenceNumber;
        if (last) checkpoint(shardId, last);
        return;
      }
      const wait = Math.min(30_000, retryBaseMs * 2 ** (attempt - 1));
      // Lambda shows a retried batch in its metrics; here the stack's output says it.
      console.error(
        `${functionName}: ${pending.length} records of a batch of ${tableName}'s stream failed; attempt ${attempt + 1} in ${wait} ms`,
      );
      await sleep(wait, abort.signal);
      if (stopped()) return;
    }
  };

  /** Reads a shard to its end (a closed shard) or until stopped (the open one). */
  const readShard = async (streamArn: string, shard: Shard) => {
    const shardId = shard.ShardId ?? '';
    let position = await resume(streamArn, shardId);
    let idle = idleMs / 2;
    const limit = Math.min(1000, options.batchSize * parallelization);
    while (!stopped() && position) {
      const readAt = Date.now();
      const nudgesBefore = nudges;
      let answer;
      try {
        answer = await streams.send(
          new GetRecordsCommand({ ShardIterator: position, Limit: limit }),
          { abortSignal: abort.signal },
        );
      } catch (error) {
        if (stopped()) return;
        // An iterator lapses after 15 minutes; trimmed records are gone: go on from what is left.
        if (error instanceof ExpiredIteratorException) {
          position = await resume(streamArn, shardId);
          continue;
        }
        if (error instanceof TrimmedDataAccessException) {
          position = await iterator(streamArn, shardId, 'TRIM_HORIZON');
          continue;
        }
        throw error;
      }
      const records = answer.Records ?? [];
      if (records.length > 0) {
        reportAge(records);
        await deliver(streamArn, shardId, records);
      }
      if (stopped()) return;
      position = answer.NextShardIterator;
      // Idle: the wait doubles with each empty read, up to `maxIdleMs`; records reset it, and so
      // does a write to the table (told during the read, or during the wait, which it ends).
      idle = records.length > 0 ? idleMs / 2 : Math.min(maxIdleMs, idle * 2);
      if (records.length === 0 && position) {
        // After a write, the shard is read as a busy one (every `pollEveryMs`), then less and
        // less often again: a stream may show a write a moment after it was answered.
        if (nudges !== nudgesBefore) idle = pollEveryMs;
        if (await idleWait(idle)) {
          idle = pollEveryMs / 2;
          await sleep(pollEveryMs - (Date.now() - readAt), abort.signal);
        }
      }
      // Records, but fewer than a full read: the shard is not behind, so the next read waits
      // for the poll interval. Every read of DynamoDB Local's streams is a query on its one
      // database connection, which the writes being streamed also need: reading again the
      // moment a handler returned took most of that connection from them under load.
      else if (records.length < limit && position) {
        await sleep(pollEveryMs - (Date.now() - readAt), abort.signal);
      }
    }
    if (!stopped()) finish(shardId);
  };

  const shardsOf = async (streamArn: string) => {
    const shards: Shard[] = [];
    let start: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({
          StreamArn: streamArn,
          ...(start ? { ExclusiveStartShardId: start } : {}),
        }),
      );
      shards.push(...(StreamDescription?.Shards ?? []));
      start = StreamDescription?.LastEvaluatedShardId;
    } while (start);
    return shards;
  };

  // Woken when a shard is read to its end: its children can be read now.
  let wake: (() => void) | undefined;
  const loop = async () => {
    while (!stopped()) {
      // Shards change only when one closes (which wakes the loop): while every shard is being
      // read, the stream is described again only every `describeEveryMs`, so that idle pollers
      // cost the endpoint little (LocalStack serves every call through one gateway).
      let settled = false;
      try {
        const { Table } = await db.send(new DescribeTableCommand({ TableName: tableName }));
        const streamArn = Table?.LatestStreamArn;
        if (!streamArn) throw new Error(`The table ${tableName} has no stream`);
        const shards = await shardsOf(streamArn);
        const known = new Set(shards.map((shard) => shard.ShardId));
        for (const shard of shards) {
          const shardId = shard.ShardId ?? '';
          if (finished.has(shardId) || reading.has(shardId)) continue;
          // Parents first: a child's records come after its parent's (unless the parent is gone).
          const parent = shard.ParentShardId;
          if (parent && known.has(parent) && !finished.has(parent)) continue;
          reading.set(
            shardId,
            readShard(streamArn, shard)
              .catch((error: unknown) => {
                if (!stopped()) console.error(`Reading the stream of ${tableName} failed`, error);
              })
              .finally(() => {
                reading.delete(shardId);
                wake?.();
              }),
          );
        }
        settled = reading.size > 0;
      } catch (error) {
        if (stopped()) return;
        console.error(`Describing the stream of ${tableName} failed; retrying`, error);
      }
      await Promise.race([
        sleep(settled ? describeEveryMs : 1_000, abort.signal),
        new Promise<void>((resolve) => {
          wake = resolve;
        }),
      ]);
      wake = undefined;
    }
  };
  const running = loop();
  return {
    stop: async () => {
      abort.abort();
      await running;
      await Promise.all(reading.values());
    },
    nudge,
  };
}
