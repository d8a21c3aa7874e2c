import { describe, expect, it } from '@jest/globals';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { RetryLaterError } from '../../../shared/lib/retry-later.js';
import { sqsWorker } from '../../../shared/worker/sqs-worker.js';

/** The worker stack against a fake SQS client that records visibility changes. */
function fakeSqs() {
  const visibility: number[] = [];
  const sqs = {
    send: (command: { input: { VisibilityTimeout?: number } }) => {
      visibility.push(command.input.VisibilityTimeout ?? -1);
      return Promise.resolve({});
    },
  } as unknown as SQSClient;
  return { sqs, visibility };
}

function event(receives: number): SQSEvent {
  const record = {
    messageId: 'm-1',
    receiptHandle: 'r-1',
    body: '{}',
    attributes: { ApproximateReceiveCount: String(receives) },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
    awsRegion: 'us-east-1',
  } as unknown as SQSRecord;
  return { Records: [record] };
}

/** Messages received once, each named by its body. */
function batchOf(bodies: string[]): SQSRecord[] {
  const {
    Records: [template],
  } = event(1);
  return bodies.map((body) => ({ ...template, messageId: body, body }) as SQSRecord);
}

/** A worker's settings but its processing: 5 receives, nothing recorded on the last. */
const settings = (sqs: SQSClient) => ({
  sqs,
  queueUrl: 'http://queue',
  maxReceiveCount: 5,
  backoffBaseSeconds: 1,
  onLastFailure: () => Promise.resolve(undefined),
});

const context = { getRemainingTimeInMillis: () => 60_000 } as unknown as Context;

function worker(failure: Error, lastFailure: 'settled' | 'dead-letter' | undefined) {
  const { sqs, visibility } = fakeSqs();
  const lastFailures: unknown[] = [];
  const handler = sqsWorker({
    sqs,
    queueUrl: 'http://queue',
    maxReceiveCount: 5,
    backoffBaseSeconds: 1,
    process: () => Promise.reject(failure),
    onLastFailure: (_record, error) => {
      lastFailures.push(error);
      return Promise.resolve(lastFailure);
    },
  });
  return { handler, visibility, lastFailures };
}

describe('sqsWorker', () => {
  it('backs a failed message off exponentially', async () => {
    const { handler, visibility } = worker(new Error('boom'), undefined);
    const answer = await handler(event(3), context);
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    expect(visibility).toEqual([4]);
  });

  it('waits at least as long as a failure asks (RetryLaterError)', async () => {
    const { handler, visibility } = worker(new RetryLaterError('held', 91_000), undefined);
    await handler(event(1), context);
    expect(visibility).toEqual([91]);
  });

  it('never waits past 15 minutes', async () => {
    const { handler, visibility } = worker(new RetryLaterError('held', 5_000_000), undefined);
    await handler(event(2), context);
    expect(visibility).toEqual([900]);
  });

  it('sends a message that failed its last receive to the dead-letter queue', async () => {
    const { handler, visibility, lastFailures } = worker(new Error('boom'), 'dead-letter');
    const answer = await handler(event(5), context);
    expect(lastFailures).toHaveLength(1);
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    expect(visibility).toEqual([0]);
  });

  it('is done with a message whose last failure settled its outcome', async () => {
    const { handler, visibility, lastFailures } = worker(new Error('boom'), 'settled');
    const answer = await handler(event(5), context);
    expect(lastFailures).toHaveLength(1);
    expect(answer.batchItemFailures).toEqual([]);
    expect(visibility).toEqual([]);
  });

  it('runs a batch at once, but the messages of one key one after the other, in order', async () => {
    const { sqs, visibility } = fakeSqs();
    const bodies = ['a1', 'b1', 'a2', 'c1', 'a3', 'b2'];
    const records = batchOf(bodies);
    const log: string[] = [];
    let running = 0;
    let mostRunning = 0;
    const handler = sqsWorker({
      ...settings(sqs),
      parallel: true,
      orderKey: (record) => record.body.slice(0, 1),
      process: async (record) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        log.push(`start ${record.body}`);
        // The first of each key takes longest: a later one of the same key must still wait.
        await new Promise((resolve) => setTimeout(resolve, record.body.endsWith('1') ? 30 : 5));
        log.push(`end ${record.body}`);
        running -= 1;
        // One of a key failing does not stop the next of that key.
        if (record.body === 'a2') throw new Error('a2 fails');
      },
    });
    const answer = await handler({ Records: records }, context);
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: 'a2' }]);
    expect(visibility).toEqual([1]);
    // Different keys at once; each key's messages strictly one after the other.
    expect(mostRunning).toBe(3);
    for (const key of ['a', 'b', 'c']) {
      const own = log.filter((line) => line.split(' ')[1]?.startsWith(key));
      const expected = bodies
        .filter((body) => body.startsWith(key))
        .flatMap((body) => [`start ${body}`, `end ${body}`]);
      expect(own).toEqual(expected);
    }
  });

  it('runs at most `parallel` messages of a batch at once when it is a number', async () => {
    const { sqs } = fakeSqs();
    const bodies = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'];
    const records = batchOf(bodies);
    const started: string[] = [];
    let running = 0;
    let mostRunning = 0;
    const handler = sqsWorker({
      ...settings(sqs),
      parallel: 3,
      process: async (record) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        started.push(record.body);
        await new Promise((resolve) => setTimeout(resolve, record.body === 'm1' ? 40 : 5));
        running -= 1;
        // A failure frees its place like a success.
        if (record.body === 'm2') throw new Error('m2 fails');
      },
    });
    const answer = await handler({ Records: records }, context);
    expect(mostRunning).toBe(3);
    // In the batch's order, each as a place frees; every one processed.
    expect(started).toEqual(bodies);
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: 'm2' }]);
  });

  it('starts the messages `unbounded` names at once, beside the bounded ones', async () => {
    const { sqs } = fakeSqs();
    // `s…` are slices of background work; the others, requests bounded to one at a time.
    const bodies = ['r1', 's1', 'r2', 's2', 'r3', 's3'];
    const records = batchOf(bodies);
    const started: string[] = [];
    // Nothing ends before the gate opens, however slow the machine: what has started by then
    // started beside the first request.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const handler = sqsWorker({
      ...settings(sqs),
      parallel: 1,
      unbounded: (record) => record.body.startsWith('s'),
      process: async (record) => {
        started.push(record.body);
        await gate;
      },
    });
    const handled = handler({ Records: records }, context);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Every slice started at once; of the requests, the first only.
    expect(started).toEqual(['r1', 's1', 's2', 's3']);
    open();
    const answer = await handled;
    expect(answer.batchItemFailures).toEqual([]);
    expect(started.filter((body) => body.startsWith('r'))).toEqual(['r1', 'r2', 'r3']);
  });
});
