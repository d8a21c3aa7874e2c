import { z } from 'zod';
import { stoppedPartWay, ValidationError, type ErrorDetail } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { runBounded } from '../../lib/bounded.js';

/**
 * Archive, restore and delete (GDPR erasure) of people and organizations. The
 * rules live here; what each operation writes is the store's affair (`LifecycleStore`):
 * - archiving takes a record out of listings, searches, counters and member counts, and keeps
 *   its merge-key claims (a merge that finds it is refused, never creates a second record);
 * - restoring puts all of it back;
 * - deleting erases an archived record and everything that names it, and leaves an audit
 *   entry without personal data.
 * `inclusion_ids` (1 to 100) are applied at once; `all_rows_selected` is a background request
 * (the ingest worker runs it page by page, resumable, see `runLifecycleJob`).
 */
export type LifecycleAction = 'archive' | 'restore' | 'delete';
/**
 * Whom an action applies to. `accounts` is organizations under the accounts names, whose
 * delete answers `scheduled_accounts` and `deleted_accounts` (as recorded; the accounts
 * archive and restore answer the organizations names, so they use `organizations`).
 */
export type LifecycleSubject = 'people' | 'organizations' | 'accounts';
export type RecordState = 'active' | 'archived';

export const MAX_INCLUSION_IDS = 100;
export const MAX_EXCLUSION_IDS = 1000;

const id = z.string().regex(ID_PATTERN, 'expected an ID of 24 hexadecimal characters');

/** The body of every archive, restore and delete call. */
export const LifecycleRequest = z
  .object({
    inclusion_ids: z
      .array(id)
      .min(1, `expected 1 to ${MAX_INCLUSION_IDS} IDs`)
      .max(
        MAX_INCLUSION_IDS,
        `expected 1 to ${MAX_INCLUSION_IDS} IDs (use all_rows_selected for more)`,
      )
      .optional(),
    all_rows_selected: z.boolean().optional(),
    exclusion_ids: z
      .array(id)
      .max(MAX_EXCLUSION_IDS, `expected at most ${MAX_EXCLUSION_IDS} IDs`)
      .optional(),
  })
  .superRefine((body, context) => {
    const all = body.all_rows_selected === true;
    if (body.all_rows_selected === false) {
      context.addIssue({
        code: 'custom',
        path: ['all_rows_selected'],
        message: 'expected true (or leave it out and send inclusion_ids)',
      });
    } else if (all && body.inclusion_ids !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['inclusion_ids'],
        message: 'send either inclusion_ids or all_rows_selected, not both',
      });
    } else if (!all && body.inclusion_ids === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['inclusion_ids'],
        message: `expected inclusion_ids (1 to ${MAX_INCLUSION_IDS} IDs) or all_rows_selected: true`,
      });
    }
    if (!all && body.exclusion_ids !== undefined && body.all_rows_selected !== false) {
      context.addIssue({
        code: 'custom',
        path: ['exclusion_ids'],
        message: 'only with all_rows_selected: true',
      });
    }
  });
export type LifecycleRequest = z.infer<typeof LifecycleRequest>;

const NOUNS = { people: 'contacts', organizations: 'organizations', accounts: 'accounts' } as const;
const VERBS = { archive: 'archived', restore: 'restored', delete: 'deleted' } as const;

/**
 * The answer of an action on a subject: `{scheduled_contacts, archived_contacts}` for people
 * archived, `{scheduled_organizations, deleted_organizations}` for organizations deleted, …
 */
export type LifecycleAnswer<
  S extends LifecycleSubject = LifecycleSubject,
  A extends LifecycleAction = LifecycleAction,
> = S extends LifecycleSubject // one shape per subject and action (a union when either is)
  ? A extends LifecycleAction
    ? {
        [
          Member in `scheduled_${(typeof NOUNS)[S]}` | `${(typeof VERBS)[A]}_${(typeof NOUNS)[S]}`
        ]: number;
      }
    : never
  : never;

/** The answer's member names: `scheduled_contacts` and `archived_contacts`, say. */
export function answerOf<S extends LifecycleSubject, A extends LifecycleAction>(
  subject: S,
  action: A,
  scheduled: number,
  changed: number,
): LifecycleAnswer<S, A> {
  const noun = NOUNS[subject];
  // TypeScript types an object with computed member names as a string record: the names
  // are those of LifecycleAnswer by construction.
  return {
    [`scheduled_${noun}`]: scheduled,
    [`${VERBS[action]}_${noun}`]: changed,
  } as LifecycleAnswer<S, A>;
}

/** Where a background request stands: the shard and position it reached, what it changed. */
export interface JobPosition {
  shard: number;
  after?: string;
}

export interface JobProgress extends JobPosition {
  changed: number;
}

