import { createHash } from 'node:crypto';
import { z } from 'zod';
import { NotFoundError, ValidationError } from '../errors.js';
import { compileFilter, dependsOnTime, type FilterContext } from '../filters/filter.js';
import { ID_PATTERN, newId } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import { FieldCatalog, type CustomFieldConfig } from '../fields/field-catalog.js';
import type { LiveAudience } from './membership.js';

/**
 * Audiences (docs/audiences.md): filter-defined segments of an instance's people, kept
 * current as people change. Definitions live with the instance's configuration; who belongs
 * is decided per person by the audience worker (`membership.ts`) and, over the people who
 * were there before an audience (or its filter), by a build.
 */

/** Audiences per instance, archived ones included (the real API's plans allow 30 and more). */
export const MAX_AUDIENCES = 100;
/** `audiences/get` pages: the real API's default and largest page. */
export const MAX_AUDIENCES_PAGE = 40;

export interface AudienceBuild {
  /** The filter version being (or last) built over the instance's people. */
  version: number;
  started_at: string;
  /**
   * How far the build got in each shard of the people listing: `''` not started, a person ID
   * (queued up to it), or `DONE`. A page moves its shard's cursor and `queued` in one
   * conditional write, so a page handled twice counts once.
   */
  cursors: Record<string, string>;
  /** People the build has reached so far. */
  queued: number;
  /**
   * Of those, the people the build settled itself (nothing to change: `jobs.ts`); the others
   * are evaluated by the audience worker and counted there (`evaluated`). Absent: none.
   */
  decided?: number;
  /** Set once every shard is queued and every queued person was evaluated. */
  finished_at?: string;
}

/** The cursor of a shard whose people were all queued. */
export const SHARD_DONE = '~done';

export interface Audience {
  id: string;
  name: string;
  filter: unknown;
  exit_filter?: unknown;
  is_public: boolean;
  public_name: string;
  public_description: string;
  sms_is_public: boolean;
  sms_public_name: string;
  sms_public_description: string;
  created: string;
  edited_at: string;
  archived_at?: string;
  /** Moves with every change of the entry or exit filter; a build is of one version. */
  version: number;
  build: AudienceBuild;
}

const text = (max: number) => z.string().max(max, `at most ${max} characters`);
const name = z.string().trim().min(1, 'expected a name').max(255, 'at most 255 characters');
const filterTree = z.record(z.string(), z.unknown(), 'expected a filter object');

const Presentation = {
  is_public: z.boolean().optional(),
  public_name: text(255).optional(),
  public_description: text(1000).optional(),
  sms_is_public: z.boolean().optional(),
  sms_public_name: text(255).optional(),
  sms_public_description: text(1000).optional(),
};

/** `POST /v1/audiences/create` (beyond the real API, which makes audiences in its UI). */
export const AudienceCreateRequest = z.strictObject({
  name,
  filter: filterTree,
  exit_filter: filterTree.nullable().optional(),
  ...Presentation,
});
export type AudienceCreateRequest = z.infer<typeof AudienceCreateRequest>;

const audienceId = z
  .string()
  .regex(ID_PATTERN, 'expected an audience ID (24 hexadecimal characters)');

/** `PUT /v1/audiences/update`: a new name, filters or presentation (a new filter rebuilds). */
export const AudienceUpdateRequest = z.strictObject({
  audience_id: audienceId,
  name: name.optional(),
  filter: filterTree.optional(),
  exit_filter: filterTree.nullable().optional(),
  ...Presentation,
});
export type AudienceUpdateRequest = z.infer<typeof AudienceUpdateRequest>;

/** `PUT /v1/audiences/archive|restore`, `DELETE /v1/audiences/delete`. */
export const AudienceIdRequest = z.strictObject({ audience_id: audienceId });
export type AudienceIdRequest = z.infer<typeof AudienceIdRequest>;

