import { z } from 'zod';
import {
  CdpError,
  ForbiddenError,
  InvalidTimeZoneError,
  NotFoundError,
  ServiceUnavailableError,
  ValidationError,
} from '../errors.js';
import { newId } from '../ids.js';
import type { RecordLedger } from '../merge/merge-engine.js';
import type { Tenant } from '../tenancy.js';
import {
  answerOf,
  CONTINUED,
  type LifecycleAction,
  type LifecycleAnswer,
  type LifecycleSubject,
} from '../lifecycle/lifecycle.js';
import {
  REQUEST_KINDS,
  type RequestFailure,
  type RequestKind,
  type RequestStore,
} from './request-status.js';

/**
 * Asynchronous ingestion (`async: true` on person merge, organizations merge and activities
 * create). Accepting checks the request as the synchronous call would before writing
 * anything, queues it (answering only once it is durably queued), and records it `queued`.
 * A worker then applies it with the same domain code, under a ledger that makes each record
 * take effect once however often the queue delivers the message (`RecordLedger`), and
 * records the answer the synchronous call would have given.
 */
export const IngestMessage = z.object({
  v: z.literal(1),
  request_id: z.string().min(1),
  instance_id: z.string().min(1),
  data_source: z.string().min(1),
  kind: z.enum(REQUEST_KINDS),
  accepted_at: z.iso.datetime(),
  records: z.number().int().min(0),
  body: z.record(z.string(), z.unknown()),
});
export type IngestMessage = z.infer<typeof IngestMessage>;

/** The ingest queue (a payload too large for a message travels by S3: the adapter's affair). */
export interface IngestQueue {
  /**
   * Queues the message durably, or throws: `ServiceUnavailableError` when nothing was queued,
   * `MaybeQueuedError` when the queue never confirmed a send whose outcome is unknown.
   */
  send(message: IngestMessage): Promise<void>;
}

/** The queue never confirmed a send that may nevertheless have been queued. */
export class MaybeQueuedError extends ServiceUnavailableError {}

/**
 * A queued request's body is gone from the payloads bucket (its lifecycle rule removed it
 * after 30 days, or someone deleted it). The API writes a payload before it queues its
 * message, so it was never "not there yet": no later delivery can find it.
 */
export class PayloadLostError extends Error {
  constructor(readonly key: string) {
    super(`the payload ${key} is no longer in the payloads bucket`);
    this.name = 'PayloadLostError';
  }
}

/**
 * Records, once, that a queued request cannot be applied because its body is lost: what an
 * earlier delivery applied (in details), and that the rest never will be. The message is
 * then done: retrying it, or a redrive, could only fail the same way.
 */
export async function recordLostPayload(
  message: Omit<IngestMessage, 'body'>,
  key: string,
  requests: RequestStore,
): Promise<void> {
  const summary = {
    request_id: message.request_id,
    kind: message.kind,
    records: message.records,
    accepted_at: message.accepted_at,
  };
  if ((await requests.start(message.instance_id, summary)) === 'done') return;
  const applied = [...(await requests.ledger(message.instance_id, message.request_id).recorded())]
    .filter(([, outcome]) => outcome.id !== undefined)
    .map(([index, outcome]) => ({
      index,
      status: outcome.status,
      [ID_MEMBERS[message.kind]]: outcome.id,
    }));
  const lost = `its body (${key}) is no longer in the payloads bucket (removed 30 days after the request, or deleted)`;
  await requests.fail(message.instance_id, message.request_id, {
    error:
      applied.length === 0
        ? `The request cannot be applied: ${lost}; nothing of it was applied. Send it again`
        : `The request cannot be applied further: ${lost}; the records in details were applied by an earlier attempt, the others were not and will not be. Send those again`,
    code: 410,
    ...(applied.length > 0 ? { details: applied } : {}),
  });
}

type Queued<Answer> = Answer & { request_id: string };

/** The answer of an accepted request of each kind: the synchronous shape, every entry `queued`. */
export interface QueuedAnswers {
  'person-merge': Queued<{ people: { status: 'queued' }[] }>;
  'organizations-merge': Queued<{ organizations: { status: 'queued' }[] }>;
  'accounts-merge': Queued<{ accounts: { status: 'queued' }[] }>;
  'activities-create': Queued<{ activities: { person_status: 'queued'; status: 'queued' }[] }>;
  'audience-subscribe': Queued<{
    audience_id: string;
    people: { person_status: 'queued'; status: 'queued' }[];
  }>;
  // A background archive, restore or delete: how many records it is about to change.
  'person-archive': Queued<LifecycleAnswer<'people', 'archive'>>;
  'person-restore': Queued<LifecycleAnswer<'people', 'restore'>>;
  'person-delete': Queued<LifecycleAnswer<'people', 'delete'>>;
  'organizations-archive': Queued<LifecycleAnswer<'organizations', 'archive'>>;
  'organizations-restore': Queued<LifecycleAnswer<'organizations', 'restore'>>;
  'organizations-delete': Queued<LifecycleAnswer<'organizations', 'delete'>>;
  'accounts-delete': Queued<LifecycleAnswer<'accounts', 'delete'>>;
}

