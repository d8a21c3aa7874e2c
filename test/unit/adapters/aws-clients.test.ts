import { describe, expect, it } from '@jest/globals';
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