/** `POST /v1/audiences/get` (every member optional, the body too). */
export const AudiencesGetRequest = z.strictObject({
  search_term: text(255).optional(),
  with_filter: z.boolean().optional(),
  limit: z
    .number()
    .int('expected a whole number')
    .min(1, `expected 1 to ${MAX_AUDIENCES_PAGE}`)
    .max(MAX_AUDIENCES_PAGE, `expected 1 to ${MAX_AUDIENCES_PAGE}`)
    .optional(),
  offset: z.number().int('expected a whole number').min(0).max(MAX_AUDIENCES).optional(),
  archived: z.boolean().optional(),
  // Retention audiences (history beyond 90 days) do not exist here: always an empty page.
  retention: z.boolean().optional(),
});
export type AudiencesGetRequest = z.infer<typeof AudiencesGetRequest>;

export interface AudienceCounters {
  members: number;
  subscribers: number;
  sms_opted_in: number;
  added_last_30_days: number;
  /** People of the current build evaluated so far (the build ends when all queued are). */
  evaluated: number;
}

/** What audiences are kept in (the config table) and what they count (the audiences table). */
export interface AudienceStore {
  /** Every audience of the instance, archived ones included (read consistently). */
  list(instanceId: string): Promise<Audience[]>;
  get(instanceId: string, audienceId: string): Promise<Audience | undefined>;
  /** `ConflictError` when the name is taken, `ValidationError` past `MAX_AUDIENCES`. */
  create(instanceId: string, audience: Audience): Promise<void>;
  /** Conditioned on `edited_at` as read: a concurrent change fails with `ConflictError`. */
  update(instanceId: string, audience: Audience, previous: Audience): Promise<void>;
  remove(instanceId: string, audience: Audience): Promise<void>;
  /** Notes that the instance has an audience whose filters depend on time (the daily job's list). */
  markTimed(instanceId: string): Promise<void>;
  /** Counters of these audiences, with the people of each one's current build evaluated. */
  counters(
    instanceId: string,
    audiences: readonly Pick<Audience, 'id' | 'build'>[],
    now: number,
  ): Promise<Map<string, AudienceCounters>>;
}

/** The background work of audiences (the ingest queue on AWS and locally). */
export interface AudienceJobs {
  /**
   * Evaluates every person of the instance for a new filter version; `debounced` (a change of
   * an existing audience) starts it after `BUILD_DEBOUNCE_SECONDS` (jobs.ts).
   */
  build(
    instanceId: string,
    audienceId: string,
    version: number,
    options?: { debounced?: boolean },
  ): Promise<void>;
  /** Removes the memberships and counters of a deleted audience. */
  dispose(instanceId: string, audienceId: string): Promise<void>;
}

/** The recorded answer's stable hash of a filter (its canonical JSON, SHA-1). */
export function filterSha(filter: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : typeof value === 'object' && value !== null
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
          )
        : value;
  return createHash('sha1')
    .update(JSON.stringify(canonical(filter)))
    .digest('hex');
}

/** An audience's filters compiled for the instance (checked when it was made). */
export function liveAudience(audience: Audience, context: FilterContext): LiveAudience {
  return {
    audience,
    entry: compileFilter(audience.filter, context),
    ...(audience.exit_filter
      ? { exit: compileFilter(audience.exit_filter, context, 'exit_filter') }
      : {}),
  };
}

/**
 * An audience whose filter no longer compiles against its instance (a field the filter names
 * was removed by a configuration applied since): it is held, not evaluated. Its members keep
 * their memberships as they are (subscriptions included) and its counters stay, until the
 * filter compiles again (the field is back) or the audience is changed or deleted. Answers
 * the live audience, held when it does not compile (`held` says why).
 */
export function liveOrHeld(audience: Audience, context: FilterContext): LiveAudience {
  try {
    return liveAudience(audience, context);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { audience, entry: HELD, held: `its filter no longer compiles: ${why}` };
  }
}

