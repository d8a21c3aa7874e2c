import type { CreatePlan, UpdatePlan } from './merge-plan.js';
import type { Person } from './person.js';

export { claimId, type ClaimKey } from '../merge/merge-engine.js';
import type { ClaimKey, RecordMarker } from '../merge/merge-engine.js';
import type { ClaimHintCache } from '../merge/claim-hints.js';

/** What person merge reads and writes. Every call is scoped to one instance. */
export interface PeopleStore {
  /** Owners of key values, as a map from `claimId(field, value)` to person ID. */
  findClaimOwners(
    instanceId: string,
    keys: ClaimKey[],
    consistent?: boolean,
  ): Promise<Map<string, string>>;
  getPeople(instanceId: string, ids: string[], consistent?: boolean): Promise<Map<string, Person>>;
  /**
   * Creates the person with its claims, counters and activities in one transaction (and the
   * record's marker, for a queued request: `AlreadyAppliedError` if it exists).
   */
  createPerson(
    instanceId: string,
    plan: CreatePlan,
    dataSource: string,
    marker?: RecordMarker,
  ): Promise<void>;
  /**
   * Whether a person it creates for a queued request names the request in its own item
   * (`RecordLedger.carried`).
   */
  readonly namesCreatingRequest?: boolean;
  /** Applies an update in one transaction, conditioned on the values the plan relied on. */
  updatePerson(
    instanceId: string,
    plan: UpdatePlan,
    dataSource: string,
    marker?: RecordMarker,
  ): Promise<void>;
  /**
   * Writes the markers of a queued request's records that `createPerson` held (put after its
   * transaction, the person's `origin_*` standing for it meanwhile): called once the
   * request's merge is over, written or stopped, and before its outcome is recorded.
   */
  releaseMarkers?(instanceId: string, requestId: string): Promise<void>;
  /** Makes sure the named tags exist in the instance's tag list. */
  ensureTags(instanceId: string, tags: string[]): Promise<void>;
  /**
   * How many people of a request it takes at once (the merge engine's default otherwise): a
   * store that shares transactions between the writes in flight takes the whole request.
   */
  readonly writeConcurrency?: number;
  /**
   * Owners of email addresses and external IDs this container has seen (its people's claims
   * and writes): a merge whose records it knows reads their people without their claims first.
   */
  readonly claimHints?: ClaimHintCache;
}
