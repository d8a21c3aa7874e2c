import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { proxyEvent } from '../../local/http-adapter.js';
import { checkAnswer } from '../contract.js';
import { localBucketName, tableName } from '../../shared/resources.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import type { Region } from '../../shared/domain/regions.js';
import { sleep } from '../../shared/lib/time-budget.js';
import { baseUrl, stackAwsEnv, stackEndpoint } from './stack-process.js';

export * from './stack-process.js';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One call to a regional API, as a client would make it, checked against the OpenAPI document. */
export async function call(
  path: string,
  options: {
    key?: string;
    body?: unknown;
    rawBody?: string;
    method?: string;
    region?: Region;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...options.headers,
  };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  const response = await fetch(`${baseUrl(options.region ?? 'default')}${path}`, {
    method: options.method ?? 'POST',
    headers,
    body:
      options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  const text = await response.text();
  // Every answer must be the one the OpenAPI document describes (test/contract.ts).
  checkAnswer({
    method: options.method ?? 'POST',
    path,
    status: response.status,
    contentType: response.headers.get('content-type'),
    text,
  });
  return {
    status: response.status,
    headers: response.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}

/**
 * `call`, repeated as a client does when the answer is a 503 (the store overloaded or slow,
 * "try again shortly"): after its `Retry-After` (1 s without one), up to `attempts` calls in
 * all. For tests whose subject is not the 503 itself, on a stack with injected faults or a
 * loaded machine; the last answer is returned whatever it is.
 */
export async function callRepeating(
  path: string,
  options: Parameters<typeof call>[1] = {},
  attempts = 3,
): Promise<ApiResponse> {
  for (let attempt = 1; ; attempt += 1) {
    const response = await call(path, options);
    if (response.status !== 503 || attempt >= attempts) return response;
    await sleep((Number(response.headers.get('retry-after')) || 1) * 1000);
  }
}

/**
 * A DynamoDB client on the test stack's DynamoDB (no injected faults unless given), for
 * tests that set up states no request can make, or look at what requests left behind. It
 * points the process's AWS settings at the stack's services (stackAwsEnv).
 */
export function stackDb(faults = ''): {
  base: DynamoDBClient;
  db: DynamoDBDocumentClient;
} {
  Object.assign(process.env, stackAwsEnv());
  const base = createDynamoDbClient();
  return { base, db: createDocumentClient(base, faults) };
}

/**
 * The environment a function module of the test stack's default region reads at load, for
 * tests that run a handler in-process (with faults or budgets of their own).
 */
export function functionEnv(extra: Record<string, string>): void {
  stackDb();
  Object.assign(process.env, {
    CDP_REGION: 'default',
    CONFIG_TABLE: tableName('default', 'config'),
    REQUESTS_TABLE: tableName('default', 'requests'),
    PEOPLE_TABLE: tableName('default', 'people'),
    ACTIVITIES_TABLE: tableName('default', 'activities'),
    ORGANIZATIONS_TABLE: tableName('default', 'organizations'),
    EMAILS_TABLE: tableName('default', 'emails'),
    BASE_URL_DEFAULT: baseUrl('default'),
    BASE_URL_AU: baseUrl('au'),
    BASE_URL_EU: baseUrl('eu'),
    GEOCODER: 'offline',
    INGEST_QUEUE_URL: `${stackEndpoint('SQS')}/000000000000/cdp-default-ingest`,
    PAYLOADS_BUCKET: localBucketName('default', 'payloads'),
    ...extra,
  });
}

/** An API Gateway (REST API) event of a POST, as the local adapter builds them. */
export function postEvent(
  path: string,
  body: unknown,
  apiKey: string,
  requestId: string,
): APIGatewayProxyEvent {
  return proxyEvent({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: Buffer.from(JSON.stringify(body)),
    requestId,
    resource: path,
  });
}

/** A Lambda context with the time a route has (29 s). */
export const functionContext = { getRemainingTimeInMillis: () => 29_000 } as unknown as Context;

/**
 * A table of a test's own on the stack's DynamoDB, keyed `pk`/`sk` as the stack's tables are,
 * with or without a stream of new and old images (the caller waits for what it needs).
 */
export async function createKeyedTable(
  client: DynamoDBClient,
  name: string,
  { stream }: { stream: boolean },
): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      ...(stream
        ? { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } }
        : {}),
    }),
  );
}
