import { z } from 'zod';
import { FieldValueError } from '../errors.js';
import { parseFieldValue } from '../fields/field-values.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';
import type { PeopleStore } from './people-store.js';
import { claimId } from '../merge/merge-engine.js';
import type { Membership } from '../audiences/membership.js';
import { EMAIL, EMAIL_PERMISSION, EXTERNAL_ID, normalizeKey, SMS_PERMISSION } from './person.js';

/** How many people one `POST /v1/person/subscriptions` looks up (as many as a merge takes). */
export const MAX_SUBSCRIPTION_LOOKUPS = 100;

/** One person to look up: by ID, email or external ID (that precedence when several are given). */
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
    external_id: z.string().min(1).max(255).optional(),
  })
  .refine(
    (lookup) =>
      lookup.email !== undefined ||
      lookup.person_id !== undefined ||
      lookup.external_id !== undefined,
    { message: 'expected one of person_id, email or external_id' },
  );

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

/** One audience the person is a member of, as the recorded answers give it. */
export interface AudienceSubscription {
  audience_id: string;
  audience_name: string;
  member_from: string;
  /** Whether the person receives the audience's email: its choice and the global permission. */
  subscribed: boolean;
  subscribed_from: string;
  sms_opted_in: boolean;
  whatsapp_opted_in: false;
  ios_opted_in: false;
  android_opted_in: false;
  web_opted_in: false;
}

/** A person's subscription state, as the recorded answers of the real API give it. */
export type SubscriptionEntry =
  | {
      person_status: 'merged' | 'by-id';
      person_id: string;
      email?: string;
      subscriptions: AudienceSubscription[];
      email_permissions: boolean;
      sms_permissions: boolean;
      // Push channels do not exist here: the recorded answers' false.
      ios_permissions: false;
      android_permissions: false;
      web_permissions: false;
    }
  | {
      person_status: 'invalid';
      person_id?: string;
      email?: string;
      external_id?: string;
      error: string;
    };

/** What the lookup reads of audiences: names, and the memberships of the people found. */
export interface SubscriptionAudiences {
  names(instanceId: string): Promise<Map<string, string>>;
  membershipsOf(
    instanceId: string,
    personIds: readonly string[],
  ): Promise<Map<string, ReadonlyMap<string, Membership>>>;
}

/** The recorded answers' timestamps: whole seconds. */
const seconds = (at: string | undefined) => (at ?? '').replace(/\.\d+Z$/, 'Z');

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
  audiences?: SubscriptionAudiences,
): Promise<{ people: SubscriptionEntry[] }> {
  const instanceId = tenant.instance.id;
  type Lookup = PersonSubscriptionsRequest['people'][number];
  const keyOf = (lookup: Lookup) => {
    if (lookup.person_id !== undefined) return undefined;
    const field = lookup.email !== undefined ? EMAIL : EXTERNAL_ID;
    const value = normalizeKey(field, lookup.email ?? lookup.external_id ?? '');
    return value === undefined ? undefined : { field, value };
  };
  const keys = request.people.flatMap((lookup) => keyOf(lookup) ?? []);
  const owners = await store.findClaimOwners(instanceId, keys, true);
  const idOf = (lookup: Lookup) => {
    const key = keyOf(lookup);
    return lookup.person_id ?? (key ? owners.get(claimId(key.field, key.value)) : undefined);
  };
  const ids = [...new Set(request.people.map(idOf).filter((id) => id !== undefined))];
  const [people, names, memberships] = await Promise.all([
    store.getPeople(instanceId, ids, true),
    audiences?.names(instanceId),
    audiences?.membershipsOf(instanceId, ids),
  ]);
  return {
    people: request.people.map((lookup, index): SubscriptionEntry => {
      const id = idOf(lookup);
      const person = id === undefined ? undefined : people.get(id);
      if (!person) {
        if (lookup.person_id !== undefined) {
          return {
            person_status: 'invalid',
            person_id: lookup.person_id,
            error: `people[${index}].person_id: no person has this ID`,
          };
        }
        return lookup.email !== undefined
          ? {
              person_status: 'invalid',
              email: lookup.email,
              error: `people[${index}].email: no person has this email address`,
            }
          : {
              person_status: 'invalid',
              external_id: lookup.external_id ?? '',
              error: `people[${index}].external_id: no person has this external ID`,
            };
      }
      const stored = person.fields[EMAIL];
      // People made through the API hold both; a missing value reads as the spec's default.
      const emailPermission = person.fields[EMAIL_PERMISSION] !== false;
      const smsPermission = person.fields[SMS_PERMISSION] === true;
      const subscriptions = [...(memberships?.get(person.id)?.values() ?? [])]
        .filter((membership) => membership.member && names?.has(membership.audience_id))
        .sort((a, b) => (a.member_from ?? '').localeCompare(b.member_from ?? ''))
        .map((membership): AudienceSubscription => ({
          audience_id: membership.audience_id,
          audience_name: names?.get(membership.audience_id) ?? '',
          member_from: seconds(membership.member_from),
          subscribed: membership.subscribed && emailPermission,
          subscribed_from: seconds(membership.subscribed_from ?? membership.member_from),
          sms_opted_in: membership.sms_opted_in && smsPermission,
          whatsapp_opted_in: false,
          ios_opted_in: false,
          android_opted_in: false,
          web_opted_in: false,
        }));
      return {
        person_status: lookup.person_id !== undefined ? 'by-id' : 'merged',
        person_id: person.id,
        ...(lookup.person_id === undefined && typeof stored === 'string' ? { email: stored } : {}),
        subscriptions,
        email_permissions: emailPermission,
        sms_permissions: smsPermission,
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      };
    }),
  };
}
