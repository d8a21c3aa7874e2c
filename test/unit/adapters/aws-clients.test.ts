import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import {
  createDocumentClient,
  createDynamoDbClient,
  createS3Client,
  createSnsClient,
  createSqsClient,
  withoutCallLogging,
} from '../../../shared/adapters/aws-clients.js';
import { createSesClient } from '../../../shared/adapters/ses-mailer.js';
import { OutcomeUnknownError, ServiceUnavailableError } from '../../../shared/domain/errors.js';
import { CALL_GRACE_MS, withDeadline } from '../../../shared/lib/time-budget.js';

const middlewareOf = (client: { middlewareStack: { identify(): string[] } }) =>
  client.middlewareStack.identify().map((entry) => entry.split(' ')[0]);

describe('AWS clients', () => {
  it("carry no SDK logger middleware, which filtered every call's input and output for a log going nowhere", () => {
    const clients = [
      createDynamoDbClient(),
      createSqsClient(),
      createSnsClient(),
      createS3Client(),
      createSesClient(),
      withoutCallLogging(new DynamoDBStreamsClient({})),
    ];
    for (const client of clients) {
      const names = middlewareOf(client);
      expect(names).not.toContain('loggerMiddleware');
      // The rest of the stack is still there (signing, retries, serialization).
      expect(names).toEqual(
        expect.arrayContaining([
          'httpSigningMiddleware',
          'serializerMiddleware',
          'deserializerMiddleware',
        ]),
      );
    }
    expect(middlewareOf(new DynamoDBStreamsClient({}))).toContain('loggerMiddleware');
  });
});

/**
 * Runs `work` with `server` listening on a local port as every AWS client's endpoint (test
 * credentials, no injected faults), then closes it.
 */
async function asEndpoint(server: Server, work: () => Promise<void>): Promise<void> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const saved = { ...process.env };
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    CDP_FAULTS: '',
  });
  try {
    await work();
  } finally {
    process.env = saved;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('the DynamoDB client', () => {
  it('keeps more than the SDK default of 50 calls in flight on their own sockets', async () => {
    const held: ServerResponse[] = [];
    let connections = 0;
    const server = createServer((_request, response) => {
      held.push(response);
      // Every call is answered once 60 wait at once (a client with 50 sockets never gets
      // there: its calls past 50 would wait for a socket, against their connection budget).
      if (held.length === 60) {
        for (const waiting of held) {
          waiting.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
          waiting.end('{}');
        }
      }
    });
    server.on('connection', () => {
      connections += 1;
    });
    await asEndpoint(server, async () => {
      const client = createDynamoDbClient();
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, n) =>
          client.send(new GetItemCommand({ TableName: 'people', Key: { pk: { S: String(n) } } })),
        ),
      );
      expect(answers).toHaveLength(60);
      expect(connections).toBe(60);
      client.destroy();
    });
  });
});

/** A server that takes every call and never answers. */
const silentEndpoint = (work: () => Promise<void>) =>
  asEndpoint(
    createServer(() => undefined),
    work,
  );

async function failureOf(call: () => Promise<unknown>) {
  const started = Date.now();
  const error = await call().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return { error, ms: Date.now() - started };
}

describe('a call the store never answers', () => {
  // Found by CI on a loaded machine: the SDK only warns when `requestTimeout` passes (unless
  // told to throw) and then waits for the socket, 300 s for DynamoDB; a contacts add of a
  // thousand people ran past its function's time and got the bare timeout answer.
  it("fails after the client's 5 s outside any request", async () => {
    await silentEndpoint(async () => {
      const client = createDynamoDbClient();
      const { error, ms } = await failureOf(() =>
        client.send(new GetItemCommand({ TableName: 'people', Key: { pk: { S: 'p' } } })),
      );
      expect(error).toMatchObject({ name: 'TimeoutError' });
      expect(ms).toBeGreaterThanOrEqual(4_900);
      expect(ms).toBeLessThan(9_000); // not the socket's 300 s; slack for a loaded machine
      client.destroy();
    });
  }, 15_000);

  it('waits as long as a client is told to (the admin CLI gives calls 30 s)', async () => {
    await silentEndpoint(async () => {
      const client = createDynamoDbClient({ answerMs: 1_500 });
      const { error, ms } = await failureOf(() =>
        client.send(new GetItemCommand({ TableName: 'people', Key: { pk: { S: 'p' } } })),
      );
      expect(error).toMatchObject({ name: 'TimeoutError' });
      expect(ms).toBeGreaterThanOrEqual(1_400);
      expect(ms).toBeLessThan(4_900); // not the default 5 s
      client.destroy();
    });
  }, 15_000);

  it("ends by the request's deadline plus the grace, for DynamoDB and for SQS", async () => {
    await silentEndpoint(async () => {
      const dynamo = createDynamoDbClient();
      const sqs = createSqsClient();
      const deadline = Date.now() + 300;
      const [get, send] = await Promise.all([
        failureOf(() =>
          withDeadline(deadline, () =>
            dynamo.send(new GetItemCommand({ TableName: 'people', Key: { pk: { S: 'p' } } })),
          ),
        ),
        failureOf(() =>
          withDeadline(deadline, () =>
            sqs.send(new SendMessageCommand({ QueueUrl: 'http://q/1/q', MessageBody: '{}' })),
          ),
        ),
      ]);
      expect(get.error).toMatchObject({ name: 'TimeoutError' });
      expect(get.ms).toBeLessThan(300 + CALL_GRACE_MS + 2_000);
      // SQS's own retries (three attempts) each end by the same moment or get the least time
      // (250 ms), with the SDK's backoff between them (under 1 s for three attempts).
      expect(send.error).toMatchObject({ name: 'TimeoutError' });
      expect(send.ms).toBeLessThan(300 + CALL_GRACE_MS + 3 * 250 + 3_000);
      dynamo.destroy();
      sqs.destroy();
    });
  }, 15_000);

  it('is a 503 whose write may have been applied for a write, and a plain 503 for a read', async () => {
    await silentEndpoint(async () => {
      const db = createDocumentClient();
      const deadline = Date.now() + 200;
      const [write, read] = await Promise.all([
        failureOf(() =>
          withDeadline(deadline, () =>
            db.send(new PutCommand({ TableName: 'people', Item: { pk: 'p', sk: 's' } })),
          ),
        ),
        failureOf(() =>
          withDeadline(deadline, () =>
            db.send(new GetCommand({ TableName: 'people', Key: { pk: 'p', sk: 's' } })),
          ),
        ),
      ]);
      expect(write.error).toBeInstanceOf(OutcomeUnknownError);
      expect((write.error as Error).message).toMatch(/may or may not have been applied/);
      expect(read.error).toBeInstanceOf(ServiceUnavailableError);
      expect(read.error).not.toBeInstanceOf(OutcomeUnknownError);
      expect((read.error as Error).message).toMatch(/nothing more of this request was written/);
      db.destroy();
    });
  }, 15_000);
});
