import { z } from 'zod';
import {
  CustomFieldCreateRequest,
  CustomFieldGetRequest,
  CustomFieldUpdateRequest,
} from '../../domain/fields/custom-fields.js';
import {
  AccountMembershipRequest,
  AccountMergeRequest,
} from '../../domain/organizations/accounts.js';
import { MembershipRequest } from '../../domain/organizations/memberships.js';
import {
  AccountGetByIdsRequest,
  OrganizationGetByIdsRequest,
  OrganizationGetRequest,
} from '../../domain/organizations/organization-get.js';
import { OrganizationMergeRequest } from '../../domain/organizations/organization-merge.js';
import { AccountActivitiesRequest } from '../../domain/people/person-activities.js';
import { AccountActivitiesCreateRequest } from '../../domain/organizations/account-activities.js';
import type { RouteKey } from '../../routes.js';
import {
  AccountGetByIdsResponse,
  AccountGetResponse,
  AccountMergeResponse,
  CustomFieldCreateResponse,
  CustomFieldUpdateResponse,
  EmptyResponse,
  OrganizationArchiveResponse,
  OrganizationCustomFieldsResponse,
  OrganizationDeleteResponse,
  AccountDeleteResponse,
  OrganizationGetByIdsResponse,
  OrganizationGetResponse,
  OrganizationMergeRecord,
  OrganizationMergeResponse,
  OrganizationRestoreResponse,
  AccountActivitiesResponse,
  AccountActivitiesCreateResponse,
} from '../schemas.js';
import { cursor, ids, lifecycle, type Endpoint, type Tag } from './common.js';

/** Bodies documented with the real shape of the records the domain reads one by one. */
const OrganizationMergeBody = OrganizationMergeRequest.extend({
  organizations: z.array(OrganizationMergeRecord).min(1).max(100),
}).meta({ id: 'OrganizationMergeRequest' });

const AccountMergeBody = AccountMergeRequest.extend({
  accounts: z.array(OrganizationMergeRecord).min(1).max(100),
}).meta({ id: 'AccountMergeRequest' });

/** The three custom-field routes of organizations, under the accounts or organizations names. */
function organizationFields(area: 'accounts' | 'organizations') {
  const record = area === 'accounts' ? 'account' : 'organization';
  const tag: Tag = area === 'accounts' ? 'Accounts' : 'Organizations';
  return {
    [`POST /v1/${area}/custom-field/get`]: {
      tag,
      summary: 'List custom organization fields',
      description: `The instance’s custom organization fields (\`<type>:oc:<name>\`), configured or created through the API, in the flat shape the real API answers; \`liquid_name\` is \`${record}.custom.<name>\`. The body may be left out.`,
      request: CustomFieldGetRequest,
      requestExample: {},
      responses: {
        200: {
          description: 'The custom organization fields',
          schema: OrganizationCustomFieldsResponse,
          example: {
            fields: [
              {
                id: 'str:oc:industry',
                name: 'Industry',
                display_type: 'text',
                liquid_name: `${record}.custom.industry`,
              },
            ],
          },
        },
      },
    },
    [`POST /v1/${area}/custom-field/create`]: {
      tag,
      summary: 'Create a custom organization field',
      description:
        'Creates `<type>:oc:<kebab-case name>` from `name` and its display `type` (the same types as person fields), usable at once by every call of the region. A name that becomes an existing field’s, an unknown type, `values` on a type without options, or a 101st field is a 400 naming the member.',
      request: CustomFieldCreateRequest,
      requestExample: { name: 'Industry', type: 'text' },
      responses: {
        200: {
          description: 'The field created',
          schema: CustomFieldCreateResponse,
          example: { name: 'Industry', field_id: 'str:oc:industry', display_type: 'text' },
        },
      },
    },
    [`PUT /v1/${area}/custom-field/update`]: {
      tag,
      summary: 'Change a custom organization field’s options',
      description:
        'Replaces (`replace_values`), adds to (`add_values`, `values`) or removes from (`remove_values`) a select field’s options. A field ID of another namespace or unknown to the instance is a 400 naming `field_id`.',
      request: CustomFieldUpdateRequest,
      requestExample: { field_id: 'str:oc:tier', add_values: ['Gold'] },
      responses: {
        200: {
          description: 'The field’s options now',
          schema: CustomFieldUpdateResponse,
          example: { field_id: 'str:oc:tier', values: ['Silver', 'Gold'], track_changes: false },
        },
      },
    },
  } as const satisfies Record<string, Endpoint>;
}

/**
 * Organizations: `organizations/*`, and the same operations under the accounts names
 * (`accounts/*`, with the accounts’ activities).
 */
