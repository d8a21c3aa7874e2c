import type { FieldValue } from './fields/field-values.js';
import { normalizeKey } from './merge/field-changes.js';

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
  /** Claims a value for a person: `undefined` once it is theirs, else who holds it now. */
  claimValue(
    instanceId: string,
    field: string,
    value: string,
    personId: string,
  ): Promise<string | undefined>;
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
    await Promise.all(
      page.map(async ({ id, value }) => {
        const normalized = normalizeKey(field, value);
        if (normalized === undefined || normalized === '') return;
        const holder = await store.claimValue(instanceId, field, normalized, id);
        if (holder === undefined) claimed += 1;
        else clashes.push({ personId: id, value: normalized, holder });
      }),
    );
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
    await Promise.all(
      page.map(async ({ id, value }) => {
        const normalized = normalizeKey(field, value);
        if (normalized === undefined || normalized === '') return;
        await store.releaseValue(instanceId, field, normalized, id);
        released += 1;
      }),
    );
  }
  return released;
}
