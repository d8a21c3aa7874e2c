import type { ActivityToWrite } from '../activities/record-activities.js';
import type { CompiledFilter } from '../filters/filter.js';
import { derivedId } from '../ids.js';
import { EMAIL_PERMISSION, SMS_PERMISSION, type Person } from '../people/person.js';
import type { Audience } from './audience.js';

/**
 * Who belongs to which audience, decided for one person at a time from what the person is
 * now (docs/audiences.md). Pure: the audience worker reads the person, its memberships and
 * the instance's audiences, and writes what this returns.
 *
 * - Without an exit filter a person is a member exactly while the entry filter matches.
 * - With one, a person enters when the entry filter matches and the exit filter does not,
 *   and stays until the exit filter matches (whatever the entry filter says by then).
 * - Archived people belong to no audience (their preferences are kept); erased people lose
 *   every membership. Archived audiences keep their members as they were.
 * - A member is subscribed to the audience by default; an unsubscribe from it (email or SMS)
 *   is kept while the person is out and back in. The audience's counters count members,
 *   members who can receive its email (subscribed to it and not globally unsubscribed) and
 *   members opted in to its SMS (and to SMS).
 */

/** What the counters of an audience include of one membership. */
export interface Counted {
  members: 0 | 1;
  subscribers: 0 | 1;
  sms_opted_in: 0 | 1;
}

export const NOT_COUNTED: Counted = { members: 0, subscribers: 0, sms_opted_in: 0 };

/** A person's membership of one audience, as stored (a former member's stays, not a member). */
export interface Membership {
  audience_id: string;
  member: boolean;
  /** When the person last entered (kept after they leave, until they enter again). */
  member_from?: string;
  left_at?: string;
  /** The person's choice for this audience's email, and since when. */
  subscribed: boolean;
  subscribed_from?: string;
  sms_opted_in: boolean;
  sms_opted_in_from?: string;
  counted: Counted;
  /** Counts the writes of the membership: every write is conditioned on the one it read. */
  rev: number;
}

/** An audience ready to evaluate: its definition and its compiled filters. */
export interface LiveAudience {
  audience: Audience;
  entry: CompiledFilter;
  exit?: CompiledFilter;
  /**
   * Why the audience is not evaluated (its filter no longer compiles: `liveOrHeld`): its
   * memberships and counters stay as they are.
   */
  held?: string;
}

export interface MembershipChange {
  audienceId: string;
  before?: Membership;
  /** The new state, or null: the membership goes (an erased person, a deleted audience). */
  after: Membership | null;
  /** What this adds to the audience's counters. */
  delta: Counted | { members: number; subscribers: number; sms_opted_in: number };
  entered: boolean;
  exited: boolean;
}

export interface Decision {
  changes: MembershipChange[];
  /** The enter and exit activities to record with the changes. */
  activities: ActivityToWrite[];
  /** The next time the person's memberships could change with time alone (epoch ms). */
  recheckAt?: number;
}

/** What the counters should include of a membership, given the person now. */
export function countedOf(membership: Membership, person: Person | undefined): Counted {
  if (!membership.member || !person || person.archived_at) return NOT_COUNTED;
  return {
    members: 1,
    // People made through the API hold the permissions; a missing one reads as the default.
    subscribers: membership.subscribed && person.fields[EMAIL_PERMISSION] !== false ? 1 : 0,
    sms_opted_in: membership.sms_opted_in && person.fields[SMS_PERMISSION] === true ? 1 : 0,
  };
}

function delta(before: Counted, after: Counted) {
  return {
    members: after.members - before.members,
    subscribers: after.subscribers - before.subscribers,
    sms_opted_in: after.sms_opted_in - before.sms_opted_in,
  };
}

const same = (a: Counted, b: Counted) =>
  a.members === b.members && a.subscribers === b.subscribers && a.sms_opted_in === b.sms_opted_in;

/** A membership changed after it was read: decide again from a new read. */
export class MembershipConflictError extends Error {
  constructor() {
    super('A membership changed since it was read');
    this.name = 'MembershipConflictError';
  }
}

export const ENTER_ACTIVITY = 'act::enter-audience';
export const EXIT_ACTIVITY = 'act::exit-audience';

