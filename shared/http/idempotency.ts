import { createHash, randomUUID } from 'node:crypto';
import {
  CdpError,
  IdempotencyKeyReusedError,
  RequestInProgressError,
  ValidationError,
} from '../domain/errors.js';
import { logger } from '../lib/logger.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { errorResponse, statusOf } from './error-mapper.js';
import type { HttpResponse } from './responses.js';

/**
 * `Idempotency-Key` on every `POST`/`PUT` under `/v1` (DESIGN.md, Contracts): the first
 * answer (status and body) is kept 24 hours per instance, data source and key (each data
 * source is a client of its own, with its own keys: the IETF draft scopes a key to its
 * client, so two data sources' requests never answer for each other); a repeat with the same
 * request gets it again with `Idempotent-Replayed: true` and changes nothing; the same key
 * with another request (another body or endpoint) is a 422; a repeat while the first is
 * still running is a 409.
 *
 * Answers a retry could change are not kept: a 5xx that applied nothing (the store was
 * unavailable, a fault) is forgotten so that the retry runs, and so is an answer over
 * `MAX_KEPT_BYTES` (a large listing, which changes nothing anyway). A 5xx that reports
 * records applied is kept, so that repeating it cannot apply them twice. A request that dies without answering holds the
 * key until its lease (its time budget) runs out; a repeat then runs it again.
 *
 * Why not Powertools' idempotency utility: its newest version in the registry (2.35.0) has
 * its Middy middleware delete records it never acquired (a rejected duplicate removes the
 * lock of the request still running, aws-powertools/powertools-lambda-typescript#5675), it
 * keys records by a payload the handler may change (#5717), and its key cannot include the
 * instance without rewriting the event. This small layer does what the contract says.
 */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;
export const MAX_KEPT_BYTES = 300 * 1024;
const MAX_KEY_LENGTH = 255;

export interface KeptResponse {
  statusCode: number;
  body: string;
}

export type BeginResult =
  | { kind: 'started'; token: string }
  | { kind: 'replay'; response: KeptResponse }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' };

/** Where idempotency records live (the requests table). Keys are hashed; scoped per instance. */
export interface IdempotencyStore {
  /** Takes the key for a new request, or says what holds it. */
  begin(
    instanceId: string,
    keyHash: string,
    fingerprint: string,
    token: string,
    leaseUntil: number,
  ): Promise<BeginResult>;
  /** Keeps the answer (if the key is still this request's). */
  complete(
    instanceId: string,
    keyHash: string,
    token: string,
    response: KeptResponse,
  ): Promise<void>;
  /** Gives the key up (if it is still this request's), so that a repeat runs again. */
  release(instanceId: string, keyHash: string, token: string): Promise<void>;
  /** The record of a key, if any (strongly consistent). */
  peek(instanceId: string, keyHash: string): Promise<KeptRecord | undefined>;
}

/** What a record says: the request it is for and, once answered, the answer. */
export interface KeptRecord {
  fingerprint: string;
  response?: KeptResponse;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The header's value, checked: 1 to 255 visible ASCII characters. */
export function idempotencyKeyOf(headers: Record<string, string | undefined>): string | undefined {
  const key = headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
    throw new ValidationError(
      `Idempotency-Key: expected 1 to ${MAX_KEY_LENGTH} visible ASCII characters (a UUID, say)`,
      [{ field: 'Idempotency-Key', error: 'invalid header value' }],
    );
  }
  return key;
}

export interface IdempotentCall {
  store: IdempotencyStore;
  instanceId: string;
  /** The data source of the request's API key: keys are its own. */
  dataSource: string;
  key: string;
  /** The route and the parsed body: what makes two requests "the same". */
  route: string;
  body: unknown;
  requestId: string;
  /** The request's API key: masked in a kept error answer that quotes it (error-mapper.ts). */
  secret?: string;
  /** Until when the key is held for this request if it never answers. */
  leaseUntil: number;
  /**
   * What of a successful answer's body is kept for repeats (all of it by default): an answer
   * that shows a secret once keeps it without the secret.
   */
  keep?: (body: string) => string;
}

