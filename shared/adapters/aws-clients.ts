import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler, type NodeHttpHandlerOptions } from '@smithy/node-http-handler';
import { callTimeoutMs } from '../lib/time-budget.js';
import { injectFaultsFromSpec } from './dynamo-faults.js';
import { addStoreRetries } from './dynamo-resilience.js';
import { reportTableWrites } from './table-writes.js';

/**
 * AWS clients, created once per container by the composition roots (handler modules, the
 * local stack, the admin CLI). Endpoints come from the standard `AWS_ENDPOINT_URL` and
 * `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code runs against AWS, the local
 * stand-ins or LocalStack.
 */
/**
 * Sockets a DynamoDB client keeps to its endpoint (the SDK's default is 50). A Lambda container
 * serves one request at a time, a few calls in flight; a local process serves every concurrent
 * request through one client (16 activity requests make 64 `BatchWriteItem`s at once), and a
 * call that waits for a free socket spends that wait against its 2 s connection budget (the
 * SDK's handler starts the timer when the call is made): a slow moment of DynamoDB Local then
 * failed writes as "no connection", answered 503.
 */
const MAX_SOCKETS = 256;

/**
 * The HTTP handler of every client below: a call that gets no answer in `requestTimeout` fails
 * (the SDK only warns unless told to throw, and then waits for the socket: 300 s for
 * DynamoDB), and within a request's or a batch's time budget it gets no more than what is
 * left of it plus `CALL_GRACE_MS` (`callTimeoutMs`): a call made just before the deadline
 * ends in time for the answer to be ours, not the function's timeout.
 */
class BudgetedHttpHandler extends NodeHttpHandler {
  private readonly answerMs: number;

  constructor(options: NodeHttpHandlerOptions & { requestTimeout: number }) {
    super({ ...options, throwOnRequestTimeout: true });
    this.answerMs = options.requestTimeout;
  }

  override handle(...[request, handlerOptions = {}]: Parameters<NodeHttpHandler['handle']>) {
    return super.handle(request, {
      ...handlerOptions,
      requestTimeout: callTimeoutMs(handlerOptions.requestTimeout ?? this.answerMs),
    });
  }
}

/**
 * A DynamoDB client whose calls are retried by our middleware only (`dynamo-resilience.ts`):
 * the SDK's own retry layer makes one attempt, since it would also repeat writes whose
 * outcome is unknown (a timeout, a 5xx), and an `ADD` repeated is an `ADD` applied twice.
 * Calls never hang: a connection in 2 s, an answer in `answerMs` (5 s; less near a deadline).
 * The admin CLI, which has no caller waiting on a gateway, gives a loaded store longer. Its
 * writes are told to whoever listens in the process (`table-writes.ts`: the local stack's
 * stream pollers).
 */
export function createDynamoDbClient(
  options: { region?: string; answerMs?: number } = {},
): DynamoDBClient {
  const { answerMs = 5_000, ...config } = options;
  return reportTableWrites(
    withoutCallLogging(
      new DynamoDBClient({
        ...config,
        maxAttempts: 1,
        requestHandler: new BudgetedHttpHandler({
          connectionTimeout: 2_000,
          requestTimeout: answerMs,
          httpAgent: { maxSockets: MAX_SOCKETS },
          httpsAgent: { maxSockets: MAX_SOCKETS },
        }),
      }),
    ),
  );
}

/**
 * SQS, SNS and S3 calls (the SDK's own retries, which may repeat a message: every consumer
 * is idempotent): a connection in 2 s, an answer in `answerMs` (less near a deadline).
 */
function budgetedHandler(answerMs: number): BudgetedHttpHandler {
  return new BudgetedHttpHandler({ connectionTimeout: 2_000, requestTimeout: answerMs });
}

/**
 * Takes the SDK's logger middleware off a client. It builds, for every call, a copy of the
 * call's input and output with sensitive members masked (walking the operation's schema
 * member by member) and hands it to the client's logger, even the default one that logs
 * nothing: measured at 7 % of a stream worker process's CPU (large `GetRecords` answers) and
 * 1 % of an API process's. Our own logs say what a call did when it matters; nothing reads
 * the SDK's.
 */
export function withoutCallLogging<
  Client extends { middlewareStack: { remove(name: string): boolean } },
>(client: Client): Client {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

/** The faults of a client that must never meet any: the local stack's setup, the admin CLI. */
export const NO_FAULTS = '';

/**
 * Every DynamoDB client retries refused calls within the request's time budget
 * (`dynamo-resilience.ts`), and meets the faults `CDP_FAULTS` asks for (`dynamo-faults.ts`):
 * the functions' clients, made by their composition roots without arguments.
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
  // 20 s; the local pollers' long polls give themselves their wait and 10 s (queue-poller.ts).
  return withoutCallLogging(
    new SQSClient({ useQueueUrlAsEndpoint: false, requestHandler: budgetedHandler(20_000) }),
  );
}

/**
 * SNS carries SES's sending events to the email-events queue. The endpoint is the region's, or
 * `AWS_ENDPOINT_URL_SNS` / `AWS_ENDPOINT_URL` (locally fauxqs, which also serves SQS and S3).
 */
export function createSnsClient(): SNSClient {
  return withoutCallLogging(new SNSClient({ requestHandler: budgetedHandler(10_000) }));
}

/** Path-style addressing works on AWS and on every S3 stand-in (no bucket DNS names needed). */
export function createS3Client(): S3Client {
  // 30 s: a payload or an attachment of several MB.
  return withoutCallLogging(
    new S3Client({ forcePathStyle: true, requestHandler: budgetedHandler(30_000) }),
  );
}