/** The audit entry of an erasure: no ID, no value, only what was done and how much. */
export interface AuditEntry {
  action: 'delete';
  subject: LifecycleSubject;
  count: number;
  data_source: string;
  /** The API request or background request that erased them. */
  request_id: string;
  at: string;
}

/** What archive, restore and delete read and write, for one kind of record. */
export interface LifecycleStore {
  /** The state of each existing record of the instance (strongly consistent); others absent. */
  states(instanceId: string, ids: string[]): Promise<Map<string, RecordState>>;
  /** True when this call archived the record; false when it was archived (or gone) already. */
  archive(instanceId: string, id: string): Promise<boolean>;
  /** True when this call restored the record; false when it was not archived (or gone). */
  restore(instanceId: string, id: string): Promise<boolean>;
  /**
   * Erases an archived record and what names it; true when this call erased it, false when
   * it was not there or not archived (or, for an organization, still has people).
   */
  erase(instanceId: string, id: string, keyFields: readonly string[]): Promise<boolean>;
  /**
   * Archived records that erase would still refuse, with why (an organization that has
   * people); read strongly consistent, so a delete is refused whole before it writes.
   */
  heldBack?(instanceId: string, ids: string[]): Promise<Map<string, string>>;
  /** How many records are active and archived (counters, never a scan). */
  totals(instanceId: string): Promise<Record<RecordState, number>>;
  /** The next IDs in a state after a position (one listing shard after another). */
  page(
    instanceId: string,
    state: RecordState,
    position: JobPosition,
    count: number,
  ): Promise<{ ids: string[]; next?: JobPosition }>;
  audit(instanceId: string, entry: AuditEntry): Promise<void>;
}

export interface LifecycleContext<
  S extends LifecycleSubject = LifecycleSubject,
  A extends LifecycleAction = LifecycleAction,
> {
  subject: S;
  action: A;
  instanceId: string;
  dataSource: string;
  requestId: string;
  store: LifecycleStore;
  /** The instance's key fields now: the claims an erased record gives back. */
  keyFields: readonly string[];
  now?: () => Date;
}

/** How many records of one request are written at once. */
const CONCURRENCY = 8;

const nounOf = (subject: LifecycleSubject) => (subject === 'people' ? 'people' : subject);

/** Who an action applies to: active records are archived, archived ones restored or deleted. */
export const sourceState = (action: LifecycleAction): RecordState =>
  action === 'archive' ? 'active' : 'archived';

function apply(context: LifecycleContext, id: string) {
  const { store, action, instanceId } = context;
  return action === 'archive'
    ? store.archive(instanceId, id)
    : action === 'restore'
      ? store.restore(instanceId, id)
      : store.erase(instanceId, id, context.keyFields);
}

/**
 * `inclusion_ids`: every ID is checked first (an unknown one, or one of another instance, is
 * a 400 naming it, and so is a record delete would refuse because it is not archived), then
 * each record is changed in its own conditional write. Records already in the requested
 * state are left alone and not counted. If the store stops the request part-way, the answer
 * is 503 naming which records were changed.
 */
export async function changeRecords<S extends LifecycleSubject, A extends LifecycleAction>(
  ids: string[],
  context: LifecycleContext<S, A>,
): Promise<LifecycleAnswer<S, A>> {
  const { subject, action, instanceId, store } = context;
  const unique = [...new Set(ids)];
  const states = await store.states(instanceId, unique);
  const unknown = unique.filter((one) => !states.has(one));
  if (unknown.length > 0) {
    throw new ValidationError(`inclusion_ids: no such ${nounOf(subject)}: ${unknown.join(', ')}`, [
      { field: 'inclusion_ids', error: `no such ${nounOf(subject)}: ${unknown.join(', ')}` },
    ]);
  }
  if (action === 'delete') {
    const active = unique.filter((one) => states.get(one) === 'active');
    if (active.length > 0) {
      const error = `only archived ${nounOf(subject)} can be deleted; archive these first: ${active.join(', ')}`;
      throw new ValidationError(`inclusion_ids: ${error}`, [{ field: 'inclusion_ids', error }]);
    }
    const held = (await store.heldBack?.(instanceId, unique)) ?? new Map<string, string>();
    if (held.size > 0) {
      const error = `these cannot be deleted: ${[...held].map(([id, why]) => `${id} (${why})`).join(', ')}`;
      throw new ValidationError(`inclusion_ids: ${error}`, [{ field: 'inclusion_ids', error }]);
    }
  }
  const outcomes = new Map<string, boolean>();
  const run = await runBounded(unique, CONCURRENCY, async (one) => {
    outcomes.set(one, await apply(context, one));
  });
  const changed = [...outcomes.values()].filter(Boolean).length;
  if (action === 'delete' && changed > 0) await auditErasure(changed, context);
  if (run.failure) {
    const verb = VERBS[action];
    const details: ErrorDetail[] = ids.map((one, index) => {
      const outcome = outcomes.get(one);
      return outcome === undefined
        ? { index, status: 'not_applied', error: 'not applied: send it again' }
        : { index, status: outcome ? verb : 'unchanged' };
    });
    throw stoppedPartWay(run.failure.error, details);
  }
  if (action === 'delete' && unique.length > 0 && changed < unique.length) {
    // Restored meanwhile by another request (then people may have been linked to it).
    const left = unique.filter((one) => outcomes.get(one) === false);
    const after = await store.states(instanceId, left);
    const blocked = left.filter((one) => after.has(one));
    if (blocked.length > 0) {
      const error = `could not be deleted (restored meanwhile, or an organization that still has people: remove them first): ${blocked.join(', ')}`;
      throw new ValidationError(`inclusion_ids: ${error}`, [{ field: 'inclusion_ids', error }]);
    }
  }
  return answerOf(subject, action, 0, changed);
}