function audienceActivity(
  kind: 'enter' | 'exit',
  person: Person,
  audience: Audience,
  at: string,
): ActivityToWrite {
  return {
    // The same entry (or exit) handled twice writes the same activity.
    id: derivedId(`${audience.id}#${kind}#${person.id}#${at}`, Date.parse(at)),
    person_id: person.id,
    person_status: 'by-id',
    field_id: kind === 'enter' ? ENTER_ACTIVITY : EXIT_ACTIVITY,
    attr: { 'idt::a': audience.id, 'str::name': audience.name },
    display: `${kind === 'enter' ? 'Entered audience' : 'Exited audience'} ${audience.name}`,
    created_at: at,
    source: 'audiences',
  };
}

/** Whether the person belongs to the audience now, given whether they did. */
function belongs(live: LiveAudience, subject: Person, member: boolean, now: number) {
  const entry = live.entry({ person: subject }, now);
  const exit = live.exit?.({ person: subject }, now);
  const times = [entry.changesAt, exit?.changesAt].filter((at) => at !== undefined);
  const changesAt = times.length > 0 ? Math.min(...times) : undefined;
  if (!exit) return { member: entry.matches, changesAt };
  return { member: member ? !exit.matches : entry.matches && !exit.matches, changesAt };
}

/**
 * What changes of one person's memberships. `person` is undefined once erased; `audiences`
 * are the instance's audiences that are not deleted (archived and held ones included, left as
 * they are); memberships of audiences no longer there go.
 */
export function decideMemberships(
  person: Person | undefined,
  memberships: ReadonlyMap<string, Membership>,
  audiences: readonly LiveAudience[],
  now: number,
): Decision {
  const at = new Date(now).toISOString();
  const changes: MembershipChange[] = [];
  const activities: ActivityToWrite[] = [];
  const times: number[] = [];
  const known = new Set(audiences.map(({ audience }) => audience.id));

  for (const [audienceId, before] of memberships) {
    if (person && known.has(audienceId)) continue;
    // An erased person's memberships go with what they counted; a deleted audience's go
    // alone (its counters went with it).
    changes.push({
      audienceId,
      before,
      after: null,
      delta: known.has(audienceId)
        ? delta(before.counted, NOT_COUNTED)
        : delta(NOT_COUNTED, NOT_COUNTED),
      entered: false,
      exited: false,
    });
  }
  if (!person) return { changes, activities };

  for (const live of audiences) {
    const { audience } = live;
    if (audience.archived_at || live.held !== undefined) continue;
    const before = memberships.get(audience.id);
    const wasMember = before?.member ?? false;
    const outcome = person.archived_at
      ? { member: false, changesAt: undefined }
      : belongs(live, person, wasMember, now);
    if (outcome.changesAt !== undefined) times.push(outcome.changesAt);
    const entered = outcome.member && !wasMember;
    const exited = !outcome.member && wasMember;
    const state: Membership = before
      ? { ...before, member: outcome.member }
      : {
          audience_id: audience.id,
          member: outcome.member,
          subscribed: true,
          subscribed_from: at,
          sms_opted_in: true,
          sms_opted_in_from: at,
          counted: NOT_COUNTED,
          rev: 0,
        };
    if (entered) {
      state.member_from = at;
      delete state.left_at;
    }
    if (exited) state.left_at = at;
    const counted = countedOf(state, person);
    // Nothing to keep for someone who never was a member.
    if (!before && !outcome.member) continue;
    if (!entered && !exited && before && same(before.counted, counted)) continue;
    changes.push({
      audienceId: audience.id,
      ...(before ? { before } : {}),
      after: { ...state, counted, rev: (before?.rev ?? 0) + 1 },
      delta: delta(before?.counted ?? NOT_COUNTED, counted),
      entered,
      exited,
    });
    if (entered) activities.push(audienceActivity('enter', person, audience, at));
    if (exited) activities.push(audienceActivity('exit', person, audience, at));
  }
  return {
    changes,
    activities,
    ...(times.length > 0 ? { recheckAt: Math.min(...times) } : {}),
  };
}

/**
 * Whether a first build can settle the person itself, with nothing to write: the audience's
 * filter leaves the person's membership of it as it is, and names no day on which time alone
 * could change that. `membership` is the person's membership of this audience (absent: none),
 * read before the person. A person this does not settle is evaluated by the audience worker,
 * in order with the person's own changes.
 */
export function settledByBuild(
  person: Person | undefined,
  membership: Membership | undefined,
  live: LiveAudience,
  now: number,
): boolean {
  const memberships = new Map<string, Membership>();
  if (membership) memberships.set(live.audience.id, membership);
  const decision = decideMemberships(person, memberships, [live], now);
  return decision.changes.length === 0 && decision.recheckAt === undefined;
}