/**
 * The names of the audiences whose entry or exit filter names `fieldId`: those that compile
 * with the instance's person fields and would not without that one.
 */
export function audiencesNaming(
  audiences: readonly Audience[],
  personFields: readonly CustomFieldConfig[],
  fieldId: string,
): string[] {
  const withIt = FieldCatalog.forPerson(personFields);
  const without = FieldCatalog.forPerson(personFields.filter((field) => field.id !== fieldId));
  const compiles = (filter: unknown, fields: FieldCatalog) => {
    try {
      compileFilter(filter, { fields });
      return true;
    } catch {
      return false;
    }
  };
  return audiences
    .filter((audience) =>
      [audience.filter, audience.exit_filter].some(
        (filter) =>
          filter !== undefined &&
          filter !== null &&
          compiles(filter, withIt) &&
          !compiles(filter, without),
      ),
    )
    .map((audience) => audience.name);
}

/** What the audience worker logs for a held audience (an alarm's metric filter matches it). */
export const AUDIENCE_HELD_MESSAGE = 'An audience is held: its filter does not compile';

/** The entry filter of a held audience: never asked (`decideMemberships` skips it). */
const HELD: LiveAudience['entry'] = () => {
  throw new Error('a held audience is not evaluated');
};

/** Shards of the people listing a build walks (`LIST_SHARDS` of the people store). */
export const BUILD_SHARDS = 16;

/**
 * Whether the audience's current build is over: every shard's people were queued for
 * evaluation, and every one of them was evaluated.
 */
export function isBuilt(
  audience: Audience,
  counters: Pick<AudienceCounters, 'evaluated'>,
): boolean {
  const { build } = audience;
  return (
    build.finished_at !== undefined ||
    (doneShards(build) >= BUILD_SHARDS && counters.evaluated + (build.decided ?? 0) >= build.queued)
  );
}

export function doneShards(build: AudienceBuild): number {
  return Object.values(build.cursors).filter((cursor) => cursor === SHARD_DONE).length;
}

/** A new build of a version: every shard from its start. */
export function newBuild(version: number, at: string): AudienceBuild {
  return {
    version,
    started_at: at,
    cursors: Object.fromEntries(
      Array.from({ length: BUILD_SHARDS }, (_, shard) => [String(shard), '']),
    ),
    queued: 0,
  };
}

/** The `template_id` of an audience made from no template. */
export const NO_TEMPLATE = '000000000000000000000000';

/** One entry of `audiences/get`, in the recorded shape (docs/api.md, Audiences). */
export function audienceEntry(
  audience: Audience,
  instanceId: string,
  counters: AudienceCounters,
  withFilter: boolean,
  held?: string,
) {
  const building = !isBuilt(audience, counters);
  return {
    id: audience.id,
    instance_id: instanceId,
    folder_id: null,
    data_source_id: '000000000000000000000000',
    icon_id: 'audiences-illustration-icon',
    type: 'permanent' as const,
    building,
    ready: !building || audience.build.version > 1,
    is_public: audience.is_public,
    sms_is_public: audience.sms_is_public,
    sms_public_name: audience.sms_public_name,
    sms_public_description: audience.sms_public_description,
    filter: withFilter ? audience.filter : null,
    filter_sha: filterSha(audience.filter),
    last_built_at: audience.build.finished_at ?? (building ? null : audience.build.started_at),
    new_filter: null,
    new_filter_sha: '',
    last_used: audience.edited_at,
    created: audience.created,
    created_by_id: '',
    created_by_name: '',
    edited_at: audience.edited_at,
    ...(audience.archived_at ? { archived_at: audience.archived_at } : {}),
    ...(held !== undefined ? { held_reason: held } : {}),
    name: audience.name,
    public_name: audience.public_name,
    public_description: audience.public_description,
    // Audiences here are not made from templates: the zero ID, as for `data_source_id`.
    template_id: NO_TEMPLATE,
    exit_selection: audience.exit_filter ? ('filter' as const) : ('' as const),
    new_exit_criteria_filter: withFilter ? (audience.exit_filter ?? null) : null,
    ds_destinations: null,
    sms_opted_in: counters.sms_opted_in,
    subscribers: counters.subscribers,
    members: counters.members,
    added_last_30_days: counters.added_last_30_days,
    // Engagement and revenue scoring do not exist here: the recorded answers' zeros.
    engagement: 0,
    revenue: 0,
    is_cold: false,
    // How far the current build has got (beyond the recorded shape).
    build_progress: {
      queued: audience.build.queued,
      evaluated: Math.min(
        counters.evaluated + (audience.build.decided ?? 0),
        audience.build.queued,
      ),
      done_shards: doneShards(audience.build),
    },
  };
}
export type AudienceEntry = ReturnType<typeof audienceEntry>;