async function auditErasure(count: number, context: LifecycleContext) {
  await context.store.audit(context.instanceId, {
    action: 'delete',
    subject: context.subject === 'accounts' ? 'organizations' : context.subject,
    count,
    data_source: context.dataSource,
    request_id: context.requestId,
    at: (context.now ?? (() => new Date()))().toISOString(),
  });
}

/**
 * How many records an `all_rows_selected` request is about to change: the counter of the
 * state it applies to, less the excluded records in that state.
 */
export async function scheduledCount(
  request: LifecycleRequest,
  context: Pick<LifecycleContext, 'action' | 'instanceId' | 'store'>,
): Promise<number> {
  const { action, instanceId, store } = context;
  const state = sourceState(action);
  const totals = await store.totals(instanceId);
  const excluded = [...new Set(request.exclusion_ids ?? [])];
  const states = excluded.length > 0 ? await store.states(instanceId, excluded) : new Map();
  const skipped = [...states.values()].filter((s) => s === state).length;
  return Math.max(0, totals[state] - skipped);
}

/** The background request said it must go on in another delivery (progress saved). */
export const CONTINUED = Symbol('continued');

export interface JobPorts {
  /** The progress an earlier delivery saved, if any. */
  load(): Promise<JobProgress | undefined>;
  save(progress: JobProgress): Promise<void>;
  /** Queues the request again, to go on from its saved progress. */
  requeue(): Promise<void>;
  /** Whether this delivery may start another page (it always runs one). */
  hasTime(): boolean;
}

const PAGE = 100;

/**
 * An `all_rows_selected` request, in the background: the records in the action's source
 * state, one listing shard after the other, a page of 100 at a time, each record changed by
 * the same conditional write as `inclusion_ids` (so a record met twice, or changed by a
 * concurrent request, is left alone). The position and the count are saved after each page;
 * when this delivery's time is up, the request is queued again and goes on from there, and a
 * delivery that dies part-way is redelivered and goes on from the last page saved. Records
 * created after the request was accepted may or may not be included.
 */
export async function runLifecycleJob<S extends LifecycleSubject, A extends LifecycleAction>(
  request: LifecycleRequest,
  scheduled: number,
  context: LifecycleContext<S, A>,
  ports: JobPorts,
): Promise<LifecycleAnswer<S, A> | typeof CONTINUED> {
  const { subject, action, instanceId, store } = context;
  const excluded = new Set(request.exclusion_ids ?? []);
  let progress: JobProgress = (await ports.load()) ?? { shard: 0, changed: 0 };
  // Every delivery makes headway: a page at least, then more while its time lasts.
  for (let pages = 0; ; pages += 1) {
    if (pages > 0 && !ports.hasTime()) {
      await ports.save(progress);
      await ports.requeue();
      return CONTINUED;
    }
    const page = await store.page(instanceId, sourceState(action), progress, PAGE);
    const ids = page.ids.filter((one) => !excluded.has(one));
    let changed = 0;
    const run = await runBounded(ids, CONCURRENCY, async (one) => {
      if (await apply(context, one)) changed += 1;
    });
    if (action === 'delete' && changed > 0) await auditErasure(changed, context);
    if (run.failure) {
      // What this page changed counts; the page runs again on the next delivery.
      await ports.save({ ...progress, changed: progress.changed + changed });
      throw run.failure.error;
    }
    progress = {
      ...(page.next ?? { shard: Number.POSITIVE_INFINITY }),
      changed: progress.changed + changed,
    };
    if (!page.next) return answerOf(subject, action, scheduled, progress.changed);
    await ports.save(progress);
  }
}
