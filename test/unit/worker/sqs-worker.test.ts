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
});
