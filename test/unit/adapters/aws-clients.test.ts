import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import {
  createDynamoDbClient,
  createS3Client,
  createSnsClient,
  createSqsClient,
  withoutCallLogging,
} from '../../../shared/adapters/aws-clients.js';
import { createSesClient } from '../../../shared/adapters/ses-mailer.js';

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
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    try {
      const client = createDynamoDbClient();
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, n) =>
          client.send(new GetItemCommand({ TableName: 'people', Key: { pk: { S: String(n) } } })),
        ),
      );
      expect(answers).toHaveLength(60);
      expect(connections).toBe(60);
      client.destroy();
    } finally {
      process.env = saved;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
