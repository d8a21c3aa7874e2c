import { describe, expect, it } from '@jest/globals';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { MaybeQueuedError, type IngestMessage } from '../../../shared/domain/ingest/ingest.js';
import { ServiceUnavailableError } from '../../../shared/domain/errors.js';
import { SqsIngestQueue } from '../../../shared/adapters/ingest-queue.js';
import { withDeadline } from '../../../shared/lib/time-budget.js';

/**
 * The ingest queue's answer when SQS fails: "nothing was queued" only when no attempt can
 * have reached it, the client's own retries included (an attempt cut after its request was
 * sent, then "connection refused" on the retry, may have queued the message).
 */
function failing(codes: string[], fallback: string) {
  let sent = 0;
  const client = new SQSClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 3,
    requestHandler: {
      handle: () => {
        sent += 1;
        const code = codes.shift() ?? fallback;
        return Promise.reject(Object.assign(new Error(`socket: ${code}`), { code }));
      },
    },
  });
  return { client, sent: () => sent };
}

const message: IngestMessage = {
  v: 1,
  request_id: 'r-1',
  instance_id: 'acme',
  data_source: 'crm',
  kind: 'person-merge',
  accepted_at: new Date(0).toISOString(),
  records: 1,
  body: { people: [] },
};

async function sendWith(client: SQSClient): Promise<unknown> {
  const queue = new SqsIngestQueue(
    client,
    'http://127.0.0.1:9/000000000000/ingest',
    new S3Client({ region: 'us-east-1' }),
    'payloads',
  );
  return withDeadline(Date.now() + 1_500, () => queue.send(message)).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the ingest queue when SQS fails', () => {
  it('says the request may be queued when an earlier attempt of the client was cut', async () => {
    // The first attempt reached SQS and lost its answer; every retry found SQS gone.
    const { client, sent } = failing(['ECONNRESET'], 'ECONNREFUSED');
    const error = await sendWith(client);
    expect(sent()).toBeGreaterThan(1);
    expect(error).toBeInstanceOf(MaybeQueuedError);
  });

  it('says nothing was queued when no attempt reached SQS', async () => {
    const { client, sent } = failing([], 'ECONNREFUSED');
    const error = await sendWith(client);
    expect(sent()).toBeGreaterThan(1);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).not.toBeInstanceOf(MaybeQueuedError);
    expect((error as Error).message).toMatch(/nothing was queued/);
  });
});
