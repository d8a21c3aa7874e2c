import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import type { Region } from '../../shared/domain/regions.js';
import { baseUrl, TEST_STACK } from './stack-process.js';

export * from './stack-process.js';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One call to a regional API, as a client would make it. */
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
  return {
    status: response.status,
    headers: response.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}

/**
 * A DynamoDB client on the test stack's DynamoDB Local (no injected faults unless given), for
 * tests that set up states no request can make, or look at what requests left behind.
 */
export function stackDb(faults = ''): {
  base: DynamoDBClient;
  db: DynamoDBDocumentClient;
} {
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${TEST_STACK.dynamodbPort}`,
  });
  const base = createDynamoDbClient();
  return { base, db: createDocumentClient(base, faults) };
}
