import { describe, expect, it } from '@jest/globals';
import {
  AccountMembershipRequest,
  AccountMergeRequest,
  accountResultsOf,
  asAccounts,
  membershipOf,
  organizationMergeOf,
} from '../../../shared/domain/organizations/accounts.js';
import { OrganizationMergeRequest } from '../../../shared/domain/organizations/organization-merge.js';

const ORG = 'aaaaaaaaaaaaaaaaaaaaaaaa';
const PERSON = 'bbbbbbbbbbbbbbbbbbbbbbbb';

describe('the accounts names, mapped at the edge of the domain', () => {
  it('turns an accounts merge into the organizations merge, and its answer back', () => {
    const body = AccountMergeRequest.parse({
      accounts: [{ fields: { 'str:o:name': 'A' } }],
      merge_by: ['str:o:name'],
      find_strategy: 2,
    });
    const request = organizationMergeOf(body);
    expect(OrganizationMergeRequest.parse(request)).toEqual({
      organizations: [{ fields: { 'str:o:name': 'A' } }],
      merge_by: ['str:o:name'],
      find_strategy: 2,
    });
    expect(
      accountResultsOf([
        { organization_id: ORG, status: 'created' },
        { status: 'invalid', error: 'accounts[1]: bad' },
      ]),
    ).toEqual([
      { account_id: ORG, status: 'created' },
      { status: 'invalid', error: 'accounts[1]: bad' },
    ]);
    expect(asAccounts({ organizations: [{ id: ORG }], has_more: false })).toEqual({
      accounts: [{ id: ORG }],
      has_more: false,
    });
  });

  it.each([
    [{ account_id: ORG, person_ids: [PERSON] }, 'person_ids', 'account_id'],
    [{ organization_id: ORG, inclusion_ids: [PERSON] }, 'inclusion_ids', 'organization_id'],
    [{ account_id: ORG, inclusion_ids: [PERSON] }, 'inclusion_ids', 'account_id'],
  ])('reads contacts bodies of either vocabulary: %j', (body, people, organization) => {
    expect(membershipOf(AccountMembershipRequest.parse(body))).toEqual({
      request: { organization_id: ORG, inclusion_ids: [PERSON] },
      names: { people, organization, noun: 'account' },
    });
  });

  it.each([
    [{ person_ids: [PERSON] }, 'account_id', 'required (or organization_id)'],
    [{ account_id: ORG }, 'person_ids', 'required (or inclusion_ids)'],
    [
      { account_id: ORG, organization_id: ORG, person_ids: [PERSON] },
      'account_id',
      'give account_id or organization_id, not both',
    ],
  ])('refuses %j naming %s', (body, member, message) => {
    const parsed = AccountMembershipRequest.safeParse(body);
    expect(parsed.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      [member, message],
    ]);
  });
});
