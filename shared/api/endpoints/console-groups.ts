import {
  ConsoleAudienceCreateRequest,
  ConsoleAudienceMembersRequest,
  ConsoleAudienceRequest,
  ConsoleAudiencesRequest,
} from '../../domain/console/console-audiences.js';
import {
  ConsoleOrganizationProfileRequest,
  ConsoleOrganizationsRequest,
} from '../../domain/console/console-organizations.js';
import type { RouteKey } from '../../routes.js';
import {
  ConsoleAudienceMembersResponse,
  ConsoleAudienceResponse,
  ConsoleAudiencesResponse,
  ConsoleOrganizationProfileResponse,
  ConsoleOrganizationsResponse,
} from '../console-groups.js';
import { cursor, ids } from './common.js';
import type { Endpoint } from './common.js';

const NOT_YOURS =
  'An instance the user may not manage is answered 404, as one that does not exist.';
const audienceId = '66a1f0c7e4b0a1b2c3d4e644';
const person = {
  id: ids.person,
  fields: { 'str::email': 'ada@example.com', 'str::first': 'Ada', 'str::last': 'Lovelace' },
};
const vipFilter = {
  $and: [
    { '$u4s::is': { field_id: 'u4s::t', value: 'vip' } },
    { '$tme::relative_less_than': { field_id: 'l', days_ago: 30 } },
  ],
};
const audience = {
  id: audienceId,
  name: 'Active VIPs',
  filter: vipFilter,
  exit_filter: null,
  created: '2026-12-01T09:30:00.000Z',
  archived_at: null,
  members: 120,
  subscribers: 112,
  sms_opted_in: 0,
  added_last_30_days: 14,
  building: false,
  ready: true,
  last_built_at: '2026-12-01T09:30:04.000Z',
  build_progress: { queued: 5000, evaluated: 5000, done_shards: 16 },
  held_reason: null,
};
const building = {
  ...audience,
  members: 0,
  subscribers: 0,
  added_last_30_days: 0,
  building: true,
  ready: false,
  last_built_at: null,
  build_progress: { queued: 0, evaluated: 0, done_shards: 0 },
};

