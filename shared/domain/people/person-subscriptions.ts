import { z } from 'zod';
import { FieldValueError } from '../errors.js';
import { parseFieldValue } from '../fields/field-values.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import type { PeopleStore } from './people-store.js';
import { claimId } from '../merge/merge-engine.js';
import { EMAIL, EMAIL_PERMISSION, normalizeKey, SMS_PERMISSION } from './person.js';

/** How many people one `POST /v1/person/subscriptions` looks up (as many as a merge takes). */
export const MAX_SUBSCRIPTION_LOOKUPS = 100;

/** One person to look up: by email or by ID, never both. */
const Lookup = z
  .object({
    email: z
      .string()
      .max(255)
      .refine((value) => isEmail(value), 'expected an email address')
      .optional(),
    person_id: z
      .string()
      .regex(ID_PATTERN, 'expected a person ID (24 hexadecimal characters)')
      .optional(),
  })
  .refine((lookup) => (lookup.email === undefined) !== (lookup.person_id === undefined), {
    message: 'expected exactly one of email or person_id',
  });

/** `POST /v1/person/subscriptions` (docs/api.md, Beyond the spec). */
export const PersonSubscriptionsRequest = z.object({
  people: z
    .array(Lookup)
    .min(1, `expected 1 to ${MAX_SUBSCRIPTION_LOOKUPS} people`)
    .max(MAX_SUBSCRIPTION_LOOKUPS, `expected 1 to ${MAX_SUBSCRIPTION_LOOKUPS} people`),
});
export type PersonSubscriptionsRequest = z.infer<typeof PersonSubscriptionsRequest>;

function isEmail(value: string): boolean {
  try {
    parseFieldValue(EMAIL, 'str', value, 'email');
    return true;
  } catch (error) {
    if (error instanceof FieldValueError) return false;
    throw error;
  }
}

/** A person's subscription state, as the recorded answers of the real API give it. */
export type SubscriptionEntry =
  | {
      person_status: 'merged' | 'by-id';
      person_id: string;
      email?: string;
      email_permissions: boolean;
      sms_permissions: boolean;
      /** Audience memberships: none until audiences exist. */
      subscriptions: never[];
    }
  | { person_status: 'invalid'; person_id?: string; email?: string; error: string };

/**
 * Subscription states of 1 to 100 people, looked up by email (the email's claim: emails are
 * unique per instance) or by ID, in the order asked. Both reads are strongly consistent, so
 * a caller sees a permission it has just changed. A person not found is an `invalid` entry
 * with an error naming the lookup, not a failure of the request: one unknown address in a
 * batch should not hide the others.
 */
export async function getSubscriptions(
  request: PersonSubscriptionsRequest,
  tenant: Tenant,
  store: Pick<PeopleStore, 'findClaimOwners' | 'getPeople'>,
): Promise<{ people: SubscriptionEntry[] }> {
  const instanceId = tenant.instance.id;
  const emailKeys = request.people.flatMap((lookup) => {
    const value = lookup.email === undefined ? undefined : normalizeKey(EMAIL, lookup.email);
    return value === undefined ? [] : [{ field: EMAIL, value }];
  });
  const owners = await store.findClaimOwners(instanceId, emailKeys, true);
  const idOf = (lookup: PersonSubscriptionsRequest['people'][number]) =>
    lookup.person_id ?? owners.get(claimId(EMAIL, normalizeKey(EMAIL, lookup.email ?? '') ?? ''));
  const ids = [...new Set(request.people.map(idOf).filter((id) => id !== undefined))];
  const people = await store.getPeople(instanceId, ids, true);
  return {
    people: request.people.map((lookup, index): SubscriptionEntry => {
      const id = idOf(lookup);
      const person = id === undefined ? undefined : people.get(id);
      if (!person) {
        return lookup.email !== undefined
          ? {
              person_status: 'invalid',
              email: lookup.email,
              error: `people[${index}].email: no person has this email address`,
            }
          : {
              person_status: 'invalid',
              person_id: lookup.person_id ?? '',
              error: `people[${index}].person_id: no person has this ID`,
            };
      }
      const stored = person.fields[EMAIL];
      return {
        person_status: lookup.email !== undefined ? 'merged' : 'by-id',
        person_id: person.id,
        ...(lookup.email !== undefined && typeof stored === 'string' ? { email: stored } : {}),
        // People made through the API hold both; a missing value reads as the spec's default.
        email_permissions: person.fields[EMAIL_PERMISSION] !== false,
        sms_permissions: person.fields[SMS_PERMISSION] === true,
        subscriptions: [],
      };
    }),
  };
}
