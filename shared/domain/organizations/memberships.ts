import { z } from 'zod';
import {
  OutcomeUnknownError,
  ServiceUnavailableError,
  stoppedPartWay,
  ValidationError,
  type ErrorDetail,
} from '../errors.js';
import { runBounded } from '../../lib/bounded.js';
import { backoffMs, canWait, sleep } from '../../lib/time-budget.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';

/** An organization holds at most this many people (API.md, Limits). */
export const MAX_MEMBERS = 3000;

const id = z.string().regex(ID_PATTERN, 'expected an ID of 24 hexadecimal characters');

/** `PUT /v1/organizations/contacts/add` and `.../remove`. */
export const MembershipRequest = z.object({
  inclusion_ids: z.array(id).min(1, 'expected at least one person ID').max(MAX_MEMBERS),
  organization_id: id,
});
export type MembershipRequest = z.infer<typeof MembershipRequest>;

/**
 * The member names the caller used (the organizations' or the accounts', accounts.ts), so
 * that a message names what was sent.
 */
export interface MembershipNames {
  people: 'inclusion_ids' | 'person_ids';
  organization: 'organization_id' | 'account_id';
  noun: 'organization' | 'account';
}

export const ORGANIZATION_MEMBERSHIP_NAMES: MembershipNames = {
  people: 'inclusion_ids',
  organization: 'organization_id',
  noun: 'organization',
};

export type LinkResult = 'done' | 'changed';

/** The port memberships go through: people's `organization_id` and organizations' member counts. */
export interface MembershipStore {
  /** The member count of an organization; undefined when there is none (or it is archived). */
  members(instanceId: string, organizationId: string): Promise<number | undefined>;
  /**
   * The organization of each existing person (undefined when none); unknown and archived
   * people are absent.
   */
  organizationsOf(
    instanceId: string,
    personIds: string[],
  ): Promise<Map<string, string | undefined>>;
  /** Adds `count` to the member count if it stays within the limit; false if it would not. */
  reserve(instanceId: string, organizationId: string, count: number): Promise<boolean>;
  release(instanceId: string, organizationId: string, count: number): Promise<void>;
  /** Moves a person from `from` (or none) to `to`, adjusting `from`'s count; `changed` if the person moved meanwhile. */
  link(
    instanceId: string,
    personId: string,
    from: string | undefined,
    to: string,
  ): Promise<LinkResult>;
  /** Removes a person from `from`, adjusting its count; `changed` if the person is no longer in it. */
  unlink(instanceId: string, personId: string, from: string): Promise<LinkResult>;
  /** Which of these people, and whether the organization, are archived (for the message). */
  archivedAmong?(
    instanceId: string,
    personIds: string[],
    organizationId: string,
  ): Promise<{ people: string[]; organization: boolean }>;
}

const CONCURRENCY = 16;
/**
 * How often one person is read again after someone else moved them at most, before giving
 * up: the deadline bounds it first.
 */
const MAX_ATTEMPTS = 50;

async function validate(
  request: MembershipRequest,
  tenant: Tenant,
  store: MembershipStore,
  names: MembershipNames,
) {
  const instanceId = tenant.instance.id;
  const personIds = [...new Set(request.inclusion_ids)];
  // Strongly consistent reads: they decide who moves and how much room is reserved.
  const [members, organizations] = await Promise.all([
    store.members(instanceId, request.organization_id),
    store.organizationsOf(instanceId, personIds),
  ]);
  const problems = [];
  let unknown = personIds.filter((personId) => !organizations.has(personId));
  // Archived people and organizations are refused by name (restore them first).
  const archived =
    (members === undefined || unknown.length > 0) && store.archivedAmong
      ? await store.archivedAmong(instanceId, unknown, request.organization_id)
      : { people: [], organization: false };
  if (members === undefined) {
    problems.push({
      field: names.organization,
      error: archived.organization
        ? `${names.noun} ${request.organization_id} is archived; restore it first`
        : `no ${names.noun} ${request.organization_id}`,
    });
  }
  unknown = unknown.filter((personId) => !archived.people.includes(personId));
  if (unknown.length > 0) {
    problems.push({ field: names.people, error: `no such people: ${unknown.join(', ')}` });
  }
  if (archived.people.length > 0) {
    problems.push({
      field: names.people,
      error: `archived people (restore them first): ${archived.people.join(', ')}`,
    });
  }
  if (problems.length > 0) {
    throw new ValidationError(problems.map((p) => `${p.field}: ${p.error}`).join('; '), problems);
  }
  return { instanceId, members: members ?? 0, organizations };
}

/** `unknown`: the move's write got no answer (it may have been applied). */
type PersonOutcome = 'linked' | 'unlinked' | 'unchanged' | 'unknown';

/**
 * Moves one person until it is done: a move conditioned on where the person was, read again
 * (strongly consistent) and retried with backoff when someone else moved them meanwhile.
 * `unchanged` when the person is already where the request wants them (another request put
 * them there). Throws 503 when the person kept moving through the time budget.
 */
