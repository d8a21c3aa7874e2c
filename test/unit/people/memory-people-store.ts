import type { CreatePlan, UpdatePlan } from '../../../shared/domain/people/merge-plan.js';
import {
  AlreadyAppliedError,
  claimId,
  ClaimNotHeldError,
  ClaimTakenError,
  RecordChangedError,
  type ClaimKey,
  type MergeOutcome,
  type RecordLedger,
  type RecordMarker,
} from '../../../shared/domain/merge/merge-engine.js';
import type { PeopleStore } from '../../../shared/domain/people/people-store.js';
import type { ClaimHintCache } from '../../../shared/domain/merge/claim-hints.js';
import type { Person, RecordedActivity } from '../../../shared/domain/people/person.js';

/**
 * An in-memory people store with the same conditions as the DynamoDB one: claims are
 * conditional, updates are conditioned on the values the plan expected. Counts calls, so
 * tests can check how many round trips a request makes.
 */
export class MemoryPeopleStore implements PeopleStore {
  readonly claims = new Map<string, string>();
  readonly people = new Map<string, Person>();
  readonly activities: { personId: string; activity: RecordedActivity }[] = [];
  readonly tags = new Set<string>();
  readonly calls: Record<string, number> = {};
  /** Outcomes of queued requests' records, by `<request>#<index>` (the ledger). */
  readonly markers = new Map<string, MergeOutcome>();
  contacts = 0;
  subscribers = 0;
  /** A container's hints of claim owners (none unless a test gives some). */
  claimHints: ClaimHintCache | undefined;
  /** Runs before the next write, once: lets a test play a concurrent request. */
  beforeNextWrite: (() => void) | undefined;
  /** Fails a write (thrown before it happens) when it returns an error. */
  failWrite: ((call: number) => Error | undefined) | undefined;
  private writes = 0;

  private count(name: string) {
    this.calls[name] = (this.calls[name] ?? 0) + 1;
  }

  private interfere() {
    const hook = this.beforeNextWrite;
    this.beforeNextWrite = undefined;
    hook?.();
    this.writes += 1;
    const failure = this.failWrite?.(this.writes);
    if (failure) throw failure;
  }

  findClaimOwners(_instance: string, keys: ClaimKey[]) {
    this.count('findClaimOwners');
    const owners = new Map<string, string>();
    for (const { field, value } of keys) {
      const owner = this.claims.get(claimId(field, value));
      if (owner) owners.set(claimId(field, value), owner);
    }
    return Promise.resolve(owners);
  }

  getPeople(_instance: string, ids: string[]) {
    this.count('getPeople');
    const found = new Map<string, Person>();
    for (const id of ids) {
      const person = this.people.get(id);
      if (person) found.set(id, structuredClone(person));
    }
    return Promise.resolve(found);
  }

  /** A write's marker: refused if the record's outcome is there already. */
  private mark(marker: RecordMarker | undefined): Error | undefined {
    if (!marker) return undefined;
    const id = `${marker.requestId}#${marker.index}`;
    if (this.markers.has(id)) return new AlreadyAppliedError();
    this.markers.set(id, marker.outcome);
    return undefined;
  }

  /** The ledger of a request, kept with the people (as the requests table is, in one transaction). */
  ledger(requestId: string): RecordLedger {
    const prefix = `${requestId}#`;
    const own = () =>
      new Map(
        [...this.markers]
          .filter(([id]) => id.startsWith(prefix))
          .map(([id, outcome]) => [Number(id.slice(prefix.length)), outcome]),
      );
    let before: Map<number, MergeOutcome> | undefined;
    return {
      requestId,
      recorded: () => Promise.resolve(own()),
      recordedBefore: () => Promise.resolve((before ??= own())),
      note: (outcomes) => {
        for (const [index, outcome] of outcomes) {
          if (!this.markers.has(`${prefix}${index}`))
            this.markers.set(`${prefix}${index}`, outcome);
        }
        const stands = own();
        return Promise.resolve(
          new Map(outcomes.map(([index, outcome]) => [index, stands.get(index) ?? outcome])),
        );
      },
      outcomeOf: (index) => Promise.resolve(this.markers.get(`${prefix}${index}`)),
    };
  }

