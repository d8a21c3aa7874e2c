import { z } from 'zod';
import {
  AudienceCreateRequest,
  createAudience,
  filterSha,
  findAudiences,
  MAX_AUDIENCES,
  MAX_AUDIENCES_PAGE,
  setAudienceArchived,
  type AudienceEntry,
  type AudienceServices,
} from '../audiences/audience.js';
import type { CursorCodec } from '../cursor.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import {
  compileFilter,
  filterableFields,
  FILTER_OPERATORS,
  operatorsFor,
} from '../filters/filter.js';
import { ID_PATTERN } from '../ids.js';
import { type ListingPorts } from '../people/person-get.js';
import type { Region } from '../regions.js';
import type { Tenant } from '../tenancy.js';
import { recordChange, type AuditSink } from './audit.js';
import { consoleTenant } from './console-activities.js';
import { type ConsoleCaller, ConsoleInstanceId, type ConsoleStore } from './console-keys.js';
import { peoplePage } from './console-listing.js';

/**
 * Audiences in the console: the instance's audiences with their counters (the API's
 * `audiences/get`: members, subscribers, SMS opt-ins, from counters kept with each membership,
 * never counted), the fields and operators a filter can use (what the filter builder offers),
 * an audience made from a filter (the API's `audiences/create`, the same parser; its members
 * are then found in the background, which `building` and `build_progress` show), its members
 * (the API's `person/get` with `audience_id`), and archiving. Each change is audited first.
 */
type Store = Pick<ConsoleStore, 'getInstance'>;
const instanceId = ConsoleInstanceId;
const audienceId = z
  .string()
  .regex(ID_PATTERN, 'expected an audience ID (24 hexadecimal characters)');

export const ConsoleAudiencesRequest = z.strictObject({
  instance_id: instanceId,
  archived: z.boolean().default(false),
  search_term: z.string().max(255).optional(),
  offset: z.number().int().min(0).max(MAX_AUDIENCES).default(0),
});
/** The public API's `audiences/create` body, for the instance named. */
export const ConsoleAudienceCreateRequest = AudienceCreateRequest.extend({
  instance_id: instanceId,
});
export const ConsoleAudienceRequest = z.strictObject({
  instance_id: instanceId,
  audience_id: audienceId,
});
export const ConsoleAudienceMembersRequest = z.strictObject({
  instance_id: instanceId,
  audience_id: audienceId,
  limit: z.number().int().min(1).max(100).default(25),
  offset: z.number().int().min(0).max(10_000_000).default(0),
  cursor_id: z.string().max(2000).optional(),
});

/** What a condition's value is, as the builder asks for it. */
export type ValueKind =
  'none' | 'boolean' | 'text' | 'number' | 'number-range' | 'days' | 'date' | 'date-range';

const is = (label: string, kind: ValueKind) => ({ label, kind });
/**
 * Every condition operator of the filter language with the words the builder shows and the
 * value it takes (a unit test checks that none of the language's operators is missing).
 */
export const OPERATOR_FORMS: Readonly<Record<string, { label: string; kind: ValueKind }>> = {
  $has_any_value: is('has any value', 'none'),
  $has_no_value: is('has no value', 'none'),
  '$bol::is': is('is', 'boolean'),
  '$str::is': is('is', 'text'),
  '$str::is_not': is('is not', 'text'),
  '$str::contains': is('contains', 'text'),
  '$str::does_not_contains': is('does not contain', 'text'),
  '$str::starts': is('starts with', 'text'),
  '$str::ends': is('ends with', 'text'),
  '$str::starts_with': is('starts with (earlier name)', 'text'),
  '$int::is': is('is', 'number'),
  '$int::is_not': is('is not', 'number'),
  '$int::greater_than': is('is greater than', 'number'),
  '$int::less_than': is('is less than', 'number'),
  '$int::between': is('is between', 'number-range'),
  '$int::not_between': is('is not between', 'number-range'),
  '$tme::relative_more_than': is('more than … days ago', 'days'),
  '$tme::relative_less_than': is('less than … days ago', 'days'),
  '$tme::relative_exactly': is('exactly … days ago', 'days'),
  '$tme::absolute_after': is('after', 'date'),
  '$tme::absolute_before': is('before', 'date'),
  '$tme::absolute_on': is('on', 'date'),
  '$tme::absolute_between': is('between', 'date-range'),
  '$dtz::absolute_after': is('after', 'date'),
  '$dtz::absolute_before': is('before', 'date'),
  '$dtz::absolute_on': is('on', 'date'),
  '$dtz::absolute_between': is('between', 'date-range'),
  '$geo::is': is('is', 'text'),
  '$geo::is_not': is('is not', 'text'),
  '$phn::iis': is('is', 'text'),
  '$phn::iis_not': is('is not', 'text'),
  '$phn::starts': is('starts with', 'text'),
  '$u4s::is': is('includes the tag', 'text'),
  '$u4s::is_not': is('does not include the tag', 'text'),
  $id_is: is('is', 'text'),
  $id_is_not: is('is not', 'text'),
};

