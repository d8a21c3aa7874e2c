import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { OutcomeUnknownError, ServiceUnavailableError } from '../domain/errors.js';
import { logger } from '../lib/logger.js';
import { backoffMs, canWait, currentDeadline, sleep } from '../lib/time-budget.js';

/**
 * Retries of every DynamoDB call, within the time budget of the request
 * (`shared/lib/time-budget.ts`), with exponential backoff (from 25 ms) and full jitter. One
 * middleware on the client, above the SDK's retry layer (which the clients set to a single
 * attempt), so that every call of every store is covered the same way:
 *
 * - **busy**: the call was refused and changed nothing: throttling, a transaction cancelled
 *   only by conflicts with other transactions (`TransactionConflict`), a single-item write
 *   that met a transaction. Retried for every command.
 * - **unavailable**: the store failed or could not be reached, so a write may or may not
 *   have happened. Retried only where repeating is safe: reads, and transactions, which
 *   keep their `ClientRequestToken` (DynamoDB applies a token once within ten minutes).
 *
 * When the budget runs out the call fails with `ServiceUnavailableError` (503 with
 * `Retry-After`). Anything else (a failed condition, a validation error) is the caller's.
 *
 * A transaction marked with `leaveCancellationsToCaller` gets its cancellations back at once,
 * whatever their reasons: the transaction batcher, whose calls carry the items of many
 * records, retries only the records whose items met the conflict (and a conflicting counter
 * shard on another shard), instead of the whole call unchanged. Throttling of the whole call
 * and an unavailable store are still retried here.
 */
const THROTTLING = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'LimitExceededException',
]);

/** Cancellation reasons that mean "nothing was applied; the same transaction may succeed later". */
export const TRANSIENT_REASONS = new Set([
  'None',
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
]);

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Commands that write nothing. */
const READS = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'TransactGetItemsCommand',
  'DescribeTableCommand',
]);

/** Commands whose repetition cannot apply anything twice. */
const REPEATABLE = new Set([...READS, 'TransactWriteItemsCommand']);

export type StoreFailure = 'busy' | 'unavailable';

interface SdkError {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  CancellationReasons?: { Code?: string }[];
  cause?: unknown;
}

/** What kind of store failure an error is, if it is one (see above). */
export function classifyStoreError(error: unknown): StoreFailure | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const e = error as SdkError;
  if (e.name !== undefined && THROTTLING.has(e.name)) return 'busy';
  if (e.$metadata?.httpStatusCode === 429) return 'busy';
  if (e.name === 'TransactionConflictException' || e.name === 'TransactionInProgressException') {
    return 'busy';
  }
  if (e.name === 'TransactionCanceledException') {
    const codes = (e.CancellationReasons ?? []).map((reason) => reason.Code ?? 'None');
    const busy = codes.some((code) => code !== 'None');
    return busy && codes.every((code) => TRANSIENT_REASONS.has(code)) ? 'busy' : undefined;
  }
  if (e.name === 'ServiceUnavailableError') return undefined; // already ours
  const status = e.$metadata?.httpStatusCode ?? 0;
  if (status >= 500) return 'unavailable';
  if (e.code !== undefined && NETWORK_CODES.has(e.code)) return 'unavailable';
  if (e.name === 'TimeoutError' || e.name === 'RequestTimeout' || e.name === 'AbortError') {
    return 'unavailable';
  }
  if (e.cause !== undefined && e.cause !== error) return classifyStoreError(e.cause);
  return undefined;
}

const CANCELLATIONS_TO_CALLER = 'cdpCancellationsToCaller';

/** Marks a transaction whose cancellations its caller handles itself (see above). */
export function leaveCancellationsToCaller(command: TransactWriteCommand): TransactWriteCommand {
  command.middlewareStack.add(
    (next, context) => (args) => {
      (context as Record<string, unknown>)[CANCELLATIONS_TO_CALLER] = true;
      return next(args);
    },
    { step: 'initialize', name: CANCELLATIONS_TO_CALLER, override: true },
  );
  return command;
}

/**
 * The 503 of a store that stayed overloaded or unavailable through the request's budget;
 * `OutcomeUnknownError` when the last write got no answer (it may have been applied).
 */
export function storeUnavailable(
  command: string,
  error: unknown,
  outcomeUnknown = false,
): ServiceUnavailableError {
  logger.warn('DynamoDB stayed unavailable through the retry budget', {
    command,
    outcomeUnknown,
    error: error as Error,
  });
  return outcomeUnknown
    ? new OutcomeUnknownError(
        'The data store did not answer in time: the last write of this request may or may not have been applied, and nothing after it was; try again shortly',
      )
    : new ServiceUnavailableError(
        'The data store is overloaded or unavailable: nothing more of this request was written; try again shortly',
      );
}

/** Installs the retries on a client (its document clients share its middleware stack). */
export function addStoreRetries(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (initial) => {
      const command = context.commandName ?? 'unknown';
      const deadline = currentDeadline();
      const transaction = command === 'TransactWriteItemsCommand';
      const withToken = (args: typeof initial) =>
        ({ ...args, input: { ...args.input, ClientRequestToken: randomUUID() } }) as typeof initial;
      let args = transaction ? withToken(initial) : initial;
      // Once an attempt's outcome is unknown, every later one keeps its token, so that the
      // transaction applies at most once whatever happened to that attempt.
      let uncertain = false;
      for (let attempt = 0; ; attempt += 1) {
        try {
          return await next(args);
        } catch (error) {
          const failure = classifyStoreError(error);
          if (failure === undefined) throw error;
          const cancelled = (error as SdkError).name === 'TransactionCanceledException';
          if (cancelled && (context as Record<string, unknown>)[CANCELLATIONS_TO_CALLER] === true) {
            throw error;
          }
          if (failure === 'unavailable' && !READS.has(command)) uncertain = true;
          if (failure === 'unavailable' && !REPEATABLE.has(command)) {
            throw storeUnavailable(command, error, uncertain);
          }
          const wait = backoffMs(attempt);
          if (!canWait(wait, deadline)) throw storeUnavailable(command, error, uncertain);
          // A refused transaction changed nothing: the next attempt may be a new one.
          if (transaction && !uncertain) args = withToken(args);
          await sleep(wait);
        }
      }
    },
    { step: 'initialize', priority: 'high', name: 'cdpStoreRetries', override: true },
  );
}
