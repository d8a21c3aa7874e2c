import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { createDocumentClient, createSqsClient } from '../adapters/aws-clients.js';
import { DynamoMembershipStore } from '../adapters/audience-membership-store.js';
import { DynamoAudienceBuilds, dayOf } from '../adapters/audience-store.js';
import { DynamoConfigStore } from '../adapters/config-store.js';
import { DynamoFieldIndex } from '../adapters/field-index-store.js';
import { DynamoTagStore } from '../adapters/tag-store.js';
import { TransactionBatcher } from '../adapters/transaction-batcher.js';
import {
  applyAudienceDefinitions,
  AUDIENCE_HELD_MESSAGE,
  liveOrHeld,
  type Audience,
  type AudienceJobs,
  type AudienceServices,
} from '../domain/audiences/audience.js';
import type { AudienceApplier } from '../domain/configuration.js';
import { evaluatePerson, type BuildRequest } from '../domain/audiences/evaluate.js';
import {
  AudienceJob,
  runAudienceJob,
  startBuild,
  BUILD_DEBOUNCE_SECONDS,
  startDisposal,
  type AudienceJobPorts,
} from '../domain/audiences/jobs.js';
import type { LiveAudience } from '../domain/audiences/membership.js';
import { entryChangesOf } from '../domain/people/field-index.js';
import { FieldCatalog } from '../domain/fields/field-catalog.js';
import { tagIdsOf, type FilterContext } from '../domain/filters/filter.js';
import type { InstanceSchema, Tenant } from '../domain/tenancy.js';
import {
  AudienceJobsEnv,
  AudiencesEnv,
  AudienceWorkerEnv,
  FieldIndexEnv,
  readEnv,
} from '../config/env.js';
import { QUEUES } from '../resources.js';
import { logger } from '../lib/logger.js';
import { TtlCache } from '../lib/ttl-cache.js';
import { sqsWorker } from './sqs-worker.js';
import { streamWorker, type StreamChange } from './stream-worker.js';

/**
 * The composition roots of audiences: the API's services (definitions, builds queued), the
 * audience worker (the people table's stream) and the audience-jobs queue's worker (builds, the
 * daily re-evaluation, deletions).
 */

/** Audience jobs go on the audience-jobs queue (JSON; a delay for the patient ones). */
export class SqsAudienceQueue implements AudienceJobs {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly debounceSeconds = BUILD_DEBOUNCE_SECONDS,
  ) {}

  async send(job: AudienceJob, delaySeconds = 0): Promise<void> {
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(job),
        ...(delaySeconds > 0 ? { DelaySeconds: Math.min(900, Math.round(delaySeconds)) } : {}),
      }),
    );
  }

  build(
    instanceId: string,
    audienceId: string,
    version: number,
    options: { debounced?: boolean } = {},
  ): Promise<void> {
    return startBuild(
      instanceId,
      audienceId,
      version,
      this,
      options.debounced ? this.debounceSeconds : 0,
    );
  }

  dispose(instanceId: string, audienceId: string): Promise<void> {
    return startDisposal(instanceId, audienceId, this);
  }
}

/** The fields a filter of the instance reads (tags by name until tags have IDs). */
export function filterContextOf(tenant: Pick<Tenant, 'personFields'>): FilterContext {
  return { fields: tenant.personFields };
}

/** The services of the audience endpoints (their handler modules build them once). */
export function createAudienceServices(db: DynamoDBDocumentClient = createDocumentClient()) {
  const env = readEnv(AudiencesEnv);
  const store = new DynamoAudienceBuilds(db, {
    config: env.CONFIG_TABLE,
    audiences: env.AUDIENCES_TABLE,
  });
  const memberships = new DynamoMembershipStore(db, {
    people: env.PEOPLE_TABLE,
    audiences: env.AUDIENCES_TABLE,
    activities: env.ACTIVITIES_TABLE,
  });
  const queueUrl = env.AUDIENCE_JOBS_QUEUE_URL;
  const jobs: AudienceJobs = queueUrl
    ? new SqsAudienceQueue(createSqsClient(), queueUrl, env.AUDIENCE_BUILD_DEBOUNCE_SECONDS)
    : {
        build: () => Promise.reject(new Error('This function cannot queue audience builds')),
        dispose: () => Promise.reject(new Error('This function cannot queue audience deletions')),
      };
  const services: AudienceServices = {
    store,
    jobs,
    filterContext: (tenant) => Promise.resolve(filterContextOf(tenant)),
  };
  return { services, store, memberships };
}

/**
 * The configuration file's `audiences` applier of a region (the admin CLI and the local
 * stack): definitions in its config table, builds on its audience-jobs queue.
 */
export function configAudienceApplier(
  db: DynamoDBDocumentClient,
  sqs: SQSClient,
  tables: { config: string; audiences: string },
  queueUrl: string,
): AudienceApplier {
  const services = {
    store: new DynamoAudienceBuilds(db, tables),
    jobs: new SqsAudienceQueue(sqs, queueUrl),
  };
  return async (instanceId, definitions, personFields) => {
    const context = filterContextOf({ personFields: FieldCatalog.forPerson(personFields) });
    await applyAudienceDefinitions(instanceId, definitions, context, services);
  };
}

