import { z } from 'zod';
import { logger } from '../../lib/logger.js';
import { dependsOnTime } from '../filters/filter.js';
import type { Person } from '../people/person.js';
import {
  BUILD_SHARDS,
  SHARD_DONE,
  doneShards,
  type Audience,
  type AudienceStore,
} from './audience.js';
import { settledByBuild, type LiveAudience, type Membership } from './membership.js';

/**
 * The background work of audiences, one message at a time on the audience-jobs queue
 * (docs/audiences.md). Each message does a slice of work, records how far it got where a
 * repeat of it finds that out, and queues what follows: a message handled twice (SQS
 * delivers at least once) does no harm.
 *
 * - `build`: walks one listing shard a page at a time. A first build (a filter never changed,
 *   with no time condition) reads each page's people and their memberships of the audience
 *   and settles those the filter leaves as they are (most people of most audiences); every
 *   other person is asked to be evaluated for the filter version (the audience worker decides
 *   and counts them, in order with the person's own changes). Each page moves the shard's
 *   cursor, the build's `queued` count and its `decided` count in one conditional write.
 * - `finish`: once every shard is queued, waits for every queued person to be evaluated, then
 *   records the build finished (`last_built_at`).
 * - `dispose`: removes a deleted audience's members and counters.
 * - `recheck-all` (daily, from the schedule) and `recheck`: asks for the people whose
 *   memberships can change with time alone that day (their markers) to be evaluated.
 */
const instance = z.string().min(1);
const audience = z.string().min(1);

export const AudienceJob = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('build'),
    instance_id: instance,
    audience_id: audience,
    version: z.number().int(),
    shard: z
      .number()
      .int()
      .min(0)
      .max(BUILD_SHARDS - 1),
  }),
  z.object({
    kind: z.literal('finish'),
    instance_id: instance,
    audience_id: audience,
    version: z.number().int(),
    attempt: z.number().int().min(0),
  }),
  z.object({
    kind: z.literal('dispose'),
    instance_id: instance,
    audience_id: audience,
    shard: z
      .number()
      .int()
      .min(0)
      .max(BUILD_SHARDS - 1),
  }),
  z.object({
    kind: z.literal('recheck-all'),
    // A day, or the schedule's time (`<aws.scheduler.scheduled-time>`): its day is the one.
    day: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}/, 'expected a day (YYYY-MM-DD) or a time')
      .transform((value) => value.slice(0, 10))
      .optional(),
  }),
  z.object({
    kind: z.literal('recheck'),
    instance_id: instance,
    day: z.string(),
    shard: z
      .number()
      .int()
      .min(0)
      .max(BUILD_SHARDS - 1),
    after: z.string().optional(),
  }),
]);
export type AudienceJob = z.infer<typeof AudienceJob>;