function queuedAnswer<K extends RequestKind>(
  kind: K,
  records: number,
  requestId: string,
  body: Record<string, unknown>,
): QueuedAnswers[K] {
  const entries = <T extends object>(entry: T) =>
    Array.from({ length: records }, () => ({ ...entry }));
  const scheduled =
    <S extends LifecycleSubject, A extends LifecycleAction>(subject: S, action: A) =>
    () => ({ ...answerOf(subject, action, records, 0), request_id: requestId });
  const answers: { [Kind in RequestKind]: () => QueuedAnswers[Kind] } = {
    'person-merge': () => ({ people: entries({ status: 'queued' }), request_id: requestId }),
    'organizations-merge': () => ({
      organizations: entries({ status: 'queued' }),
      request_id: requestId,
    }),
    'accounts-merge': () => ({ accounts: entries({ status: 'queued' }), request_id: requestId }),
    'activities-create': () => ({
      activities: entries({ person_status: 'queued', status: 'queued' }),
      request_id: requestId,
    }),
    'audience-subscribe': () => ({
      audience_id: typeof body.audience_id === 'string' ? body.audience_id : '',
      people: entries({ person_status: 'queued', status: 'queued' }),
      request_id: requestId,
    }),
    'person-archive': scheduled('people', 'archive'),
    'person-restore': scheduled('people', 'restore'),
    'person-delete': scheduled('people', 'delete'),
    'organizations-archive': scheduled('organizations', 'archive'),
    'organizations-restore': scheduled('organizations', 'restore'),
    'organizations-delete': scheduled('organizations', 'delete'),
    'accounts-delete': scheduled('accounts', 'delete'),
  };
  return answers[kind]();
}

export interface AcceptedRequest<K extends RequestKind = RequestKind> {
  kind: K;
  body: Record<string, unknown>;
  records: number;
  /** The synchronous call's checks (throws what it would answer before writing). */
  check: () => unknown;
}

/**
 * Accepts an asynchronous request: checks it, records it `queued`, queues it, and answers
 * with `queued` entries and its `request_id`. If the queue cannot be reached the answer is
 * 503 and nothing is queued. If the queue never confirmed a send that may have got through,
 * the answer is a 503 naming the `request_id` to look up before sending it again (kept for
 * an `Idempotency-Key`, so a retry with the key is told the same).
 */
export async function acceptIngest<K extends RequestKind>(
  request: AcceptedRequest<K>,
  tenant: Tenant,
  ports: { queue: IngestQueue; requests: RequestStore; now?: () => Date },
): Promise<QueuedAnswers[K]> {
  await request.check();
  const requestId = newId();
  const acceptedAt = (ports.now ?? (() => new Date()))().toISOString();
  const { async: _async, ...body } = request.body;
  const message: IngestMessage = {
    v: 1,
    request_id: requestId,
    instance_id: tenant.instance.id,
    data_source: tenant.dataSource.name,
    kind: request.kind,
    accepted_at: acceptedAt,
    records: request.records,
    body,
  };
  await ports.requests.queued(tenant.instance.id, {
    request_id: requestId,
    kind: request.kind,
    records: request.records,
    accepted_at: acceptedAt,
  });
  try {
    await ports.queue.send(message);
  } catch (error) {
    if (error instanceof MaybeQueuedError) {
      throw new ServiceUnavailableError(
        `The ingest queue did not confirm request ${requestId}: it may be queued. Look it up with POST /v1/async/get before sending it again`,
        [{ field: 'request_id', request_id: requestId, status: 'may_be_queued' }],
        error.retryAfterSeconds,
      );
    }
    await ports.requests.discard(tenant.instance.id, requestId).catch(() => undefined);
    throw error;
  }
  return queuedAnswer(request.kind, request.records, requestId, request.body);
}

/** What applying a request needs: the tenant it came from, and each kind's domain call. */
export interface IngestPorts {
  requests: RequestStore;
  tenantOf(instanceId: string, dataSource: string): Promise<Tenant | undefined>;
  apply: Record<
    RequestKind,
    (body: Record<string, unknown>, tenant: Tenant, queued: QueuedRequest) => Promise<unknown>
  >;
  /** Queues a request again (a background request that goes on in another delivery). */
  requeue(message: IngestMessage): Promise<void>;
}

