import type { FieldValue } from './fields/field-values.js';
import { runBounded } from '../lib/bounded.js';
import { normalizeKey } from './merge/field-changes.js';

/** How many claims are written at once. */
const CONCURRENCY = 16;

/**
 * Making a custom field unique on an instance that already has people: every value people
 * hold is claimed (the same claim items merges write), so that the field can become a merge
 * key without duplicates being created and without anyone holding a value nobody claimed.
 *
 * Claiming is idempotent (a claim already held by its person is left as it is), so it is
 * resumable: an apply that stops part-way leaves the field `claiming`, and the next apply
 * claims what is left. Two people holding the same value cannot both have it: the first
 * one met keeps the claim, and the value is reported with everyone who holds it.
 * Removing a field's uniqueness gives its claims back.
 */
export interface KeyClaimStore {
  /** Every person of the instance with a value for `field`, a page at a time. */
  peopleWithValues(
    instanceId: string,
    field: string,
  ): AsyncIterable<{ id: string; value: FieldValue }[]>;
  /**
   * Claims a value for a person, provided they still hold `held` (the stored value it was
   * normalized from): `claimed` once it is theirs, `held-by` another person, or `moved` when
   * the person changed the value meanwhile (a merge claims the new one: the field is a key).
   */
  claimValue(
    instanceId: string,
    field: string,
    value: string,
    personId: string,
    held: FieldValue,
  ): Promise<{ kind: 'claimed' } | { kind: 'held-by'; owner: string } | { kind: 'moved' }>;
  /** Moves a claim from `from` (who no longer holds the value) to `to`; false if it moved. */
  takeOverClaim(
    instanceId: string,
    field: string,
    value: string,
    from: string,
    to: string,
  ): Promise<boolean>;
  /** The value `field` holds for each person (strongly consistent); absent people are left out. */
  valuesOf(
    instanceId: string,
    field: string,
    personIds: string[],
  ): Promise<Map<string, FieldValue | undefined>>;
  /** Deletes a person's claim of a value, if it is theirs. */
  releaseValue(instanceId: string, field: string, value: string, personId: string): Promise<void>;
}

export interface ClaimReport {
  field: string;
  /** Values now claimed by the people who hold them. */
  claimed: number;
  /** Values several people hold: the claim stays with the first, all of them are named. */
  shared: { value: string; people: string[] }[];
}

/** Claims every value of `field` people of the instance hold; reports values held twice. */
export async function claimExistingValues(
  store: KeyClaimStore,
  instanceId: string,
  field: string,
): Promise<ClaimReport> {
  let claimed = 0;
  const shared = new Map<string, Set<string>>();
  for await (const page of store.peopleWithValues(instanceId, field)) {
    const clashes: { personId: string; value: string; holder: string }[] = [];
    const run = await runBounded(page, CONCURRENCY, async ({ id, value }) => {
      const normalized = normalizeKey(field, value);
      if (normalized === undefined || normalized === '') return;
      const result = await store.claimValue(instanceId, field, normalized, id, value);
      if (result.kind === 'claimed') claimed += 1;
      else if (result.kind === 'held-by') {
        clashes.push({ personId: id, value: normalized, holder: result.owner });
      }
    });
    if (run.failure) throw run.failure.error;
    if (clashes.length === 0) continue;
    const holders = await store.valuesOf(
      instanceId,
      field,
      clashes.map((clash) => clash.holder),
    );
    for (const clash of clashes) {
      const held = holders.get(clash.holder);
      const stillHolds = held !== undefined && normalizeKey(field, held) === clash.value;
      if (
        !stillHolds &&
        (await store.takeOverClaim(instanceId, field, clash.value, clash.holder, clash.personId))
      ) {
        // A claim left by someone who no longer holds the value: it is this person's now.
        claimed += 1;
        continue;
      }
      const people = shared.get(clash.value) ?? new Set([clash.holder]);
      people.add(clash.personId);
      shared.set(clash.value, people);
    }
  }
  return {
    field,
    claimed,
    shared: [...shared].map(([value, people]) => ({ value, people: [...people] })),
  };
}

/** Gives back the claims of a field that is no longer unique. */
export async function releaseClaims(
  store: KeyClaimStore,
  instanceId: string,
  field: string,
): Promise<number> {
  let released = 0;
  for await (const page of store.peopleWithValues(instanceId, field)) {
    const run = await runBounded(page, CONCURRENCY, async ({ id, value }) => {
      const normalized = normalizeKey(field, value);
      if (normalized === undefined || normalized === '') return;
      await store.releaseValue(instanceId, field, normalized, id);
      released += 1;
    });
    if (run.failure) throw run.failure.error;
  }
  return released;
}