/** Compiled audiences kept in a container, with the versions they were read at. */
export interface KeptAudiences {
  version: number;
  configVersion: number;
  audiences: LiveAudience[];
}

/** How long compiled audiences are kept at most, whatever the versions say. */
const KEEP_AUDIENCES_MS = 60_000;

/**
 * An instance's audiences, compiled, as they are now: for each batch of the worker, the
 * audiences' version and count (one small consistent read) and, when it has audiences, its
 * configuration version (another, after it); the definitions are read and compiled again only
 * when either moved (or a minute passed). Each version is read before what it stands for, so
 * definitions kept under a version are at least as new as it. An instance with no audience
 * costs its one read.
 */
export async function currentAudiences(
  instanceId: string,
  kept: TtlCache<KeptAudiences>,
  store: Pick<DynamoAudienceBuilds, 'catalog' | 'list'>,
  config: Pick<DynamoConfigStore, 'configVersion' | 'getInstance'>,
  tags: Pick<DynamoTagStore, 'tagNames'>,
): Promise<LiveAudience[]> {
  const catalog = await store.catalog(instanceId);
  if (catalog.audiences <= 0) return [];
  const configVersion = await config.configVersion(instanceId);
  const cached = kept.get(instanceId);
  if (cached?.version === catalog.version && cached.configVersion === configVersion) {
    return cached.audiences;
  }
  const audiences = await audiencesOf(instanceId, store, config, tags);
  kept.set(instanceId, { version: catalog.version, configVersion, audiences }, KEEP_AUDIENCES_MS);
  return audiences;
}

/** An instance's audiences, compiled, read afresh. */
async function audiencesOf(
  instanceId: string,
  store: Pick<DynamoAudienceBuilds, 'list'>,
  config: Pick<DynamoConfigStore, 'getInstance'>,
  tags: Pick<DynamoTagStore, 'tagNames'>,
): Promise<LiveAudience[]> {
  const [audiences, instance] = await Promise.all([
    store.list(instanceId),
    config.getInstance(instanceId),
  ]);
  return compiled(instanceId, audiences, instance, tags);
}

/** Audiences compiled against their instance's fields and tags (held, those that do not). */
async function compiled(
  instanceId: string,
  audiences: readonly Audience[],
  instance: Pick<InstanceSchema, 'person_fields'> | undefined,
  tags: Pick<DynamoTagStore, 'tagNames'>,
): Promise<LiveAudience[]> {
  if (!instance) return [];
  // Tags named by ID in the filters, by their names (what people hold).
  const ids = audiences.flatMap((audience) => [
    ...tagIdsOf(audience.filter),
    ...tagIdsOf(audience.exit_filter),
  ]);
  const names = ids.length > 0 ? await tags.tagNames(instanceId, ids) : new Map<number, string>();
  const context: FilterContext = {
    ...filterContextOf({ personFields: FieldCatalog.forPerson(instance.person_fields) }),
    tagName: (idOrName) => (typeof idOrName === 'number' ? names.get(idOrName) : idOrName),
  };
  return audiences.map((audience) => {
    const live = liveOrHeld(audience, context);
    if (live.held !== undefined && !audience.archived_at) {
      // Its members stay as they are; the operators hear of it (the metric filter of the
      // audience worker's log group alarms on this message).
      logger.error(AUDIENCE_HELD_MESSAGE, {
        instance: instanceId,
        audience: audience.id,
        why: live.held,
      });
    }
    return live;
  });
}

/** `<inst>#P#<person>` → its instance and person. */
function personOf(pk: string): { instanceId: string; personId: string } | undefined {
  const match = /^(.+)#P#([0-9a-f]{24})$/.exec(pk);
  return match ? { instanceId: match[1] ?? '', personId: match[2] ?? '' } : undefined;
}

/** The builds that asked for an evaluation (`b_<audience>` of the person's `E` item). */
function buildsOf(changes: StreamChange[]): BuildRequest[] {
  const builds = new Map<string, number>();
  for (const change of changes) {
    if (change.keys.sk !== 'E') continue;
    for (const [name, value] of Object.entries(change.newImage ?? {})) {
      if (!name.startsWith('b_') || typeof value !== 'number') continue;
      builds.set(name.slice(2), Math.max(value, builds.get(name.slice(2)) ?? 0));
    }
  }
  return [...builds].map(([audienceId, version]) => ({ audienceId, version }));
}

/**
 * The audience worker: every change of a person from the people table's stream moves the
 * person's entries of the field index (field-index.ts), and every change (and every request
 * to evaluate one) evaluates that person against the instance's audiences.
 */