const ZERO: AudienceCounters = {
  members: 0,
  subscribers: 0,
  sms_opted_in: 0,
  added_last_30_days: 0,
  evaluated: 0,
};

/** Filters are checked against the instance's fields and tags when an audience is saved. */
function checkFilters(
  request: { filter?: unknown; exit_filter?: unknown },
  context: FilterContext,
) {
  if (request.filter !== undefined) compileFilter(request.filter, context, 'filter');
  if (request.exit_filter) compileFilter(request.exit_filter, context, 'exit_filter');
}

export interface AudienceServices {
  store: AudienceStore;
  jobs: AudienceJobs;
  filterContext(tenant: Tenant): Promise<FilterContext>;
  now?: () => number;
  /** Charges the key `tokens` requests more: a rebuild costs `BUILD_TOKENS` (rate-limit.ts). */
  charge?: (tenant: Tenant, tokens: number) => Promise<void>;
}

/**
 * What a rebuild (a changed filter, a restore) costs the key that asked for it, in requests
 * of its rate limit: a build reads every person of the instance, so changing filters at the
 * key's rate cannot keep the people stream busy.
 */
export const BUILD_TOKENS = 50;

export async function createAudience(
  request: AudienceCreateRequest,
  tenant: Tenant,
  services: AudienceServices,
): Promise<AudienceEntry> {
  return createIn(tenant.instance.id, request, await services.filterContext(tenant), services);
}

type Writes = Pick<AudienceServices, 'store' | 'jobs' | 'now'>;

async function createIn(
  instanceId: string,
  request: AudienceCreateRequest,
  context: FilterContext,
  services: Writes,
): Promise<AudienceEntry> {
  checkFilters(request, context);
  const now = new Date(services.now?.() ?? Date.now()).toISOString();
  const audience: Audience = {
    id: newId(),
    name: request.name,
    filter: request.filter,
    ...(request.exit_filter ? { exit_filter: request.exit_filter } : {}),
    is_public: request.is_public ?? false,
    public_name: request.public_name ?? '',
    public_description: request.public_description ?? '',
    sms_is_public: request.sms_is_public ?? false,
    sms_public_name: request.sms_public_name ?? '',
    sms_public_description: request.sms_public_description ?? '',
    created: now,
    edited_at: now,
    version: 1,
    build: newBuild(1, now),
  };
  if (dependsOnTime(audience.filter) || dependsOnTime(audience.exit_filter)) {
    await services.store.markTimed(instanceId);
  }
  await services.store.create(instanceId, audience);
  try {
    await services.jobs.build(instanceId, audience.id, audience.version);
  } catch (error) {
    // An audience nobody builds would say `building` for ever: the request fails whole.
    await services.store.remove(instanceId, audience);
    throw error;
  }
  return audienceEntry(audience, instanceId, ZERO, true);
}

async function existing(instanceId: string, id: string, store: AudienceStore): Promise<Audience> {
  const audience = await store.get(instanceId, id);
  if (!audience) {
    throw new NotFoundError(`audience_id: no audience ${id}`, [
      { field: 'audience_id', error: 'no such audience' },
    ]);
  }
  return audience;
}

