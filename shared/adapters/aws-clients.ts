import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * AWS clients, created once per container by the composition roots (handler modules, the
 * local stack, the admin CLI). Endpoints come from the standard `AWS_ENDPOINT_URL` and
 * `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code runs against AWS, the local
 * stand-ins or LocalStack.
 */
export function createDocumentClient(client = new DynamoDBClient({})): DynamoDBDocumentClient {
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