export function createAudienceWorker() {
  const env = readEnv(AudienceWorkerEnv);
  const db = createDocumentClient();
  const fieldIndex = new DynamoFieldIndex(db, readEnv(FieldIndexEnv).INDEXES_TABLE);
  const store = new DynamoAudienceBuilds(db, {
    config: env.CONFIG_TABLE,
    audiences: env.AUDIENCES_TABLE,
  });
  const config = new DynamoConfigStore(db, env.CONFIG_TABLE);
  const tags = new DynamoTagStore(db, env.PEOPLE_TABLE, new TransactionBatcher(db));
  const memberships = new DynamoMembershipStore(db, {
    people: env.PEOPLE_TABLE,
    audiences: env.AUDIENCES_TABLE,
    activities: env.ACTIVITIES_TABLE,
  });
  const kept = new TtlCache<KeptAudiences>(1_000);
  return async (...args: Parameters<ReturnType<typeof streamWorker>>) => {
    // Audiences are checked for each batch: every change in it came after they were.
    const perInstance = new Map<string, Promise<LiveAudience[]>>();
    const evaluate = async (
      person: { instanceId: string; personId: string },
      changes: StreamChange[],
    ) => {
      let audiences = perInstance.get(person.instanceId);
      if (!audiences) {
        audiences = currentAudiences(person.instanceId, kept, store, config, tags);
        perInstance.set(person.instanceId, audiences);
      }
      // Most instances have no audience: their people's changes cost nothing here. An
      // erasure is still evaluated (memberships of a deleted audience may remain).
      const erased = changes.some(
        (change) => change.eventName === 'REMOVE' && change.keys.sk === 'P',
      );
      if ((await audiences).length === 0 && !erased) return;
      await evaluatePerson(
        person.instanceId,
        person.personId,
        await audiences,
        buildsOf(changes),
        memberships,
      );
    };
    const handle = streamWorker({
      subjectOf: (change) => {
        const sk = change.keys.sk;
        return sk === 'P' || sk === 'E' ? String(change.keys.pk) : undefined;
      },
      process: async (subject, changes) => {
        const person = personOf(subject);
        if (!person) return;
        // The person's field index entries move beside the evaluation (neither reads the other).
        const changed = changes.filter((change) => change.keys.sk === 'P');
        const { removed, added } = entryChangesOf(changed);
        await Promise.all([
          changed.length > 0
            ? fieldIndex.apply(person.instanceId, person.personId, removed, added)
            : undefined,
          evaluate(person, changes),
        ]);
      },
    });
    return handle(...args);
  };
}

/** The audience-jobs queue's worker. */
export function createAudienceJobsWorker() {
  const env = readEnv(AudienceJobsEnv);
  const db = createDocumentClient();
  const sqs = createSqsClient();
  const queue = new SqsAudienceQueue(sqs, env.AUDIENCE_JOBS_QUEUE_URL);
  const store = new DynamoAudienceBuilds(db, {
    config: env.CONFIG_TABLE,
    audiences: env.AUDIENCES_TABLE,
  });
  const memberships = new DynamoMembershipStore(db, {
    people: env.PEOPLE_TABLE,
    audiences: env.AUDIENCES_TABLE,
    activities: env.ACTIVITIES_TABLE,
  });
  const config = new DynamoConfigStore(db, env.CONFIG_TABLE);
  const tags = new DynamoTagStore(db, env.PEOPLE_TABLE, new TransactionBatcher(db));
  const ports: AudienceJobPorts = {
    audiences: {
      get: (...args) => store.get(...args),
      list: (...args) => store.list(...args),
      counters: (...args) => store.counters(...args),
      advanceBuild: (...args) => store.advanceBuild(...args),
      finishBuild: (...args) => store.finishBuild(...args),
      removeCounters: (...args) => store.removeCounters(...args),
      timedInstances: () => store.timedInstances(),
      live: async (instanceId, audience) => {
        const instance = await config.getInstance(instanceId);
        return (await compiled(instanceId, [audience], instance, tags))[0];
      },
    },
    people: { listPage: (...args) => memberships.listPage(...args) },
    memberships,
    queue,
    now: Date.now,
    sliceMs: env.AUDIENCE_JOB_SLICE_MS,
  };
  return sqsWorker({
    sqs,
    queueUrl: env.AUDIENCE_JOBS_QUEUE_URL,
    maxReceiveCount: QUEUES.find((q) => q.name === 'audience-jobs')?.maxReceiveCount ?? 5,
    backoffBaseSeconds: env.AUDIENCE_JOBS_RETRY_BASE_SECONDS,
    process: (record: SQSRecord) =>
      runAudienceJob(AudienceJob.parse(JSON.parse(record.body)), ports),
    // A job that keeps failing waits in the dead-letter queue for a redrive (its steps are
    // safe to repeat); the daily job's markers and a build's cursors say how far it got.
    onLastFailure: () => Promise.resolve('dead-letter'),
  });
}

/** The daily re-evaluation's message (the schedule sends it; `admin audiences recheck` too). */
export function recheckAllJob(now = Date.now()): AudienceJob {
  return { kind: 'recheck-all', day: dayOf(now) };
}