export async function updateAudience(
  request: AudienceUpdateRequest,
  tenant: Tenant,
  services: AudienceServices,
): Promise<AudienceEntry> {
  return updateIn(
    tenant.instance.id,
    request,
    await services.filterContext(tenant),
    services,
    services.charge && (() => services.charge?.(tenant, BUILD_TOKENS)),
  );
}

async function updateIn(
  instanceId: string,
  request: AudienceUpdateRequest,
  context: FilterContext,
  services: Writes,
  chargeBuild?: () => Promise<void> | undefined,
): Promise<AudienceEntry> {
  checkFilters(request, context);
  const before = await existing(instanceId, request.audience_id, services.store);
  const now = new Date(services.now?.() ?? Date.now()).toISOString();
  const newFilter =
    request.filter !== undefined && filterSha(request.filter) !== filterSha(before.filter);
  const newExit =
    request.exit_filter !== undefined &&
    filterSha(request.exit_filter) !== filterSha(before.exit_filter ?? null);
  const rebuild = newFilter || newExit;
  const { audience_id: _id, exit_filter, ...changes } = request;
  const after: Audience = {
    ...before,
    ...Object.fromEntries(
      Object.entries(changes as Record<string, unknown>).filter(([, value]) => value !== undefined),
    ),
    edited_at: now,
  };
  if (exit_filter === null) delete after.exit_filter;
  else if (exit_filter !== undefined) after.exit_filter = exit_filter;
  if (rebuild) {
    after.version = before.version + 1;
    after.build = newBuild(after.version, now);
  }
  if (dependsOnTime(after.filter) || dependsOnTime(after.exit_filter)) {
    await services.store.markTimed(instanceId);
  }
  await services.store.update(instanceId, after, before);
  // A build is resumable and its pages count once: kicking an unfinished one again (after an
  // update whose enqueue failed, say) is safe.
  if (!after.build.finished_at && !after.archived_at) {
    await services.jobs.build(instanceId, after.id, after.version, { debounced: true });
  }
  if (rebuild) await chargeBuild?.();
  const counters = await services.store.counters(instanceId, [after], Date.parse(now));
  return audienceEntry(after, instanceId, counters.get(after.id) ?? ZERO, true);
}

/** Archiving stops the audience's updates (its members stay as they were); restoring rebuilds. */
export async function setAudienceArchived(
  request: AudienceIdRequest,
  archived: boolean,
  tenant: Tenant,
  services: AudienceServices,
): Promise<AudienceEntry> {
  const instanceId = tenant.instance.id;
  const before = await existing(instanceId, request.audience_id, services.store);
  if (Boolean(before.archived_at) === archived) {
    const counters = await services.store.counters(instanceId, [before], Date.now());
    return audienceEntry(before, instanceId, counters.get(before.id) ?? ZERO, false);
  }
  const now = new Date(services.now?.() ?? Date.now()).toISOString();
  const after: Audience = { ...before, edited_at: now };
  if (archived) after.archived_at = now;
  else {
    delete after.archived_at;
    // People changed while it was archived: the members are decided again over everyone.
    after.version = before.version + 1;
    after.build = newBuild(after.version, now);
  }
  await services.store.update(instanceId, after, before);
  if (!archived) {
    await services.jobs.build(instanceId, after.id, after.version, { debounced: true });
    await services.charge?.(tenant, BUILD_TOKENS);
  }
  const counters = await services.store.counters(instanceId, [after], Date.parse(now));
  return audienceEntry(after, instanceId, counters.get(after.id) ?? ZERO, false);
}

/**
 * Deleting takes an archived audience (as in the real product: archive first), and removes
 * its memberships and counters in the background; its enter and exit activities stay.
 */
