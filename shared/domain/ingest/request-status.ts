import { z } from 'zod';
import { NotFoundError, type ErrorDetail } from '../errors.js';
import type { RecordLedger } from '../merge/merge-engine.js';

/**
 * What an asynchronous request's caller can learn of it (`POST /v1/async/get`): `queued`
 * once accepted, `processing` while a worker applies it, then `done` with the body the
 * synchronous call would have answered (`result`), or `failed` with the reason. Kept at
 * least 7 days.
 */
export const REQUEST_KINDS = [
  'person-merge',
  'organizations-merge',
  // `POST /v1/accounts/merge`: organizations under the accounts names (its answer's shape).
  'accounts-merge',
  'activities-create',
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
export type RequestState = 'queued' | 'processing' | 'done' | 'failed';

export interface RequestFailure {
  error: string;
  /** The HTTP status the synchronous call would have answered. */
  code: number;
  details?: ErrorDetail[];
}

export interface RequestStatus {
  request_id: string;
  kind: RequestKind;
  status: RequestState;
  records: number;
  accepted_at: string;
  result?: unknown;
  failure?: RequestFailure;
}

/** The port of request states and ledgers (the requests table). */
export interface RequestStore {
  /** Records an accepted request as queued, unless a worker got to it first. */
  queued(instanceId: string, request: Omit<RequestStatus, 'status'>): Promise<void>;
  /**
   * Marks the request processing and says what it was: `done` means an earlier delivery
   * finished it (the worker does nothing more).
   */
  start(instanceId: string, request: Omit<RequestStatus, 'status'>): Promise<RequestState>;
  finish(instanceId: string, requestId: string, result: unknown): Promise<void>;
  /** Forgets a request that was never queued (only while it is still `queued`). */
  discard(instanceId: string, requestId: string): Promise<void>;
  /** Marks it failed (never one already done). */
  fail(instanceId: string, requestId: string, failure: RequestFailure): Promise<void>;
  get(instanceId: string, requestId: string): Promise<RequestStatus | undefined>;
  /** The ledger of a request: its records' outcomes, so that each applies once. */
  ledger(instanceId: string, requestId: string): RecordLedger;
}

export const AsyncGetRequest = z.object({
  request_id: z.string().min(1, 'expected the request_id of an asynchronous request').max(64),
});
export type AsyncGetRequest = z.infer<typeof AsyncGetRequest>;

/** `POST /v1/async/get`; 404 for an unknown ID or another instance's (the same answer). */
export async function getAsyncRequest(
  request: AsyncGetRequest,
  instanceId: string,
  store: Pick<RequestStore, 'get'>,
) {
  const found = await store.get(instanceId, request.request_id);
  if (!found) {
    throw new NotFoundError(`request_id: no asynchronous request ${request.request_id}`, [
      { field: 'request_id', error: 'not found' },
    ]);
  }
  return {
    request_id: found.request_id,
    status: found.status,
    ...(found.status === 'done' ? { result: found.result } : {}),
    ...(found.status === 'failed' && found.failure
      ? {
          error: found.failure.error,
          code: found.failure.code,
          ...(found.failure.details ? { details: found.failure.details } : {}),
        }
      : {}),
  };
}