/** What applying a queued request knows of it beyond its body. */
export interface QueuedRequest {
  ledger: RecordLedger;
  acceptedAt: Date;
  requestId: string;
  /** The request's `records` (for a background request: how many it scheduled). */
  records: number;
  requeue(): Promise<void>;
}

/** What the answer of each kind calls the IDs of its records. */
const ID_MEMBERS: Record<RequestKind, string> = {
  'person-merge': 'person_id',
  'organizations-merge': 'organization_id',
  'accounts-merge': 'account_id',
  'activities-create': 'person_id',
  'audience-subscribe': 'person_id',
  'person-archive': 'person_id',
  'person-restore': 'person_id',
  'person-delete': 'person_id',
  'organizations-archive': 'organization_id',
  'organizations-restore': 'organization_id',
  'organizations-delete': 'organization_id',
  'accounts-delete': 'account_id',
};

/** Errors the request itself causes: applying it again cannot succeed. */
function failureOf(error: unknown): RequestFailure | undefined {
  if (!(error instanceof CdpError)) return undefined;
  const code =
    error instanceof ValidationError
      ? 400
      : error instanceof ForbiddenError
        ? 403
        : error instanceof NotFoundError
          ? 404
          : error instanceof InvalidTimeZoneError
            ? 500
            : undefined;
  if (code === undefined) return undefined;
  return { error: error.message, code, ...(error.details ? { details: error.details } : {}) };
}

/**
 * Applies a queued request (a worker, for each message). A request an earlier delivery
 * finished is left alone; one whose input cannot be applied (as the synchronous call would
 * have refused it) is recorded `failed` with the reason and not retried; anything else
 * (the store unavailable, say) is thrown, so that the message is delivered again.
 */
export async function applyIngest(message: IngestMessage, ports: IngestPorts): Promise<void> {
  const instanceId = message.instance_id;
  const summary = {
    request_id: message.request_id,
    kind: message.kind,
    records: message.records,
    accepted_at: message.accepted_at,
  };
  // Both at once: neither depends on the other, and each is a round trip before any record.
  const [tenant, state] = await Promise.all([
    ports.tenantOf(instanceId, message.data_source),
    ports.requests.start(instanceId, summary),
  ]);
  if (state === 'done') return;
  if (!tenant) {
    await ports.requests.fail(instanceId, message.request_id, {
      error: `the data source "${message.data_source}" of instance ${instanceId} no longer exists`,
      code: 401,
    });
    return;
  }
  let ledger = ports.requests.ledger(instanceId, message.request_id, state === 'first');
  for (;;) {
    let result: unknown;
    try {
      result = await ports.apply[message.kind](message.body, tenant, {
        ledger,
        acceptedAt: new Date(message.accepted_at),
        requestId: message.request_id,
        records: message.records,
        requeue: () => ports.requeue(message),
      });
    } catch (error) {
      const failure = failureOf(error);
      if (!failure) throw error;
      await recordFailure(message, failure, ledger, ports.requests);
      return;
    }
    // A background request that goes on in another delivery (queued again) is not done yet.
    if (result === CONTINUED) return;
    const finished = await ports.requests.finish(instanceId, message.request_id, result, {
      alone: ledger.unconfirmed === true,
      ...(ledger.carried ? { carried: ledger.carried } : {}),
    });
    if (finished) return;
    // A delivery that started after this one may have applied records this one found nothing
    // to do for: the request is applied again under its whole ledger (every record is in it,
    // so nothing applies twice), and that answer is kept.
    ledger = ports.requests.ledger(instanceId, message.request_id);
  }
}

/**
 * Records that a request cannot be applied, as the synchronous call would have refused it. An
 * earlier delivery may have applied records before the request became unapplicable (its
 * configuration changed): the failure says which.
 */
async function recordFailure(
  message: IngestMessage,
  failure: RequestFailure,
  ledger: RecordLedger,
  requests: RequestStore,
) {
  const applied = await ledger.recorded();
  const written = [...applied].filter(([, outcome]) => outcome.id !== undefined);
  await requests.fail(
    message.instance_id,
    message.request_id,
    written.length === 0
      ? failure
      : {
          ...failure,
          error: `${failure.error} (records an earlier attempt applied are listed in details)`,
          details: written.map(([index, outcome]) => ({
            index,
            status: outcome.status,
            [ID_MEMBERS[message.kind]]: outcome.id,
          })),
        },
  );
}