export async function deleteAudience(
  request: AudienceIdRequest,
  tenant: Tenant,
  services: AudienceServices,
): Promise<{ audience_id: string; deleted: true }> {
  const instanceId = tenant.instance.id;
  const audience = await existing(instanceId, request.audience_id, services.store);
  if (!audience.archived_at) {
    throw new ValidationError('audience_id: archive the audience before deleting it', [
      { field: 'audience_id', error: 'the audience is not archived' },
    ]);
  }
  await services.store.remove(instanceId, audience);
  await services.jobs.dispose(instanceId, audience.id);
  return { audience_id: audience.id, deleted: true };
}

/**
 * `audiences/get`: live or archived audiences, newest first, whose name contains
 * `search_term` (without case), `limit` from `offset`.
 */
export async function getAudiences(
  request: AudiencesGetRequest,
  tenant: Tenant,
  services: AudienceServices,
): Promise<AudienceEntry[]> {
  return (await findAudiences(request, tenant, services)).entries;
}

/**
 * `audiences/get`'s page with how many audiences match in all (the instance's audiences are
 * one bounded list: at most its limit of audiences, read whole for any page).
 */
export async function findAudiences(
  request: AudiencesGetRequest,
  tenant: Tenant,
  services: AudienceServices,
): Promise<{ entries: AudienceEntry[]; total: number }> {
  if (request.retention) return { entries: [], total: 0 };
  const instanceId = tenant.instance.id;
  const term = request.search_term?.toLowerCase();
  const matching = (await services.store.list(instanceId))
    .filter((audience) => Boolean(audience.archived_at) === (request.archived ?? false))
    .filter((audience) => term === undefined || audience.name.toLowerCase().includes(term))
    .sort((a, b) => b.created.localeCompare(a.created) || b.id.localeCompare(a.id));
  const offset = request.offset ?? 0;
  const page = matching.slice(offset, offset + (request.limit ?? MAX_AUDIENCES_PAGE));
  const counters = await services.store.counters(instanceId, page, services.now?.() ?? Date.now());
  const entries = page.map((audience) =>
    audienceEntry(
      audience,
      instanceId,
      counters.get(audience.id) ?? ZERO,
      request.with_filter ?? false,
      liveOrHeld(audience, { fields: tenant.personFields }).held,
    ),
  );
  return { entries, total: matching.length };
}

/**
 * The `audiences` of an instance in the configuration file, applied: each one is matched
 * with the instance's audience of the same name (without case), made when there is none,
 * and brought up to date when its definition differs (a new filter rebuilds). Audiences not
 * in the file (made through the API, or removed from the file) are left alone: the file
 * never deletes. Applying the same file twice changes nothing the second time.
 */
export async function applyAudienceDefinitions(
  instanceId: string,
  definitions: readonly AudienceCreateRequest[],
  context: FilterContext,
  services: Writes,
): Promise<{ created: string[]; updated: string[] }> {
  const existing = new Map(
    (await services.store.list(instanceId)).map((audience) => [
      audience.name.toLowerCase(),
      audience,
    ]),
  );
  const created: string[] = [];
  const updated: string[] = [];
  for (const definition of definitions) {
    const found = existing.get(definition.name.toLowerCase());
    if (!found) {
      await createIn(instanceId, definition, context, services);
      created.push(definition.name);
      continue;
    }
    const changes = Object.fromEntries(
      Object.entries(definition as Record<string, unknown>).filter(([member, value]) => {
        if (member === 'filter' || member === 'exit_filter') {
          const before = member === 'filter' ? found.filter : (found.exit_filter ?? null);
          return filterSha(value ?? null) !== filterSha(before);
        }
        return value !== undefined && found[member as keyof Audience] !== value;
      }),
    );
    if (definition.exit_filter === undefined && found.exit_filter !== undefined) {
      changes.exit_filter = null;
    }
    if (Object.keys(changes).length === 0) continue;
    await updateIn(
      instanceId,
      AudienceUpdateRequest.parse({ audience_id: found.id, ...changes }),
      context,
      services,
    );
    updated.push(definition.name);
  }
  return { created, updated };
}
