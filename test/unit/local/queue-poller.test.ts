import { describe, expect, it } from '@jest/globals';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { startQueuePoller } from '../../../local/queue-poller.js';

/**
 * A long poll is given longer than its wait to answer: a client that gave up at the wait's
 * end left the poll waiting at the endpoint, to take a message no one then handed over.
 */
describe('the local queue poller', () => {
  it.each([5, 20])('gives a %i s long poll 10 s more to answer', async (waitTimeSeconds) => {
    const asked: { wait?: number; requestTimeout?: number; aborts: boolean }[] = [];
    const sqs = {
      send: (
        command: { input: { WaitTimeSeconds?: number } },
        options: { requestTimeout?: number; abortSignal?: AbortSignal },
      ) => {
        asked.push({
          wait: command.input.WaitTimeSeconds,
          requestTimeout: options.requestTimeout,
          aborts: options.abortSignal instanceof AbortSignal,
        });
        return new Promise((resolve) =>
          setTimeout(() => {
            resolve({ Messages: [] });
          }, 5),
        );
      },
    } as unknown as SQSClient;
    const poller = startQueuePoller({
      sqs,
      queueUrl: 'http://127.0.0.1:9/000000000000/jobs',
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:jobs',
      functionName: 'test-worker',
      handler: () => Promise.resolve({ batchItemFailures: [] }),
      waitTimeSeconds,
    });
    while (asked.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await poller.stop();
    expect(asked[0]).toEqual({
      wait: waitTimeSeconds,
      requestTimeout: (waitTimeSeconds + 10) * 1000,
      aborts: true,
    });
  });
});