export interface AudienceJobPorts {
  audiences: Pick<AudienceStore, 'get' | 'counters' | 'list'> & {
    /**
     * Moves a build's shard cursor from `from` to `to` and adds `queued`, if the build is still
     * `version` and the cursor still `from`; false otherwise (a repeat, or a newer build).
     */
    advanceBuild(
      instanceId: string,
      audience: Audience,
      shard: number,
      from: string,
      to: string,
      queued: number,
      decided: number,
    ): Promise<boolean>;
    /** The audience's filters compiled for the instance; undefined if they no longer compile. */
    live(instanceId: string, audience: Audience): Promise<LiveAudience | undefined>;
    finishBuild(instanceId: string, audience: Audience, at: string): Promise<void>;
    removeCounters(instanceId: string, audienceId: string): Promise<void>;
    /** Instances that have (or had) audiences whose filters depend on time. */
    timedInstances(): Promise<string[]>;
  };
  people: {
    /** A page of people IDs of one listing shard, after `after`, in ID order. */
    listPage(
      instanceId: string,
      shard: number,
      after: string | undefined,
      count: number,
    ): Promise<{ ids: string[]; hasMore: boolean }>;
  };
  memberships: {
    /**
     * Each person's membership of the audience (read first) and the person (read after it),
     * both strongly consistent; a person erased has none.
     */
    readForBuild(
      instanceId: string,
      personIds: readonly string[],
      audienceId: string,
    ): Promise<Map<string, { membership?: Membership; person?: Person }>>;
    requestEvaluation(
      instanceId: string,
      personIds: readonly string[],
      reason: { build: { audienceId: string; version: number } } | { recheck: string },
    ): Promise<void>;
    dueForRecheck(
      instanceId: string,
      day: string,
      shard: number,
      after: string | undefined,
      count: number,
    ): Promise<{ personIds: string[]; last?: string }>;
    /** A page of a members-index shard's member IDs, and removes their memberships. */
    disposeMembers(
      instanceId: string,
      audienceId: string,
      shard: number,
      count: number,
    ): Promise<number>;
  };
  queue: { send(job: AudienceJob, delaySeconds?: number): Promise<void> };
  now(): number;
  /** How long one message may keep working before it queues the rest. */
  sliceMs: number;
}

/** People asked for per page (25 evaluation requests to a batch write). */
export const JOB_PAGE = 500;
/**
 * A walked build checks whether its last evaluations are in after 1, 2, 4 and 8 s, then every
 * 10 s: it is recorded as built at most ~10 s after the worker's last acknowledgement (every
 * 60 s until 2026-11-29, which kept a build the stream had finished waiting up to a minute).
 */
export const FINISH_RECHECK_MAX_SECONDS = 10;
/** Checks a walked build makes (~55 min) before it is recorded as built anyway. */
export const FINISH_PATIENCE_ATTEMPTS = 334;

/** The wait before a walked build's next check (seconds). */
export function finishRecheckDelaySeconds(attempt: number): number {
  return Math.min(FINISH_RECHECK_MAX_SECONDS, 2 ** attempt);
}

/** Markers of the last days are read each day: a day the job did not run is caught up. */
export const RECHECK_DAYS = 7;

const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export async function runAudienceJob(job: AudienceJob, ports: AudienceJobPorts): Promise<void> {
  switch (job.kind) {
    case 'build':
      return build(job, ports);
    case 'finish':
      return finish(job, ports);
    case 'dispose':
      return dispose(job, ports);
    case 'recheck-all':
      return recheckAll(job.day ?? dayOf(ports.now()), ports);
    case 'recheck':
      return recheck(job, ports);
  }
}

/**
 * A rebuild (a changed filter, a restore) starts this long after the change: a build whose
 * audience changed again meanwhile finds itself replaced before reading anybody, so that a
 * burst of changes costs one build, the last one's.
 */
export const BUILD_DEBOUNCE_SECONDS = 20;

/**
 * Builds of one instance that walk its people at once; a build behind them waits, checking
 * again every `BUILD_WAIT_SECONDS`. In order of start (then ID), so none waits forever.
 */
export const MAX_CONCURRENT_BUILDS = 2;
export const BUILD_WAIT_SECONDS = 30;

/** Every shard of a new build, queued at once (the shards are walked in parallel). */
export async function startBuild(
  instanceId: string,
  audienceId: string,
  version: number,
  queue: AudienceJobPorts['queue'],
  delaySeconds = 0,
): Promise<void> {
  await Promise.all(
    Array.from({ length: BUILD_SHARDS }, (_, shard) =>
      queue.send(
        {
          kind: 'build',
          instance_id: instanceId,
          audience_id: audienceId,
          version,
          shard,
        },
        delaySeconds,
      ),
    ),
  );
}

