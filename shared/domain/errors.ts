/**
 * The one error taxonomy of the API. Domain code throws these; `shared/http/error-mapper.ts`
 * is the only place that turns them into HTTP statuses and the `{request_id, code, error}`
 * envelope. Anything that is not one of these becomes a generic 500 with no internals.
 */

/**
 * One part of a request an error reports on: a record (`index`), a field, or both. Bad input
 * names what was wrong (`status: "invalid"`); a request that stopped part-way (503) reports
 * every record, applied ones with their status and ID, the others `status: "not_applied"`.
 */
export interface ErrorDetail {
  index?: number;
  field?: string;
  status?: string;
  error?: string;
  person_id?: string;
  organization_id?: string;
  /** An organization's ID under the accounts names (`/v1/accounts/…`). */
  account_id?: string;
  activity_id?: string;
  request_id?: string;
  message_id?: string;
}

export abstract class CdpError extends Error {
  readonly details: ErrorDetail[] | undefined;

  constructor(message: string, details?: ErrorDetail[]) {
    super(message);
    this.name = new.target.name;
    this.details = details;
  }
}

/** Bad input: the message names the field and what was wrong with it. */
export class ValidationError extends CdpError {}

/** A field value that cannot be read as the field's type. */
export class FieldValueError extends ValidationError {
  constructor(
    readonly fieldId: string,
    readonly problem: string,
  ) {
    super(`${fieldId}: ${problem}`, [{ field: fieldId, error: problem }]);
  }
}

/**
 * A `dtz` value whose time zone is not in the spec's list. The spec prescribes
 * `500 Internal Server Error` for it, so it is its own class; `details` still names the field.
 */
export class InvalidTimeZoneError extends CdpError {
  constructor(
    readonly fieldId: string,
    readonly timezone: string,
  ) {
    super('Internal Server Error', [
      { field: fieldId, error: `"${timezone}" is not a valid time zone` },
    ]);
  }
}

export class MissingApiKeyError extends CdpError {
  constructor() {
    super('Missing API key: send it in the X-Api-Key header');
  }
}

export class UnknownApiKeyError extends CdpError {
  constructor() {
    super('Invalid API key');
  }
}

/**
 * A console request without a valid sign-in: no `Authorization: Bearer` token, or one that
 * is not a current ID token of the console's identity provider (401).
 */
export class SignInRequiredError extends CdpError {
  constructor(
    problem = 'send the ID token of your console sign-in as Authorization: Bearer <token>',
  ) {
    super(`Sign in to the console: ${problem}`);
  }
}

/** A key of an instance that lives in another region: the caller must use that region's address. */
export class WrongRegionError extends CdpError {
  constructor(
    readonly keyRegion: string,
    readonly baseUrl: string,
  ) {
    super(
      `This API key belongs to an instance in the ${keyRegion} region: send requests to ${baseUrl}`,
    );
  }
}

/** A feature or plan the instance does not have (texts as the spec gives them). */
export class ForbiddenError extends CdpError {}

export class NotFoundError extends CdpError {}

export class MethodNotAllowedError extends CdpError {
  constructor(
    readonly method: string,
    readonly allowed: string[],
  ) {
    super(`Method ${method} is not allowed here; allowed: ${allowed.join(', ')}`);
  }
}

export class PayloadTooLargeError extends CdpError {
  constructor(
    readonly limitBytes: number,
    what = 'Request body',
  ) {
    super(`${what} is larger than the limit of ${limitBytes} bytes`);
  }
}

/** A concurrent change won; the caller may retry. */
export class ConflictError extends CdpError {}

/** A request with the same `Idempotency-Key` is still being answered (409). */
export class RequestInProgressError extends ConflictError {}

/** An `Idempotency-Key` reused with a different request body (422). */
export class IdempotencyKeyReusedError extends CdpError {}

/**
 * The store (or a queue) stayed unavailable through every retry the request's time budget
 * allowed (503 with `Retry-After`). When the request stopped part-way, `details` says per
 * record what was applied (with its ID and status) and what was not; nothing of the request
 * is written after the answer.
 */
export class ServiceUnavailableError extends CdpError {
  constructor(
    message: string,
    details?: ErrorDetail[],
    readonly retryAfterSeconds = 2,
  ) {
    super(message, details);
  }
}

/**
 * A 503 after a write the store did not answer (no answer in time, a 5xx, a connection cut
 * once the call went out): it may or may not have been applied. Work that counts what it
 * applied (room reserved in an organization) counts it as possibly applied.
 */
export class OutcomeUnknownError extends ServiceUnavailableError {}

/**
 * The API key made more requests than its instance's `rate_limit` allows (429 with
 * `Retry-After`: whole seconds until the key may make a request again, at least 1).
 */
export class RateLimitedError extends CdpError {
  constructor(
    readonly retryAfterSeconds: number,
    readonly limit: { requests_per_second: number; burst: number },
  ) {
    super(
      `Rate limit exceeded: this API key may make ${plural(limit.requests_per_second, 'request')} per second (bursts of ${limit.burst}); retry after ${plural(retryAfterSeconds, 'second')}`,
    );
  }
}

/** An address that tried too many keys no one holds: refused for a while (429). */
export class TooManyUnknownKeysError extends RateLimitedError {
  constructor(retryAfterSeconds: number, limit: { requests_per_second: number; burst: number }) {
    super(retryAfterSeconds, limit);
    this.message = `Too many requests with unknown API keys from this address: retry after ${plural(retryAfterSeconds, 'second')}`;
  }
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** An unexpected fault part-way through a request: a 500 whose `details` say what was applied. */
export class IncompleteRequestError extends CdpError {
  constructor(details: ErrorDetail[]) {
    super('Internal Server Error', details);
  }
}

export class NotImplementedError extends CdpError {
  constructor(what: string) {
    super(`${what} is not implemented yet`);
  }
}

/**
 * The error of a request that stopped part-way: 503 (with `Retry-After`) when the store
 * stayed unavailable, bad input as itself (with the records' details), a 500 for anything
 * else; `details` report every record.
 */
export function stoppedPartWay(cause: unknown, details: ErrorDetail[]): CdpError {
  if (cause instanceof ValidationError) return new ValidationError(cause.message, details);
  if (cause instanceof ForbiddenError || cause instanceof InvalidTimeZoneError) return cause;
  if (cause instanceof ServiceUnavailableError) {
    return new ServiceUnavailableError(
      'The data store is overloaded or unavailable: the request stopped part-way and nothing more of it will be written; details says which records were applied; send the others again shortly',
      details,
      cause.retryAfterSeconds,
    );
  }
  return new IncompleteRequestError(details);
}
