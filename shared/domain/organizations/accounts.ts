import { z } from 'zod';
import { ID_PATTERN } from '../ids.js';
import { MAX_MEMBERS, type MembershipNames, type MembershipRequest } from './memberships.js';
export { ACCOUNT_NAMES, ORGANIZATION_NAMES, type OrganizationNames } from './names.js';
import { OrganizationMergeRequest, type OrganizationMergeResult } from './organization-merge.js';

/**
 * The `accounts` names (docs/api.md, Beyond the spec): newer clients of the real API call
 * organizations accounts (`/v1/accounts/merge`, `accounts`, `account_id`, `account_ids`,
 * `person_ids`). They are the same operations as the organizations endpoints, served by the
 * same handler modules and domain functions: this module maps the names at the edge of the
 * domain, both ways, so that the domain knows one vocabulary and each caller reads its own.
 */

/** `POST /v1/accounts/merge`: organizations merge with `accounts` in place of `organizations`. */
export const AccountMergeRequest = OrganizationMergeRequest.omit({ organizations: true }).extend({
  accounts: z
    .array(z.unknown())
    .min(1, 'expected 1 to 100 accounts')
    .max(100, 'expected 1 to 100 accounts'),
});
export type AccountMergeRequest = z.infer<typeof AccountMergeRequest>;

export function organizationMergeOf(request: AccountMergeRequest): OrganizationMergeRequest {
  const { accounts, ...rest } = request;
  return { ...rest, organizations: accounts };
}

export interface AccountMergeResult {
  account_id?: string;
  status: OrganizationMergeResult['status'];
  error?: string;
}

export function accountResultsOf(results: OrganizationMergeResult[]): AccountMergeResult[] {
  return results.map(({ organization_id, ...rest }) =>
    organization_id === undefined ? rest : { account_id: organization_id, ...rest },
  );
}

/** A listing or lookup answer with `accounts` in place of `organizations`. */
export function asAccounts<T extends { organizations: unknown }>(
  answer: T,
): Omit<T, 'organizations'> & { accounts: T['organizations'] } {
  const { organizations, ...rest } = answer;
  return { ...rest, accounts: organizations };
}

const id = z.string().regex(ID_PATTERN, 'expected an ID of 24 hexadecimal characters');
const people = z.array(id).min(1, 'expected at least one person ID').max(MAX_MEMBERS);

/**
 * `PUT /v1/accounts/contacts/add` and `…/remove` take both shapes the real API's clients
 * send: `{"account_id", "person_ids"}` and the organizations' `{"organization_id",
 * "inclusion_ids"}` (one member of each pair; mixing the two vocabularies is accepted).
 */
export const AccountMembershipRequest = z
  .object({
    account_id: id.optional(),
    organization_id: id.optional(),
    person_ids: people.optional(),
    inclusion_ids: people.optional(),
  })
  .superRefine((request, context) => {
    const pairs = [
      ['account_id', 'organization_id'],
      ['person_ids', 'inclusion_ids'],
    ] as const;
    for (const [ours, theirs] of pairs) {
      const given = [ours, theirs].filter((member) => request[member] !== undefined);
      if (given.length !== 1) {
        context.addIssue({
          code: 'custom',
          path: [ours],
          message:
            given.length === 0 ? `required (or ${theirs})` : `give ${ours} or ${theirs}, not both`,
        });
      }
    }
  });
export type AccountMembershipRequest = z.infer<typeof AccountMembershipRequest>;

/** The organizations' request, and the names the caller used (for messages that name them). */
export function membershipOf(request: AccountMembershipRequest): {
  request: MembershipRequest;
  names: MembershipNames;
} {
  return {
    request: {
      organization_id: request.account_id ?? request.organization_id ?? '',
      inclusion_ids: request.person_ids ?? request.inclusion_ids ?? [],
    },
    names: {
      people: request.person_ids ? 'person_ids' : 'inclusion_ids',
      organization: request.account_id ? 'account_id' : 'organization_id',
      noun: 'account',
    },
  };
}
