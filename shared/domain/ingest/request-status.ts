import { z } from 'zod';
import { NotFoundError, type ErrorDetail } from '../errors.js';
import type { RecordLedger } from '../merge/merge-engine.js';
import {
  answerOf,
  type JobProgress,
  type LifecycleAction,
  type LifecycleSubject,
} from '../lifecycle/lifecycle.js';

/**
 * What an asynchronous request's caller can learn of it (`POST /v1/async/get`): `queued`
 * once accepted, `processing` while a worker applies it, then `done` with the body the
 * synchronous call would have answered (`result`), or `failed` with the reason. Kept at
 * least 7 days.
 */
export const LIFECYCLE_KINDS = [
  'person-archive',
  'person-restore',
  'person-delete',
  'organizations-archive',
  'organizations-restore',
  'organizations-delete',
  // `DELETE /v1/accounts/delete` (its answer's names).
  'accounts-delete',
] as const;
export type LifecycleKind = (typeof LIFECYCLE_KINDS)[number];
export const REQUEST_KINDS = [
  'person-merge',
  'organizations-merge',
  // `POST /v1/accounts/merge`: organizations under the accounts names (its answer's shape).
  'accounts-merge',
  'activities-create',
  // `PUT /v1/audience/subscribe` with `async: true` (docs/audiences.md).
  'audience-subscribe',
  ...LIFECYCLE_KINDS,
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

export const isLifecycleKind = (kind: string): kind is LifecycleKind =>
  (LIFECYCLE_KINDS as readonly string[]).includes(kind);

/** The subject and action of a background archive, restore or delete. */
export function lifecycleOf(kind: LifecycleKind): {
  subject: LifecycleSubject;
  action: LifecycleAction;
} {
  const [subject, action] = kind.split('-') as [string, LifecycleAction];
  return {
    subject:
      subject === 'person' ? 'people' : subject === 'accounts' ? 'accounts' : 'organizations',
    action,
  };
}
export type RequestState = 'queued' | 'processing' | 'done' | 'failed';

/** What `RequestStore.start` found: finished before, started by no delivery before, or by one. */
export type StartedAs = 'done' | 'first' | 'processing';

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
  /** How far a background archive, restore or delete has got. */
  progress?: JobProgress;
}

export interface FinishOptions {
  /**
   * Only if no delivery started after the first: for an answer its ledger did not read back
   * (`RecordLedger.unconfirmed`).
   */
  alone?: boolean;
  /** People whose own items name the request (`RecordLedger.carried`): no reference item. */
  carried?: ReadonlySet<string>;
}

/** The port of request states and ledgers (the requests table). */
export interface RequestStore {
  /** Records an accepted request as queued, unless a worker got to it first. */
  queued(instanceId: string, request: Omit<RequestStatus, 'status'>): Promise<void>;
  /**
   * Marks the request processing and says what it was: `done` means an earlier delivery
   * finished it (the worker does nothing more); `first` that no delivery started it before
   * this one (so no record of it can have been applied yet); `processing` that one did.
   */
  start(instanceId: string, request: Omit<RequestStatus, 'status'>): Promise<StartedAs>;
  /**
   * Keeps the request's answer (with references for the people it names: `FinishOptions`) and
   * marks it done; false, and nothing kept, when `alone` and another delivery started.
   */
  finish(
    instanceId: string,
    requestId: string,
    result: unknown,
    options?: FinishOptions,
  ): Promise<boolean>;
  /** Forgets a request that was never queued (only while it is still `queued`). */
  discard(instanceId: string, requestId: string): Promise<void>;
  /** Marks it failed (never one already done). */
  fail(instanceId: string, requestId: string, failure: RequestFailure): Promise<void>;
  get(instanceId: string, requestId: string): Promise<RequestStatus | undefined>;
  /**
   * The ledger of a request: its records' outcomes, so that each applies once. For the
   * delivery that `start` said is the `first`, the outcomes recorded before it are known to
   * be none, and are not read.
   */
  ledger(instanceId: string, requestId: string, firstDelivery?: boolean): RecordLedger;
  /** Where a background archive, restore or delete stands (saved after each page). */
  saveProgress(instanceId: string, requestId: string, progress: JobProgress): Promise<void>;
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
  // A background archive, restore or delete shows its answer so far while it runs.
  const progress =
    isLifecycleKind(found.kind) && (found.status === 'queued' || found.status === 'processing')
      ? (() => {
          const { subject, action } = lifecycleOf(found.kind);
          return {
            progress: answerOf(subject, action, found.records, found.progress?.changed ?? 0),
          };
        })()
      : {};
  return {
    request_id: found.request_id,
    status: found.status,
    ...progress,
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
