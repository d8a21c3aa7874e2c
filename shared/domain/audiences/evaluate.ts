import { logger } from '../../lib/logger.js';
import type { Person } from '../people/person.js';
import {
  decideMemberships,
  MembershipConflictError,
  type Decision,
  type LiveAudience,
  type Membership,
} from './membership.js';

/**
 * Evaluating one person against the instance's audiences: the audience worker's one step,
 * for every change of the person (from the people table's stream) and every request to
 * evaluate them (a build, the daily job). Memberships are read first, the person after them
 * (both strongly consistent), so a decision rests on a person at least as new as any
 * membership write before it; every write is conditioned on the membership's revision as
 * read, and a conflict (the subscribe endpoint wrote meanwhile) decides again.
 */
export interface PersonAudienceState {
  recheck_day?: string;
  built: Record<string, number>;
  exists: boolean;
}

export interface EvaluationPorts {
  read(
    instanceId: string,
    personId: string,
  ): Promise<{ memberships: Map<string, Membership>; state: PersonAudienceState }>;
  person(instanceId: string, personId: string): Promise<Person | undefined>;
  /**
   * Writes the decision, and counts the person in `counting` (builds it was not yet counted
   * in) atomically with it: `MembershipConflictError` when either was written meanwhile.
   */
  apply(
    instanceId: string,
    personId: string,
    decision: Decision,
    now: number,
    counting: readonly BuildRequest[],
  ): Promise<void>;
  reschedule(
    instanceId: string,
    personId: string,
    state: PersonAudienceState,
    day: string | undefined,
  ): Promise<void>;
  /** Removes an erased person's state; `counted`: it was counted in a build, which stays known. */
  forget(
    instanceId: string,
    personId: string,
    state: PersonAudienceState,
    counted: boolean,
  ): Promise<void>;
}

/** A build that asked for the person to be evaluated (it counts them once evaluated). */
export interface BuildRequest {
  audienceId: string;
  version: number;
}

const ATTEMPTS = 5;

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export async function evaluatePerson(
  instanceId: string,
  personId: string,
  audiences: readonly LiveAudience[],
  builds: readonly BuildRequest[],
  ports: EvaluationPorts,
  now: () => number = Date.now,
): Promise<Decision> {
  for (let attempt = 1; ; attempt += 1) {
    const { memberships, state } = await ports.read(instanceId, personId);
    const person = await ports.person(instanceId, personId);
    const at = now();
    const decision = decideMemberships(person, memberships, audiences, at);
    // Counted in each build that asked, when it is still the audience's current build and
    // the person was not counted in it yet.
    const counting = builds.filter(
      (build) =>
        audiences.find(({ audience }) => audience.id === build.audienceId)?.audience.build
          .version === build.version && (state.built[build.audienceId] ?? -1) < build.version,
    );
    try {
      await ports.apply(instanceId, personId, decision, at, counting);
    } catch (error) {
      if (error instanceof MembershipConflictError && attempt < ATTEMPTS) continue;
      throw error;
    }
    if (person) {
      const recheck = decision.recheckAt === undefined ? undefined : dayOf(decision.recheckAt);
      await ports.reschedule(instanceId, personId, state, recheck);
    } else if (state.exists || counting.length > 0) {
      // An erased person leaves nothing here but the builds it was counted in, for a while.
      const counted = counting.length > 0 || Object.keys(state.built).length > 0;
      await ports.forget(instanceId, personId, state, counted);
    }
    if (decision.changes.length > 0) {
      logger.debug('Audience memberships changed', {
        instance: instanceId,
        person: personId,
        entered: decision.changes.filter((change) => change.entered).length,
        exited: decision.changes.filter((change) => change.exited).length,
      });
    }
    return decision;
  }
}
