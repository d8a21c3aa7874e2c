import { describe, expect, it } from '@jest/globals';
import { S3Client } from '@aws-sdk/client-s3';
import type { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SqsEmailQueue } from '../../../shared/adapters/email-queue.js';
import type { EmailJob } from '../../../shared/domain/email/messages.js';
import { ServiceUnavailableError } from '../../../shared/domain/errors.js';
import { MaybeQueuedError } from '../../../shared/domain/ingest/ingest.js';
import { withDeadline } from '../../../shared/lib/time-budget.js';

/**
 * The email queue sends a request's batches of ten at once, tries each to its end whatever
 * befalls the others (so every message SQS confirmed is known to the caller), and throws the
 * failure that leaves most in doubt.
 */
type Batch = SendMessageBatchCommand['input'];

function fakeSqs(answer: (input: Batch, call: number) => Promise<void>) {
  const sent: Batch[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const client = {
    middlewareStack: { add: () => undefined },
    send: async (command: SendMessageBatchCommand) => {
      const call = sent.push(command.input);
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      try {
        await new Promise((resolve) => setTimeout(resolve, 5));
        await answer(command.input, call);
        return { Successful: (command.input.Entries ?? []).map(({ Id }) => ({ Id })) };
      } finally {
        inFlight -= 1;
      }
    },
  } as unknown as SQSClient;
  return { client, sent, mostInFlight: () => mostInFlight };
}

const jobs = (n: number): EmailJob[] =>
  Array.from({ length: n }, (_, i) => ({
    v: 1,
    instance_id: 'acme',
    message_id: `m${i}`,
  }));

function queueOf(client: SQSClient) {
  return new SqsEmailQueue(
    client,
    'http://127.0.0.1:9/000000000000/email',
    new S3Client({ region: 'us-east-1' }),
    'payloads',
  );
}

describe('the email queue', () => {
  it('sends the batches of a request at once, ten messages each', async () => {
    const sqs = fakeSqs(() => Promise.resolve());
    const queued: string[] = [];
    await queueOf(sqs.client).send(jobs(25), (id) => queued.push(id));
    expect(sqs.sent.map((batch) => batch.Entries?.length)).toEqual([10, 10, 5]);
    expect(sqs.mostInFlight()).toBe(3);
    expect(queued.sort()).toEqual(
      jobs(25)
        .map((job) => job.message_id)
        .sort(),
    );
  });

  it('tries every batch when one fails, and says a message may be queued over nothing queued', async () => {
    const cut = (code: string) => Object.assign(new Error(`socket: ${code}`), { code });
    const sqs = fakeSqs((_input, call) => {
      // The second batch loses its answer (it may be queued); the third finds SQS gone.
      if (call === 2) return Promise.reject(cut('ECONNRESET'));
      if (call >= 3) return Promise.reject(cut('ECONNREFUSED'));
      return Promise.resolve();
    });
    const queued: string[] = [];
    const error = await withDeadline(Date.now() + 300, () =>
      queueOf(sqs.client).send(jobs(30), (id) => queued.push(id)),
    ).then(
      () => undefined,
      (cause: unknown) => cause,
    );
    expect(error).toBeInstanceOf(MaybeQueuedError);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(queued.sort()).toEqual(
      jobs(10)
        .map((job) => job.message_id)
        .sort(),
    );
    const firstIds = new Set(sqs.sent.map((batch) => batch.Entries?.[0]?.Id));
    expect(firstIds).toEqual(new Set(['m0', 'm10', 'm20']));
  });
});
