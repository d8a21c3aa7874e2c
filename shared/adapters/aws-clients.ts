import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { injectFaultsFromSpec } from './dynamo-faults.js';
import { addStoreRetries } from './dynamo-resilience.js';

/**
 * AWS clients, created once per container by the composition roots (handler modules, the
 * local stack, the admin CLI). Endpoints come from the standard `AWS_ENDPOINT_URL` and
 * `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code runs against AWS, the local
 * stand-ins or LocalStack.
 */
/**
 * A DynamoDB client with DynamoDB's customary retry timing: the SDK's own three attempts
 * back off from 50 ms with full jitter (its standard strategy waits from 500 ms on
 * throttling, which a request with a 29-second budget cannot afford many of); calls never
 * hang (a connection in 2 s, an answer in 10 s).
 */
export function createDynamoDbClient(options: { region?: string } = {}): DynamoDBClient {
  return new DynamoDBClient({
    ...options,
    retryStrategy: new ConfiguredRetryStrategy(
      3,
      (attempt) => Math.random() * Math.min(1_000, 50 * 2 ** attempt),
    ),
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 10_000 },
  });
}

/**
 * Every DynamoDB client retries refused calls within the request's time budget
 * (`dynamo-resilience.ts`), and meets the faults `CDP_FAULTS` asks for (`dynamo-faults.ts`).
 */
export function createDocumentClient(
  client = createDynamoDbClient(),
  faults: string | undefined = process.env.CDP_FAULTS,
): DynamoDBDocumentClient {
  addStoreRetries(client);
  injectFaultsFromSpec(client, faults);
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
}

/**
 * SQS requests go to the endpoint the SDK resolves (the region's, or `AWS_ENDPOINT_URL_SQS`),
 * not to the host inside a queue URL: emulators hand out URLs such as
 * `http://sqs.us-east-1.localhost:4566/...` whose host need not resolve.
 */
export function createSqsClient(): SQSClient {
  return new SQSClient({ useQueueUrlAsEndpoint: false });
}

/** Path-style addressing works on AWS and on every S3 stand-in (no bucket DNS names needed). */
export function createS3Client(): S3Client {
  return new S3Client({ forcePathStyle: true });
}