/** The condition operators of the language (`$and`/`$or` and their group names aside). */
export const CONDITION_OPERATORS = FILTER_OPERATORS.filter((op) => !/^\$(and|or)/.test(op));

/** The fields a filter can name, each with the operators that read it and their values. */
export function filterFieldsOf(tenant: Pick<Tenant, 'personFields'>) {
  return filterableFields(tenant.personFields).map((field) => ({
    id: field.id,
    label: field.label,
    type: field.type,
    operators: operatorsFor(field.type).flatMap((operator) => {
      const form = OPERATOR_FORMS[operator];
      return form ? [{ operator, ...form }] : [];
    }),
  }));
}

/** An audience as the console lists it: its filter, counters and how far its build got. */
function summaryOf(entry: AudienceEntry) {
  return {
    id: entry.id,
    name: entry.name,
    filter: entry.filter,
    exit_filter: entry.new_exit_criteria_filter,
    created: entry.created,
    archived_at: entry.archived_at ?? null,
    members: entry.members,
    subscribers: entry.subscribers,
    sms_opted_in: entry.sms_opted_in,
    added_last_30_days: entry.added_last_30_days,
    building: entry.building,
    ready: entry.ready,
    last_built_at: entry.last_built_at,
    build_progress: entry.build_progress,
    held_reason: entry.held_reason ?? null,
  };
}

/** A page (40) of the instance's live or archived audiences, newest first, and the builder's fields. */
export async function audiencesOf(
  store: Store,
  services: AudienceServices,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleAudiencesRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const { entries, total } = await findAudiences(
    {
      archived: request.archived,
      with_filter: true,
      limit: MAX_AUDIENCES_PAGE,
      offset: request.offset,
      ...(request.search_term ? { search_term: request.search_term } : {}),
    },
    tenant,
    services,
  );
  return {
    instance_id: tenant.instance.id,
    audiences: entries.map(summaryOf),
    total,
    offset: request.offset,
    next_offset: request.offset + entries.length,
    has_more: request.offset + entries.length < total,
    filter_fields: filterFieldsOf(tenant),
  };
}

/**
 * Makes an audience as `audiences/create` does (the same checks, the same parser), audited
 * first. The filter, the name (unique without case) and the instance's limit are checked before
 * the entry, so a refused request writes nothing; the members are then found in the
 * background (`building: true` until the build ends).
 */
export async function createConsoleAudience(
  store: Store,
  services: AudienceServices,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleAudienceCreateRequest>,
) {
  const { instance_id: id, ...definition } = request;
  const tenant = await consoleTenant(store, caller, region, id);
  const context = await services.filterContext(tenant);
  compileFilter(definition.filter, context, 'filter');
  if (definition.exit_filter) compileFilter(definition.exit_filter, context, 'exit_filter');
  const existing = await services.store.list(tenant.instance.id);
  if (existing.some((audience) => audience.name.toLowerCase() === definition.name.toLowerCase())) {
    throw new ConflictError(`name: an audience named "${definition.name}" already exists`);
  }
  if (existing.length >= MAX_AUDIENCES) {
    throw new ValidationError(`name: the instance has ${MAX_AUDIENCES} audiences, the most`, [
      { field: 'name', error: `at most ${MAX_AUDIENCES} audiences` },
    ]);
  }
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'audience.create',
    target: `audience:${definition.name}`,
    details: {
      filter_sha: filterSha(definition.filter),
      exit_filter_sha: definition.exit_filter ? filterSha(definition.exit_filter) : null,
    },
  });
  const entry = await createAudience(definition, tenant, services);
  return { instance_id: tenant.instance.id, audience: summaryOf(entry) };
}

/** Archives an audience: its members stay as they were, it is no longer kept current. */
export async function archiveConsoleAudience(
  store: Store,
  services: AudienceServices,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleAudienceRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const audience = await services.store.get(tenant.instance.id, request.audience_id);
  if (!audience) throw noSuchAudience(request.audience_id);
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'audience.archive',
    target: `audience:${audience.id}`,
    details: { name: audience.name },
  });
  const entry = await setAudienceArchived({ audience_id: audience.id }, true, tenant, services);
  return { instance_id: tenant.instance.id, audience: summaryOf(entry) };
}

/** A page of an audience's members (its members index: the same cost at any size). */
export async function audienceMembersOf(
  store: Store,
  ports: ListingPorts,
  cursors: (instanceId: string) => Promise<CursorCodec>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleAudienceMembersRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const page = await peoplePage(
    tenant,
    request,
    { audience_id: request.audience_id },
    ports,
    cursors,
  );
  return {
    instance_id: tenant.instance.id,
    audience_id: request.audience_id,
    contacts: page.contacts,
    total: page.meta.total_matches,
    offset: page.offset,
    next_offset: page.next_offset,
    cursor_id: page.cursor_id,
    has_more: page.has_more,
  };
}

function noSuchAudience(id: string) {
  return new NotFoundError(`audience_id: no audience ${id} in this instance`, [
    { field: 'audience_id', error: 'not found' },
  ]);
}
