import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { claimId } from '../merge/merge-engine.js';
import type { PeopleStore } from '../people/people-store.js';
import { EMAIL, EXTERNAL_ID, normalizeKey, type Person } from '../people/person.js';
import type { Tenant } from '../tenancy.js';
import type { AudienceStore } from './audience.js';
import { countedOf, MembershipConflictError, type Membership } from './membership.js';

/**
 * `PUT /v1/audience/subscribe` (docs/api.md, Audiences): a member's email and SMS choices
 * for one audience. Only members have them: a person who is not a member is told so and
 * nothing changes (the audience's filter decides membership, never this call). The answer
 * is the recorded one: `person_status` says how the person was found (`by-id`, or `merged`
 * by email or external ID, with its `person_id`), `status` whether they now receive the
 * audience's email.
 */
export const MAX_SUBSCRIBE_PEOPLE = 100;

const Entry = z
  .strictObject({
    person_id: z
      .string()
      .regex(ID_PATTERN, 'expected a person ID (24 hexadecimal characters)')
      .optional(),
    email: z.string().min(3).max(255).optional(),
    external_id: z.string().min(1).max(255).optional(),
    subscribed: z.boolean().optional(),
    sms_opted_in: z.boolean().optional(),
  })
  .refine(
    (entry) =>
      [entry.person_id, entry.email, entry.external_id].filter((id) => id !== undefined).length ===
      1,
    { message: 'expected exactly one of person_id, email or external_id' },
  );

export const AudienceSubscribeRequest = z.strictObject({
  audience_id: z.string().regex(ID_PATTERN, 'expected an audience ID (24 hexadecimal characters)'),
  people: z
    .array(Entry)
    .min(1, `expected 1 to ${MAX_SUBSCRIBE_PEOPLE} people`)
    .max(MAX_SUBSCRIBE_PEOPLE, `expected 1 to ${MAX_SUBSCRIBE_PEOPLE} people`),
  async: z.boolean().optional(),
});
export type AudienceSubscribeRequest = z.infer<typeof AudienceSubscribeRequest>;

export type SubscribeEntry =
  | {
      person_status: 'by-id' | 'merged';
      person_id?: string;
      status: 'subscribed' | 'unsubscribed' | 'not-member';
      sms_opted_in?: boolean;
      error?: string;
    }
  | { person_status: 'invalid'; status: 'invalid'; error: string };

export interface SubscribePorts {
  audiences: Pick<AudienceStore, 'get'>;
  people: Pick<PeopleStore, 'findClaimOwners' | 'getPeople'>;
  memberships: {
    read(instanceId: string, personId: string): Promise<{ memberships: Map<string, Membership> }>;
    setPreferences(
      instanceId: string,
      personId: string,
      before: Membership,
      after: Membership,
    ): Promise<void>;
  };
  now?: () => number;
}

const ATTEMPTS = 5;

type Lookup = AudienceSubscribeRequest['people'][number];

function keyOf(lookup: Lookup): { field: string; value: string } | undefined {
  if (lookup.email !== undefined) {
    const value = normalizeKey(EMAIL, lookup.email);
    return value === undefined ? undefined : { field: EMAIL, value };
  }
  if (lookup.external_id !== undefined) {
    const value = normalizeKey(EXTERNAL_ID, lookup.external_id);
    return value === undefined ? undefined : { field: EXTERNAL_ID, value };
  }
  return undefined;
}

export async function subscribeToAudience(
  request: AudienceSubscribeRequest,
  tenant: Tenant,
  ports: SubscribePorts,
): Promise<{ audience_id: string; people: SubscribeEntry[] }> {
  const instanceId = tenant.instance.id;
  const audience = await ports.audiences.get(instanceId, request.audience_id);
  if (!audience) {
    throw new NotFoundError(`audience_id: no audience ${request.audience_id}`, [
      { field: 'audience_id', error: 'no such audience' },
    ]);
  }
  const keys = request.people.flatMap((lookup) => {
    const key = keyOf(lookup);
    return key ? [key] : [];
  });
  const owners = await ports.people.findClaimOwners(instanceId, keys, true);
  const idOf = (lookup: Lookup) => {
    if (lookup.person_id !== undefined) return lookup.person_id;
    const key = keyOf(lookup);
    return key ? owners.get(claimId(key.field, key.value)) : undefined;
  };
  const entries: SubscribeEntry[] = [];
  for (const [index, lookup] of request.people.entries()) {
    const personId = idOf(lookup);
    const by = lookup.person_id !== undefined ? 'by-id' : 'merged';
    if (personId === undefined) {
      const member = lookup.email !== undefined ? 'email' : 'external_id';
      entries.push({
        person_status: 'invalid',
        status: 'invalid',
        error: `people[${index}].${member}: no person has this ${member === 'email' ? 'email address' : 'external ID'}`,
      });
      continue;
    }
    entries.push(await subscribeOne(instanceId, audience.id, personId, by, lookup, index, ports));
  }
  return { audience_id: audience.id, people: entries };
}

async function subscribeOne(
  instanceId: string,
  audienceId: string,
  personId: string,
  by: 'by-id' | 'merged',
  lookup: Lookup,
  index: number,
  ports: SubscribePorts,
): Promise<SubscribeEntry> {
  const found = by === 'merged' ? { person_id: personId } : {};
  for (let attempt = 1; ; attempt += 1) {
    // The membership first, the person after it (as the audience worker reads them).
    const { memberships } = await ports.memberships.read(instanceId, personId);
    const people = await ports.people.getPeople(instanceId, [personId], true);
    const person: Person | undefined = people.get(personId);
    if (!person) {
      return {
        person_status: 'invalid',
        status: 'invalid',
        error: `people[${index}].person_id: no person has this ID`,
      };
    }
    const before = memberships.get(audienceId);
    if (!before?.member) {
      return {
        person_status: by,
        ...found,
        status: 'not-member',
        error: `people[${index}]: the person is not a member of this audience, so has no preferences for it`,
      };
    }
    const at = new Date(ports.now?.() ?? Date.now()).toISOString();
    const after: Membership = { ...before, rev: before.rev + 1 };
    if (lookup.subscribed !== undefined && lookup.subscribed !== before.subscribed) {
      after.subscribed = lookup.subscribed;
      after.subscribed_from = at;
    }
    if (lookup.sms_opted_in !== undefined && lookup.sms_opted_in !== before.sms_opted_in) {
      after.sms_opted_in = lookup.sms_opted_in;
      after.sms_opted_in_from = at;
    }
    after.counted = countedOf(after, person);
    try {
      if (after.subscribed !== before.subscribed || after.sms_opted_in !== before.sms_opted_in) {
        await ports.memberships.setPreferences(instanceId, personId, before, after);
      }
    } catch (error) {
      if (error instanceof MembershipConflictError && attempt < ATTEMPTS) continue;
      throw error;
    }
    return {
      person_status: by,
      ...found,
      status: after.subscribed ? 'subscribed' : 'unsubscribed',
      sms_opted_in: after.sms_opted_in,
    };
  }
}

/**
 * One member's email choice for one audience, by person ID (the preference center of the
 * unsubscribe page): what `subscribe` does for one entry, conditioned and retried the same.
 */
export async function setAudienceEmail(
  instanceId: string,
  audienceId: string,
  personId: string,
  subscribed: boolean,
  ports: SubscribePorts,
): Promise<SubscribeEntry> {
  return subscribeOne(instanceId, audienceId, personId, 'by-id', { subscribed }, 0, ports);
}
