import {
  CdpError,
  ConflictError,
  ForbiddenError,
  IdempotencyKeyReusedError,
  IncompleteRequestError,
  InvalidTimeZoneError,
  MethodNotAllowedError,
  MissingApiKeyError,
  NotFoundError,
  NotImplementedError,
  PayloadTooLargeError,
  RateLimitedError,
  ServiceUnavailableError,
  SignInRequiredError,
  UnknownApiKeyError,
  ValidationError,
  WrongRegionError,
  type ErrorDetail,
} from '../domain/errors.js';
import { logger } from '../lib/logger.js';
import { prototypeMemberPath } from './body-checks.js';
import { json, type HttpResponse } from './responses.js';

/**
 * The one place errors become HTTP. Every error response is
 * `{"request_id", "code", "error", "details"?}` with `code` equal to the status. Domain
 * errors keep their message; anything else is logged and answered as a bare 500, so no
 * internals ever reach a client.
 */
const STATUS: [new (...args: never[]) => CdpError, number][] = [
  [InvalidTimeZoneError, 500],
  [IncompleteRequestError, 500],
  [ValidationError, 400],
  [MissingApiKeyError, 401],
  [UnknownApiKeyError, 401],
  [SignInRequiredError, 401],
  [ForbiddenError, 403],
  [NotFoundError, 404],
  [MethodNotAllowedError, 405],
  [ConflictError, 409],
  [PayloadTooLargeError, 413],
  [IdempotencyKeyReusedError, 422],
  // 421 Misdirected Request: the key is valid, but for another regional deployment.
  [WrongRegionError, 421],
  [RateLimitedError, 429],
  [NotImplementedError, 501],
  [ServiceUnavailableError, 503],
];

export function statusOf(error: CdpError): number {
  return STATUS.find(([type]) => error instanceof type)?.[1] ?? 500;
}

/** Errors raised by middy's own middlewares (`createError`) carry a status and `expose`. */
interface MiddyHttpError {
  statusCode: number;
  expose?: boolean;
  cause?: { package?: string; data?: unknown };
}

function isMiddyHttpError(error: unknown): error is Error & MiddyHttpError {
  return (
    error instanceof Error && typeof (error as Partial<MiddyHttpError>).statusCode === 'number'
  );
}

function fromMiddy(
  error: Error & MiddyHttpError,
  body?: () => string | null,
): CdpError | undefined {
  if (error.cause?.package !== '@middy/http-json-body-parser') return undefined;
  if (error.cause.data === undefined || error.cause.data === '') {
    return new ValidationError('A request body is required: send a JSON object', [
      { field: 'body', error: 'missing' },
    ]);
  }
  if (error.message === 'Forbidden key in JSON body') {
    // middy's parser refuses `__proto__` (and `constructor.prototype`) members: valid JSON,
    // but a way to change objects' prototypes. The message names the member by its path.
    const name = typeof error.cause.data === 'string' ? error.cause.data : 'member';
    const text = body?.();
    const member = (typeof text === 'string' && prototypeMemberPath(text)) || name;
    return new ValidationError(
      `Forbidden member "${member}" in the request body: it names an object prototype`,
      [{ field: member, error: 'forbidden member name' }],
    );
  }
  return new ValidationError('Malformed JSON body: the request body must be a JSON object', [
    { field: 'body', error: 'not valid JSON' },
  ]);
}

/**
 * middy's own error when the function's time is nearly up (`timeoutEarlyResponse`): the
 * request ran past its budget (a store slower than every retry allowed for). What it wrote
 * so far stays written, so this is a 503 the client may repeat, not a bare 500.
 */
function fromTimeout(error: unknown): CdpError | undefined {
  if (!(error instanceof Error) || error.name !== 'TimeoutError') return undefined;
  if ((error.cause as { package?: unknown } | undefined)?.package !== '@middy/core') {
    return undefined;
  }
  return new ServiceUnavailableError(
    'The request ran out of time before it finished: part of it may have been applied. ' +
      'Repeating it is safe (merges match the same people; an Idempotency-Key makes any ' +
      'request apply once)',
    undefined,
    5,
  );
}

/** Shorter strings than this are not taken for a key (nothing would be left to read). */
const MIN_SECRET_LENGTH = 8;

/**
 * Masks every occurrence of `secret` (the request's API key) in `text`: a message that quotes
 * the request (a key pasted into a body member by mistake) must put the key neither in the
 * answer nor in the logs.
 */
function masker(secret: string | undefined): (text: string) => string {
  if (secret === undefined || secret.length < MIN_SECRET_LENGTH) return (text) => text;
  return (text) => text.split(secret).join('[redacted]');
}

export function errorResponse(
  error: unknown,
  requestId: string,
  log = true,
  secret?: string,
  /** The request's body as received (JSON text), to name a refused member by its path. */
  body?: () => string | null,
): HttpResponse {
  const known =
    error instanceof CdpError
      ? error
      : isMiddyHttpError(error)
        ? fromMiddy(error, body)
        : fromTimeout(error);
  if (!known) {
    if (log) logger.error('Unexpected error', { requestId, error: error as Error });
    return envelope(500, 'Internal Server Error', requestId);
  }
  const status = statusOf(known);
  const mask = masker(secret);
  const message = mask(known.message);
  const details = known.details?.map((detail) =>
    detail.error === undefined ? detail : { ...detail, error: mask(detail.error) },
  );
  if (!log) {
    // built only to be kept (idempotency); the error mapper logs it when it answers
  } else if (status >= 500) logger.error(message, { requestId, status, error: known.name });
  else logger.info('Request refused', { requestId, status, reason: message });
  const headers: Record<string, string> = {};
  if (known instanceof MethodNotAllowedError) headers.allow = known.allowed.join(', ');
  if (known instanceof ServiceUnavailableError || known instanceof RateLimitedError) {
    headers['retry-after'] = String(known.retryAfterSeconds);
  }
  return envelope(status, message, requestId, details, headers);
}

export function envelope(
  status: number,
  message: string,
  requestId: string,
  details?: ErrorDetail[],
  headers: Record<string, string> = {},
): HttpResponse {
  return json(
    status,
    { request_id: requestId, code: status, error: message, ...(details ? { details } : {}) },
    { 'x-request-id': requestId, ...headers },
  );
}