export const ORGANIZATIONS = {
  'POST /v1/organizations/merge': {
    tag: 'Organizations',
    summary: 'Create or update organizations',
    description:
      'Creates or updates 1 to 100 organizations by `merge_by` (`str:o:name` and/or `str:o:website`; required). A field sent as `null` under strategy 2 is cleared. `async: true` queues the request.',
    request: OrganizationMergeBody,
    requestExample: {
      organizations: [
        { fields: { 'str:o:name': 'Analytical Engines Ltd', 'int:o:employees': 12 } },
      ],
      merge_by: ['str:o:name'],
    },
    responses: {
      200: {
        description: 'One entry per organization sent, in order',
        schema: OrganizationMergeResponse,
        example: { organizations: [{ organization_id: ids.organization, status: 'created' }] },
      },
    },
  },
  'PUT /v1/organizations/contacts/add': {
    tag: 'Organizations',
    summary: 'Link people to an organization',
    description: 'Adds people to an organization (at most 3000 people per organization).',
    request: MembershipRequest,
    requestExample: { inclusion_ids: [ids.person], organization_id: ids.organization },
    responses: { 200: { description: 'Linked', schema: EmptyResponse, example: {} } },
  },
  'PUT /v1/organizations/contacts/remove': {
    tag: 'Organizations',
    summary: 'Unlink people from an organization',
    description: 'Removes people from an organization; people not in it are left alone.',
    request: MembershipRequest,
    requestExample: { inclusion_ids: [ids.person], organization_id: ids.organization },
    responses: { 200: { description: 'Unlinked', schema: EmptyResponse, example: {} } },
  },
  ...organizationFields('accounts'),
  ...organizationFields('organizations'),
  'POST /v1/organizations/get': {
    tag: 'Organizations',
    summary: 'List organizations',
    description:
      'Organizations in pages (`limit`, `offset`, `cursor_id`), with field selection, a name prefix search (`q`) and sort by name.',
    request: OrganizationGetRequest,
    requestExample: { limit: 10, fields: ['str:o:name', 'int:o:employees'] },
    responses: {
      200: {
        description: 'A page of organizations',
        schema: OrganizationGetResponse,
        example: {
          organizations: [
            {
              id: ids.organization,
              fields: { 'str:o:name': 'Analytical Engines Ltd', 'int:o:employees': 12 },
            },
          ],
          meta: { total_organizations: 1, total_matches: 1 },
          offset: 0,
          next_offset: 1,
          cursor_id: cursor,
          has_more: false,
        },
      },
    },
  },
  'POST /v1/organizations/get-by-ids': {
    tag: 'Organizations',
    summary: 'Organizations by ID',
    description:
      'Up to 100 organizations by ID, keyed by ID; IDs of no organization of the instance are left out. `fields` defaults to `["str:o:name"]`.',
    request: OrganizationGetByIdsRequest,
    requestExample: { organization_ids: [ids.organization], fields: ['str:o:name'] },
    responses: {
      200: {
        description: 'The organizations found',
        schema: OrganizationGetByIdsResponse,
        example: {
          organizations: {
            [ids.organization]: {
              id: ids.organization,
              fields: { 'str:o:name': 'Analytical Engines Ltd' },
            },
          },
        },
      },
    },
  },
  'PUT /v1/organizations/archive': lifecycle(
    'Organizations',
    'organizations',
    'archive',
    OrganizationArchiveResponse,
  ),
  'PUT /v1/organizations/restore': lifecycle(
    'Organizations',
    'organizations',
    'restore',
    OrganizationRestoreResponse,
  ),
  'DELETE /v1/organizations/delete': lifecycle(
    'Organizations',
    'organizations',
    'delete',
    OrganizationDeleteResponse,
  ),
  'POST /v1/accounts/merge': {
    tag: 'Accounts',
    summary: 'Create or update accounts',
    description:
      '`POST /v1/organizations/merge` under the accounts names: `accounts` in place of `organizations`, `account_id` in the answer. `async: true` queues the request (its `POST /v1/async/get` result is this answer).',
    request: AccountMergeBody,
    requestExample: {
      accounts: [{ fields: { 'str:o:name': 'Analytical Engines Ltd' } }],
      merge_by: ['str:o:name'],
    },
    responses: {
      200: {
        description: 'One entry per account sent, in order',
        schema: AccountMergeResponse,
        example: { accounts: [{ account_id: ids.organization, status: 'created' }] },
      },
    },
  },
  'POST /v1/accounts/get': {
    tag: 'Accounts',
    summary: 'List accounts',
    description:
      '`POST /v1/organizations/get` under the accounts names: the same body, paging and cursors, answered with `accounts`.',
    request: OrganizationGetRequest,
    requestExample: { limit: 10, fields: ['str:o:name'] },
    responses: {
      200: {
        description: 'A page of accounts',
        schema: AccountGetResponse,
        example: {
          accounts: [{ id: ids.organization, fields: { 'str:o:name': 'Analytical Engines Ltd' } }],
          meta: { total_organizations: 1, total_matches: 1 },
          offset: 0,
          next_offset: 1,
          cursor_id: cursor,
          has_more: false,
        },
      },
    },
  },
  'POST /v1/accounts/activities/create': {
    tag: 'Accounts',
    summary: 'Record account activities',
    description:
      'Records 1 to 100 custom activities of accounts, defined as `act:oc:<name>` (in the configuration, or through `POST /v1/definitions/activity/create` with an `id`). Each names its account by `str:o:organization_id` in `fields` (its other `fields` are then not written), or by the request’s `merge_by` (account key fields), which finds or creates the account with its `fields` as `accounts/merge` does. Attributes are read with the definition’s types; `created` may date it up to 90 days back. An invalid activity (an unknown or person definition, an account not found, a bad attribute) is an `invalid` entry naming the member; when all are, the answer is a 400.',
    request: AccountActivitiesCreateRequest,
    requestExample: {
      activities: [
        {
          activity_id: 'act:oc:flight-booked',
          attributes: { 'int::v': 17500, 'str:cm:carrier': 'Easy Jet' },
          fields: { 'str:o:name': 'Analytical Engines Ltd' },
        },
      ],
      merge_by: ['str:o:name'],
    },
    responses: {
      200: {
        description: 'One entry per activity, in order',
        schema: AccountActivitiesCreateResponse,
        example: {
          activities: [
            {
              account_id: ids.organization,
              account_status: 'merged',
              activity_id: ids.activity,
              status: 'ingested',
            },
          ],
        },
      },
    },
  },
  'POST /v1/accounts/get/activities': {
    tag: 'Accounts',
    summary: 'An account’s activities',
    description:
      'An account’s activities, newest first, in the shape of `POST /v1/person/get/activities` (`activities`, `timeframe`, `offset`, `cursor_id`, `meta`), with `account_id` in place of `person_id`. An account of another instance is one nobody has (400).',
    request: AccountActivitiesRequest,
    requestExample: { account_id: ids.organization, limit: 20 },
    responses: {
      200: {
        description: 'A page of activities',
        schema: AccountActivitiesResponse,
        example: {
          activities: [
            {
              id: ids.activity,
              field_id: 'act:oc:flight-booked',
              attr: { 'str:cm:carrier': 'Easy Jet' },
              created_at: '2026-01-05T10:00:00.000Z',
              render_cmds: [{ content: 'Flight booked' }],
              display: 'Flight booked',
            },
          ],
          meta: {
            total_activities: 1,
            field_ids: null,
            has_more: false,
            retention: { type: 'none', max_value: 0 },
          },
          offset: 0,
          next_offset: 1,
          cursor_id: null,
          has_more: false,
        },
      },
    },
  },
  'POST /v1/accounts/get-by-ids': {
    tag: 'Accounts',
    summary: 'Accounts by ID',
    description:
      '`POST /v1/organizations/get-by-ids` under the accounts names: `account_ids` in, `accounts` out.',
    request: AccountGetByIdsRequest,
    requestExample: { account_ids: [ids.organization] },
    responses: {
      200: {
        description: 'The accounts found',
        schema: AccountGetByIdsResponse,
        example: {
          accounts: {
            [ids.organization]: {
              id: ids.organization,
              fields: { 'str:o:name': 'Analytical Engines Ltd' },
            },
          },
        },
      },
    },
  },
  'PUT /v1/accounts/contacts/add': {
    tag: 'Accounts',
    summary: 'Link people to an account',
    description:
      'Adds people to an account (at most 3000 people per account): `{"account_id", "person_ids"}` or the organizations’ `{"organization_id", "inclusion_ids"}`, one member of each pair.',
    request: AccountMembershipRequest,
    requestExample: { account_id: ids.organization, person_ids: [ids.person] },
    responses: { 200: { description: 'Linked', schema: EmptyResponse, example: {} } },
  },
  'PUT /v1/accounts/contacts/remove': {
    tag: 'Accounts',
    summary: 'Unlink people from an account',
    description:
      'Removes people from an account; people not in it are left alone. Takes the same two shapes as `contacts/add`.',
    request: AccountMembershipRequest,
    requestExample: { account_id: ids.organization, person_ids: [ids.person] },
    responses: { 200: { description: 'Unlinked', schema: EmptyResponse, example: {} } },
  },
  'PUT /v1/accounts/archive': lifecycle(
    'Accounts',
    'accounts',
    'archive',
    OrganizationArchiveResponse,
  ),
  'PUT /v1/accounts/restore': lifecycle(
    'Accounts',
    'accounts',
    'restore',
    OrganizationRestoreResponse,
  ),
  'DELETE /v1/accounts/delete': lifecycle('Accounts', 'accounts', 'delete', AccountDeleteResponse),
} satisfies Partial<Record<RouteKey, Endpoint>>;