async function movePerson(
  store: MembershipStore,
  instanceId: string,
  personId: string,
  current: string | undefined,
  target: string | undefined,
  names: MembershipNames,
  from?: string,
): Promise<PersonOutcome> {
  const settled = (where: string | undefined) =>
    where === target || (target === undefined && where !== from);
  let where = current;
  if (settled(where)) return 'unchanged';
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
    // The first attempt too: a request of a thousand people must not start moving one after
    // its deadline, or the function's timeout answers a bare 500 while the moves go on.
    const wait = attempt > 0 ? backoffMs(attempt, 10, 500) : 0;
    if (!canWait(wait)) break;
    if (attempt > 0) {
      await sleep(wait);
      // Where the person is after the wait: the move is conditioned on it.
      const fresh = await store.organizationsOf(instanceId, [personId]);
      if (!fresh.has(personId)) {
        throw new ValidationError(
          `${names.people}: person ${personId} was archived or deleted meanwhile`,
          [{ field: names.people, error: `no such people: ${personId}` }],
        );
      }
      where = fresh.get(personId);
      if (settled(where)) return 'unchanged';
    }
    const result =
      target === undefined
        ? await store.unlink(instanceId, personId, from ?? '')
        : await store.link(instanceId, personId, where, target);
    if (result === 'done') return target === undefined ? 'unlinked' : 'linked';
  }
  throw new ServiceUnavailableError(
    `person ${personId} kept moving between organizations concurrently; try again`,
  );
}

/** Per-person details of a membership change that stopped part-way. */
function membershipDetails(
  request: MembershipRequest,
  outcomes: Map<string, PersonOutcome>,
): ErrorDetail[] {
  return request.inclusion_ids.map((personId, index) => {
    const outcome = outcomes.get(personId);
    if (outcome === 'unknown') {
      return {
        index,
        person_id: personId,
        status: outcome,
        error:
          'the store did not answer: it may have been applied; send it again (safe either way)',
      };
    }
    return outcome
      ? { index, person_id: personId, status: outcome }
      : { index, person_id: personId, status: 'not_applied', error: 'not applied: send it again' };
  });
}

/**
 * Moves one person and records the outcome; a move whose write got no answer is recorded
 * `unknown` (and still stops the request).
 */
async function moveAndRecord(
  outcomes: Map<string, PersonOutcome>,
  personId: string,
  move: () => Promise<PersonOutcome>,
): Promise<void> {
  try {
    outcomes.set(personId, await move());
  } catch (error) {
    if (error instanceof OutcomeUnknownError) outcomes.set(personId, 'unknown');
    throw error;
  }
}

/**
 * Adds people to an organization, moving them from any other. Every ID is checked before
 * anything changes. Room is reserved first with one conditional update of the member
 * count, so parallel adds can never take an organization past 3000; the people are then
 * linked one transaction each (16 at a time). Whatever happens, room not used is given
 * back before the answer; if a person cannot be linked (the store stays unavailable, or
 * they keep moving), the answer is 503 naming who was linked and who was not. A link the
 * store did not answer (`unknown`) keeps its room: the count may then be one too high (a
 * stricter limit, until `admin repair counts`), never too low.
 */
export async function addMembers(
  request: MembershipRequest,
  tenant: Tenant,
  store: MembershipStore,
  names: MembershipNames = ORGANIZATION_MEMBERSHIP_NAMES,
): Promise<void> {
  const { instanceId, members, organizations } = await validate(request, tenant, store, names);
  const target = request.organization_id;
  const moving = [...organizations].filter(([, current]) => current !== target);
  if (moving.length === 0) return;
  if (!(await store.reserve(instanceId, target, moving.length))) {
    const message = `${names.organization}: ${names.noun} ${target} holds ${members} people; adding ${moving.length} would pass the limit of ${MAX_MEMBERS}`;
    throw new ValidationError(message, [
      { field: names.people, error: `at most ${MAX_MEMBERS} people per ${names.noun}` },
    ]);
  }
  const outcomes = new Map<string, PersonOutcome>();
  for (const [personId] of organizations) {
    if (!moving.some(([id]) => id === personId)) outcomes.set(personId, 'unchanged');
  }
  let run: Awaited<ReturnType<typeof runBounded>> | undefined;
  try {
    run = await runBounded(moving, CONCURRENCY, async ([personId, current]) => {
      await moveAndRecord(outcomes, personId, () =>
        movePerson(store, instanceId, personId, current, target, names),
      );
    });
  } finally {
    // Every path gives back the room it reserved and did not use (or may not have).
    const used = moving.filter(([personId]) => {
      const outcome = outcomes.get(personId);
      return outcome === 'linked' || outcome === 'unknown';
    }).length;
    const unused = moving.length - used;
    if (unused > 0) {
      try {
        await store.release(instanceId, target, unused);
      } catch {
        // The links stand and the answer says so; the store logs the count left too high,
        // which only makes the limit stricter, and `admin repair counts` corrects it.
      }
    }
  }
  if (run.failure) throw stoppedPartWay(run.failure.error, membershipDetails(request, outcomes));
}

/**
 * Removes people from an organization; people not in it are left alone (also when someone
 * else moved them out meanwhile). If a person cannot be unlinked, the answer is 503 naming
 * who was unlinked and who was not.
 */
export async function removeMembers(
  request: MembershipRequest,
  tenant: Tenant,
  store: MembershipStore,
  names: MembershipNames = ORGANIZATION_MEMBERSHIP_NAMES,
): Promise<void> {
  const { instanceId, organizations } = await validate(request, tenant, store, names);
  const target = request.organization_id;
  const outcomes = new Map<string, PersonOutcome>();
  const leaving: string[] = [];
  for (const [personId, current] of organizations) {
    if (current === target) leaving.push(personId);
    else outcomes.set(personId, 'unchanged');
  }
  const run = await runBounded(leaving, CONCURRENCY, async (personId) => {
    await moveAndRecord(outcomes, personId, () =>
      movePerson(store, instanceId, personId, target, undefined, names, target),
    );
  });
  if (run.failure) throw stoppedPartWay(run.failure.error, membershipDetails(request, outcomes));
}