/** The console's organizations and audiences (docs/console.md), tag `Console`. */
export const CONSOLE_GROUPS = {
  'POST /console/v1/organizations/get': {
    tag: 'Console',
    summary: "Search an instance's organizations",
    description: `Organizations by the API's \`q\` (a prefix of the name), else newest first, a page at a time (\`offset\`, \`cursor_id\`), with the instance's totals. ${NOT_YOURS}`,
    request: ConsoleOrganizationsRequest,
    requestExample: { instance_id: 'acme', q: 'glob', limit: 25 },
    errors: [404],
    responses: {
      200: {
        description: 'A page of organizations',
        schema: ConsoleOrganizationsResponse,
        example: {
          instance_id: 'acme',
          organizations: [
            {
              id: ids.organization,
              fields: { 'str:o:name': 'Globex', 'str:o:website': 'https://globex.example' },
            },
          ],
          meta: { total_organizations: 12, total_matches: 1 },
          offset: 0,
          next_offset: 1,
          cursor_id: cursor,
          has_more: false,
        },
      },
    },
  },
  'POST /console/v1/organizations/profile': {
    tag: 'Console',
    summary: "An organization's profile and people",
    description: `Every field with its label, tags, the member count (kept with each link, never counted) and a page of its people (\`limit\`, \`offset\`, \`cursor_id\`), as \`person/get\` finds them by \`idt::o\`. 404 for an organization the instance does not have. ${NOT_YOURS}`,
    request: ConsoleOrganizationProfileRequest,
    requestExample: { instance_id: 'acme', organization_id: ids.organization, limit: 25 },
    errors: [404],
    responses: {
      200: {
        description: 'The profile',
        schema: ConsoleOrganizationProfileResponse,
        example: {
          instance_id: 'acme',
          organization_id: ids.organization,
          fields: [{ id: 'str:o:name', label: 'Name', value: 'Globex' }],
          tags: ['customer'],
          created: '2026-12-01T09:30:00.000Z',
          archived_at: null,
          member_count: 1,
          people: {
            contacts: [person],
            offset: 0,
            next_offset: 1,
            cursor_id: cursor,
            has_more: false,
          },
        },
      },
    },
  },
  'POST /console/v1/audiences/get': {
    tag: 'Console',
    summary: "An instance's audiences",
    description: `Live (or \`archived\`) audiences, newest first, 40 a page (\`offset\`; \`total\` of them match), each with its filter and counters (members, subscribers, SMS opt-ins: counters kept with each membership, never counted) and whether its members are still being found (\`building\`, \`build_progress\`); and the fields a filter can name with the operators that read each (what the console's filter builder offers). ${NOT_YOURS}`,
    request: ConsoleAudiencesRequest,
    requestExample: { instance_id: 'acme' },
    errors: [404],
    responses: {
      200: {
        description: 'The audiences',
        schema: ConsoleAudiencesResponse,
        example: {
          instance_id: 'acme',
          audiences: [audience],
          total: 1,
          offset: 0,
          next_offset: 1,
          has_more: false,
          filter_fields: [
            {
              id: 'u4s::t',
              label: 'Tags',
              type: 'u4s',
              operators: [
                { operator: '$has_any_value', label: 'has any value', kind: 'none' },
                { operator: '$u4s::is', label: 'includes the tag', kind: 'text' },
              ],
            },
          ],
        },
      },
    },
  },
  'POST /console/v1/audiences/create': {
    tag: 'Console',
    summary: 'Make an audience',
    description: `The body of the API's \`audiences/create\` with \`instance_id\`, checked by the same parser (a bad filter is a 400 naming its path, such as \`filter.$and[0].$int::is.value\`); recorded in the audit log. Its members are found in the background: the answer says \`building: true\`, and \`audiences/get\` shows the counters as the build goes. 409 when the name is taken (without case). ${NOT_YOURS}`,
    request: ConsoleAudienceCreateRequest,
    requestExample: { instance_id: 'acme', name: 'Active VIPs', filter: vipFilter },
    errors: [404, 409],
    responses: {
      200: {
        description: 'The audience, building',
        schema: ConsoleAudienceResponse,
        example: { instance_id: 'acme', audience: building },
      },
    },
  },
  'PUT /console/v1/audiences/archive': {
    tag: 'Console',
    summary: 'Archive an audience',
    description: `It is no longer kept current; its members stay as they were. Recorded in the audit log. 404 for an audience the instance does not have. ${NOT_YOURS}`,
    request: ConsoleAudienceRequest,
    requestExample: { instance_id: 'acme', audience_id: audienceId },
    errors: [404],
    responses: {
      200: {
        description: 'The audience, archived',
        schema: ConsoleAudienceResponse,
        example: {
          instance_id: 'acme',
          audience: { ...audience, archived_at: '2026-12-02T10:00:00.000Z' },
        },
      },
    },
  },
  'POST /console/v1/audiences/members': {
    tag: 'Console',
    summary: "An audience's members",
    description: `A page of its members, newest first (\`limit\`, \`offset\`, \`cursor_id\`), from its members index as \`person/get\` with \`audience_id\` reads it; \`total\` is its member count. 404 for an audience the instance does not have. ${NOT_YOURS}`,
    request: ConsoleAudienceMembersRequest,
    requestExample: { instance_id: 'acme', audience_id: audienceId, limit: 25 },
    errors: [404],
    responses: {
      200: {
        description: 'A page of members',
        schema: ConsoleAudienceMembersResponse,
        example: {
          instance_id: 'acme',
          audience_id: audienceId,
          contacts: [person],
          total: 120,
          offset: 0,
          next_offset: 1,
          cursor_id: cursor,
          has_more: true,
        },
      },
    },
  },
} satisfies Partial<Record<RouteKey, Endpoint>>;
