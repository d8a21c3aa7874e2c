import { acceptIngest, type IngestQueue, type QueuedRequest } from '../ingest/ingest.js';
import { lifecycleOf, type LifecycleKind, type RequestStore } from '../ingest/request-status.js';
import { ORGANIZATION_KEY_FIELDS } from '../organizations/organization-merge.js';
import { keyFieldsOf } from '../people/person.js';
import type { Tenant } from '../tenancy.js';
import { parseWith } from '../validation.js';
import { currentDeadline } from '../../lib/time-budget.js';
import {
  answerOf,
  changeRecords,
  CONTINUED,
  LifecycleRequest,
  runLifecycleJob,
  scheduledCount,
  type LifecycleAction,
  type LifecycleAnswer,
  type LifecycleContext,
  type LifecycleStore,
  type LifecycleSubject,
} from './lifecycle.js';

/**
 * The calls of archive, restore and delete: the endpoints (`changeLifecycle`) and the
 * ingest worker's background requests (`applyLifecycleJob`).
 */
function contextOf<S extends LifecycleSubject, A extends LifecycleAction>(
  subject: S,
  action: A,
  tenant: Tenant,
  requestId: string,
  store: LifecycleStore,
): LifecycleContext<S, A> {
  return {
    subject,
    action,
    instanceId: tenant.instance.id,
    dataSource: tenant.dataSource.name,
    requestId,
    store,
    keyFields: subject === 'people' ? keyFieldsOf(tenant.instance) : ORGANIZATION_KEY_FIELDS,
  };
}

const kindOf = (subject: LifecycleSubject, action: LifecycleAction): LifecycleKind =>
  subject === 'accounts' && action === 'delete'
    ? 'accounts-delete'
    : `${subject === 'people' ? 'person' : 'organizations'}-${action}`;

/**
 * `PUT /v1/person/archive` and the rest: `inclusion_ids` are changed before the answer;
 * `all_rows_selected` is queued as a background request (the ingest queue) and answered at
 * once with how many records it is about to change and its `request_id`.
 */
export async function changeLifecycle<S extends LifecycleSubject, A extends LifecycleAction>(
  request: LifecycleRequest,
  call: {
    subject: S;
    action: A;
    tenant: Tenant;
    requestId: string;
    store: LifecycleStore;
    ingest: { queue: IngestQueue; requests: RequestStore };
  },
): Promise<LifecycleAnswer<S, A> | (LifecycleAnswer<S, A> & { request_id: string })> {
  const context = contextOf(call.subject, call.action, call.tenant, call.requestId, call.store);
  if (request.inclusion_ids) return changeRecords(request.inclusion_ids, context);
  const scheduled = await scheduledCount(request, context);
  const accepted = await acceptIngest(
    {
      kind: kindOf(call.subject, call.action),
      body: { all_rows_selected: true, exclusion_ids: request.exclusion_ids ?? [] },
      records: scheduled,
      check: () => undefined,
    },
    call.tenant,
    call.ingest,
  );
  // The queued answer of the request's kind (ingest.ts), typed by this call's subject and
  // action, which TypeScript cannot follow through the kind's name.
  return { ...answerOf(call.subject, call.action, scheduled, 0), request_id: accepted.request_id };
}

/** How long one delivery of a background request works before it queues the rest. */
export const DEFAULT_SLICE_MS = 20_000;
/** What a delivery keeps for saving its progress and queueing the rest. */
const SLICE_MARGIN_MS = 10_000;

/**
 * A background archive, restore or delete (the ingest worker): runs from the progress an
 * earlier delivery saved for up to `sliceMs`, then queues the rest (`CONTINUED`).
 */
export async function applyLifecycleJob(
  kind: LifecycleKind,
  body: Record<string, unknown>,
  tenant: Tenant,
  queued: QueuedRequest,
  ports: { store: LifecycleStore; requests: RequestStore; sliceMs?: number },
): Promise<LifecycleAnswer | typeof CONTINUED> {
  const { subject, action } = lifecycleOf(kind);
  const request = parseWith(LifecycleRequest, body, 'request body');
  const context = contextOf(subject, action, tenant, queued.requestId, ports.store);
  const instanceId = tenant.instance.id;
  const sliceEnd = Math.min(
    Date.now() + (ports.sliceMs ?? DEFAULT_SLICE_MS),
    currentDeadline() - SLICE_MARGIN_MS,
  );
  return runLifecycleJob(request, queued.records, context, {
    load: async () => (await ports.requests.get(instanceId, queued.requestId))?.progress,
    save: (progress) => ports.requests.saveProgress(instanceId, queued.requestId, progress),
    requeue: () => queued.requeue(),
    hasTime: () => Date.now() < sliceEnd,
  });
}