/** Whether `audience`'s build waits for other builds of its instance (at most two run). */
async function waitsForOthers(
  instanceId: string,
  audience: Audience,
  ports: AudienceJobPorts,
): Promise<boolean> {
  const key = (a: Audience) => `${a.build.started_at}\u0000${a.id}`;
  const mine = key(audience);
  const ahead = (await ports.audiences.list(instanceId)).filter(
    (other) =>
      other.id !== audience.id &&
      !other.archived_at &&
      other.build.finished_at === undefined &&
      key(other) < mine,
  );
  return ahead.length >= MAX_CONCURRENT_BUILDS;
}

export async function startDisposal(
  instanceId: string,
  audienceId: string,
  queue: AudienceJobPorts['queue'],
): Promise<void> {
  await Promise.all(
    Array.from({ length: BUILD_SHARDS }, (_, shard) =>
      queue.send({ kind: 'dispose', instance_id: instanceId, audience_id: audienceId, shard }),
    ),
  );
}

async function build(
  job: Extract<AudienceJob, { kind: 'build' }>,
  ports: AudienceJobPorts,
): Promise<void> {
  const started = ports.now();
  let live: Promise<LiveAudience | undefined> | undefined;
  let longestPage = 0;
  const current = await ports.audiences.get(job.instance_id, job.audience_id);
  // Deleted, archived or changed again since it was queued (debounced): nothing to do.
  if (!current || current.archived_at || current.build.version !== job.version) return;
  if (await waitsForOthers(job.instance_id, current, ports)) {
    await ports.queue.send(job, BUILD_WAIT_SECONDS);
    return;
  }
  for (;;) {
    // A page that would end past the slice is left to the next message: a slow store makes
    // pages slow, and a message that outlives its function's time is tried again from where
    // its last page left, until it goes to the dead-letter queue.
    if (longestPage > 0 && ports.now() - started + longestPage > ports.sliceMs) {
      await ports.queue.send(job);
      return;
    }
    const pageStarted = ports.now();
    const audience = await ports.audiences.get(job.instance_id, job.audience_id);
    // Deleted, archived or rebuilt since: this build has nothing more to do.
    if (!audience || audience.archived_at || audience.build.version !== job.version) return;
    const from = audience.build.cursors[String(job.shard)] ?? '';
    if (from === SHARD_DONE) return;
    const page = await ports.people.listPage(
      job.instance_id,
      job.shard,
      from === '' ? undefined : from,
      JOB_PAGE,
    );
    if (screens(audience)) live ??= ports.audiences.live(job.instance_id, audience);
    const compiled = live ? await live : undefined;
    const asked = compiled ? await unsettled(job.instance_id, page.ids, compiled, ports) : page.ids;
    await ports.memberships.requestEvaluation(job.instance_id, asked, {
      build: { audienceId: audience.id, version: job.version },
    });
    const to = page.hasMore ? (page.ids.at(-1) ?? from) : SHARD_DONE;
    // A repeat of this page (or a newer build) finds the cursor moved: it counts once.
    const advanced = await ports.audiences.advanceBuild(
      job.instance_id,
      audience,
      job.shard,
      from,
      to,
      page.ids.length,
      page.ids.length - asked.length,
    );
    longestPage = Math.max(longestPage, ports.now() - pageStarted);
    if (!advanced) continue;
    if (to === SHARD_DONE) {
      await ports.queue.send({
        kind: 'finish',
        instance_id: job.instance_id,
        audience_id: job.audience_id,
        version: job.version,
        attempt: 0,
      });
      return;
    }
  }
}

/**
 * Whether a build may settle people itself. Only while the filters are the audience's first
 * (version 1): the audience worker reads the instance's audiences once per batch, so a batch
 * begun before a filter change may still decide by the old filter after the build's read; the
 * stream orders such a decision before the build's own request, not before a read. And not
 * when time alone can change the answer: the worker keeps each person's day to re-evaluate.
 */
function screens(audience: Audience): boolean {
  return (
    audience.version === 1 &&
    !dependsOnTime(audience.filter) &&
    !dependsOnTime(audience.exit_filter)
  );
}