const REPLAYED = 'idempotent-replayed';

/** Statuses of records a request that stopped part-way did not apply. */
const UNAPPLIED = new Set(['invalid', 'not_applied', 'unchanged']);

/**
 * Which error answers are kept: every one below 500, and a 5xx that reports records already
 * applied (so that a repeat does not apply them again: send the rest with a new key). A 5xx
 * that applied nothing is forgotten, so that a retry with the same key runs again.
 */
function isKept(error: unknown): error is CdpError {
  if (!(error instanceof CdpError)) return false;
  if (statusOf(error) < 500) return true;
  return (error.details ?? []).some(
    (detail) => detail.status !== undefined && !UNAPPLIED.has(detail.status),
  );
}

/**
 * Records kept before keys were scoped to their data source (keyed by the key alone) still
 * answer their repeats until they expire (24 hours after the upgrade): a repeat of the same
 * request finds its answer there (or that it still runs), so a retry across the upgrade is
 * not applied twice. A record of another request under that key is another data source's,
 * and no longer in this one's way.
 */
async function keptBeforeScoping(
  call: IdempotentCall,
  keyHash: string,
  fingerprint: string,
  token: string,
): Promise<BeginResult> {
  const legacy = await call.store.peek(call.instanceId, sha256(call.key));
  if (legacy?.fingerprint !== fingerprint) return { kind: 'started', token };
  await call.store.release(call.instanceId, keyHash, token);
  return legacy.response ? { kind: 'replay', response: legacy.response } : { kind: 'in_progress' };
}

/**
 * Runs `answer` at most once per instance, data source and key. `answer` returns the HTTP response;
 * domain errors it throws are kept like answers (below 500) or forgotten (5xx), then thrown
 * on to the error mapper.
 */
export async function runIdempotent(
  call: IdempotentCall,
  answer: () => Promise<HttpResponse>,
): Promise<HttpResponse> {
  const keyHash = sha256(`${call.dataSource}\n${call.key}`);
  const fingerprint = sha256(`${call.route}\n${canonicalJson(call.body)}`);
  const token = randomUUID();
  let begun = await call.store.begin(call.instanceId, keyHash, fingerprint, token, call.leaseUntil);
  if (begun.kind === 'started') begun = await keptBeforeScoping(call, keyHash, fingerprint, token);
  if (begun.kind === 'mismatch') {
    throw new IdempotencyKeyReusedError(
      'Idempotency-Key: this key was already used with a different request (another body or endpoint); use a new key for a new request',
      [{ field: 'Idempotency-Key', error: 'reused with a different request' }],
    );
  }
  if (begun.kind === 'in_progress') {
    throw new RequestInProgressError(
      'Idempotency-Key: a request with this key is still in progress; retry when it has finished',
      [{ field: 'Idempotency-Key', error: 'in progress' }],
    );
  }
  if (begun.kind === 'replay') {
    return {
      statusCode: begun.response.statusCode,
      headers: { 'content-type': 'application/json; charset=utf-8', [REPLAYED]: 'true' },
      body: begun.response.body,
    };
  }
  const settle = async (response: KeptResponse | undefined) => {
    try {
      if (response && Buffer.byteLength(response.body) <= MAX_KEPT_BYTES) {
        await call.store.complete(call.instanceId, keyHash, token, response);
      } else {
        await call.store.release(call.instanceId, keyHash, token);
      }
    } catch (error) {
      // The answer stands; the key stays held until its lease ends, then a repeat runs again.
      logger.warn('Could not record the idempotent answer', {
        requestId: call.requestId,
        error: error as Error,
      });
    }
  };
  let response: HttpResponse;
  try {
    response = await answer();
  } catch (error) {
    const kept = isKept(error)
      ? errorResponse(error, call.requestId, false, call.secret)
      : undefined;
    await settle(kept ? { statusCode: kept.statusCode, body: kept.body } : undefined);
    throw error;
  }
  await settle({
    statusCode: response.statusCode,
    body: call.keep && response.statusCode < 300 ? call.keep(response.body) : response.body,
  });
  return response;
}