  createPerson(_instance: string, plan: CreatePlan, _source?: string, marker?: RecordMarker) {
    this.count('createPerson');
    this.interfere();
    if (marker && this.markers.has(`${marker.requestId}#${marker.index}`)) {
      return Promise.reject(new AlreadyAppliedError());
    }
    const taken = [...plan.claims].filter(([field, value]) =>
      this.claims.has(claimId(field, value)),
    );
    if (taken.length > 0) return Promise.reject(new ClaimTakenError(taken.map(([field]) => field)));
    for (const [field, value] of plan.claims)
      this.claims.set(claimId(field, value), plan.person.id);
    this.people.set(plan.person.id, structuredClone(plan.person));
    this.contacts += 1;
    if (plan.subscribed) this.subscribers += 1;
    this.mark(marker);
    for (const activity of plan.activities)
      this.activities.push({ personId: plan.person.id, activity });
    return Promise.resolve();
  }

  updatePerson(_instance: string, plan: UpdatePlan, _source?: string, marker?: RecordMarker) {
    this.count('updatePerson');
    this.interfere();
    if (marker && this.markers.has(`${marker.requestId}#${marker.index}`)) {
      return Promise.reject(new AlreadyAppliedError());
    }
    const current = this.people.get(plan.before.id);
    if (!current) return Promise.reject(new RecordChangedError());
    for (const [field, expected] of Object.entries(plan.expected)) {
      if (JSON.stringify(current.fields[field]) !== JSON.stringify(expected)) {
        return Promise.reject(new RecordChangedError());
      }
    }
    const taken = [...plan.claimsAdded].filter(([field, value]) => {
      const owner = this.claims.get(claimId(field, value));
      return owner !== undefined && owner !== plan.before.id;
    });
    if (taken.length > 0) return Promise.reject(new ClaimTakenError(taken.map(([field]) => field)));
    if (plan.tagRoom !== undefined && current.tags.length > plan.tagRoom) {
      return Promise.reject(new RecordChangedError());
    }
    // A release deletes our claim or finds none; another person's claim fails the write.
    const notHeld = [...plan.claimsReleased].filter(([field, value]) => {
      const owner = this.claims.get(claimId(field, value));
      return owner !== undefined && owner !== plan.before.id;
    });
    if (notHeld.length > 0) {
      return Promise.reject(
        new ClaimNotHeldError(notHeld.map(([field, value]) => ({ field, value }))),
      );
    }
    for (const [field, value] of plan.claimsReleased) this.claims.delete(claimId(field, value));
    for (const [field, value] of plan.claimsAdded)
      this.claims.set(claimId(field, value), plan.before.id);
    const fields = { ...current.fields, ...plan.sets };
    for (const [field, value] of Object.entries(plan.setsIfAbsent)) fields[field] ??= value;
    for (const field of [...plan.removes, ...plan.clears]) Reflect.deleteProperty(fields, field);
    const tags = [
      ...current.tags.filter((t) => !plan.unsetTags.includes(t)),
      ...plan.addTags.filter((t) => !current.tags.includes(t)),
    ];
    this.people.set(plan.before.id, {
      ...current,
      fields,
      tags,
      updated_at: plan.after.updated_at,
    });
    this.subscribers += plan.subscriberDelta;
    this.mark(marker);
    for (const activity of plan.activities)
      this.activities.push({ personId: plan.before.id, activity });
    return Promise.resolve();
  }

  ensureTags(_instance: string, tags: string[]) {
    this.count('ensureTags');
    for (const tag of tags) this.tags.add(tag);
    return Promise.resolve();
  }
}