/** The people of a page the build cannot settle itself (to be evaluated by the worker). */
async function unsettled(
  instanceId: string,
  personIds: readonly string[],
  live: LiveAudience,
  ports: AudienceJobPorts,
): Promise<string[]> {
  const read = await ports.memberships.readForBuild(instanceId, personIds, live.audience.id);
  const now = ports.now();
  return personIds.filter((personId) => {
    const { membership, person } = read.get(personId) ?? {};
    return !settledByBuild(person, membership, live, now);
  });
}

async function finish(
  job: Extract<AudienceJob, { kind: 'finish' }>,
  ports: AudienceJobPorts,
): Promise<void> {
  const audience = await ports.audiences.get(job.instance_id, job.audience_id);
  if (!audience || audience.build.version !== job.version || audience.build.finished_at) return;
  const counters = await ports.audiences.counters(job.instance_id, [audience], ports.now());
  const evaluated = (counters.get(audience.id)?.evaluated ?? 0) + (audience.build.decided ?? 0);
  // Another shard's last page asks again once it is done.
  if (doneShards(audience.build) < BUILD_SHARDS) return;
  if (evaluated >= audience.build.queued || job.attempt >= FINISH_PATIENCE_ATTEMPTS) {
    if (evaluated < audience.build.queued) {
      logger.error('An audience build ends with people not evaluated (see the stream failures)', {
        instance: job.instance_id,
        audience: job.audience_id,
        queued: audience.build.queued,
        evaluated,
      });
    }
    await ports.audiences.finishBuild(
      job.instance_id,
      audience,
      new Date(ports.now()).toISOString(),
    );
    return;
  }
  await ports.queue.send(
    { ...job, attempt: job.attempt + 1 },
    finishRecheckDelaySeconds(job.attempt),
  );
}

async function dispose(
  job: Extract<AudienceJob, { kind: 'dispose' }>,
  ports: AudienceJobPorts,
): Promise<void> {
  const started = ports.now();
  for (;;) {
    const removed = await ports.memberships.disposeMembers(
      job.instance_id,
      job.audience_id,
      job.shard,
      JOB_PAGE,
    );
    if (removed === 0) break;
    if (ports.now() - started > ports.sliceMs) {
      await ports.queue.send(job);
      return;
    }
  }
  // The last shard to finish takes the counters (each shard's message may, harmlessly).
  if (job.shard === BUILD_SHARDS - 1) {
    await ports.audiences.removeCounters(job.instance_id, job.audience_id);
  }
}

async function recheckAll(day: string, ports: AudienceJobPorts): Promise<void> {
  const instances = await ports.audiences.timedInstances();
  const today = Date.parse(`${day}T00:00:00Z`);
  const days = Array.from({ length: RECHECK_DAYS }, (_, back) => dayOf(today - back * DAY_MS));
  await Promise.all(
    instances.flatMap((instanceId) =>
      days.flatMap((dueDay) =>
        Array.from({ length: BUILD_SHARDS }, (_, shard) =>
          ports.queue.send({ kind: 'recheck', instance_id: instanceId, day: dueDay, shard }),
        ),
      ),
    ),
  );
}

async function recheck(
  job: Extract<AudienceJob, { kind: 'recheck' }>,
  ports: AudienceJobPorts,
): Promise<void> {
  const started = ports.now();
  let after = job.after;
  for (;;) {
    const page = await ports.memberships.dueForRecheck(
      job.instance_id,
      job.day,
      job.shard,
      after,
      JOB_PAGE,
    );
    // The worker moves each marker to the person's next day (or removes it) as it evaluates.
    await ports.memberships.requestEvaluation(job.instance_id, page.personIds, {
      recheck: job.day,
    });
    if (!page.last) return;
    after = page.last;
    if (ports.now() - started > ports.sliceMs) {
      await ports.queue.send({ ...job, after });
      return;
    }
  }
}
