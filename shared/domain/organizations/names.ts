/**
 * What error messages and answers call organizations and their IDs: the organizations
 * endpoints' names, or the `accounts` names newer clients use (accounts.ts).
 */
export interface OrganizationNames {
  list: 'organizations' | 'accounts';
  noun: 'organization' | 'account';
  id: 'organization_id' | 'account_id';
}

export const ORGANIZATION_NAMES: OrganizationNames = {
  list: 'organizations',
  noun: 'organization',
  id: 'organization_id',
};
export const ACCOUNT_NAMES: OrganizationNames = {
  list: 'accounts',
  noun: 'account',
  id: 'account_id',
};
