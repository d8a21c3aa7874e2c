import { z } from 'zod';
import {
  ConsoleActivityArchiveRequest,
  ConsoleActivityRequest,
} from '../../domain/console/console-activities.js';
import { ConsoleDataSourceRequest } from '../../domain/console/console-data-sources.js';
import {
  ConsolePeopleRequest,
  ConsoleProfileRequest,
} from '../../domain/console/console-people.js';
import {
  ConsoleAuditRequest,
  ConsoleInstanceRequest,
  ConsoleKeyCreateRequest,
  ConsoleKeyRevokeRequest,
} from '../../domain/console/console-keys.js';
import type { RouteKey } from '../../routes.js';
import {
  ConsoleActivitiesResponse,
  ConsoleActivityArchivedResponse,
  ConsoleActivityResponse,
  ConsoleAuditResponse,
  ConsoleDataSourceResponse,
  ConsoleInstancesResponse,
  ConsoleKeyCreatedResponse,
  ConsoleKeyRevokedResponse,
  ConsoleKeysResponse,
  ConsoleMeResponse,
  ConsolePeopleResponse,
  ConsoleProfileResponse,
} from '../console-schemas.js';
import type { Endpoint } from './common.js';

const instance = { id: 'acme', name: 'Acme Corp', plan: 'business', region: 'default' };
const keyHash = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
const purchased = {
  id: 'act:cm:purchased',
  name: 'Purchased',
  display_text: 'Purchased {{attribute.item}} for {{attribute.price}}',
  attributes: [
    { id: 'str:cm:item', name: 'Item' },
    { id: 'int:cm:price', name: 'Price', kind: 'currency' },
  ],
  conversion_value: true,
  track_as_touch: true,
};
const NOT_YOURS =
  'An instance the user may not manage is answered 404, as one that does not exist.';

/** The console's own API (docs/console.md): a signed-in user's ID token, never a key. */
export const CONSOLE = {
  'GET /console/v1/me': {
    tag: 'Console',
    summary: 'Who signed in',
    description:
      'The signed-in user (from their ID token) and the instances of this region their groups let them manage: every instance for the `platform-admin` group, else one per `instance:<id>` group.',
    responses: {
      200: {
        description: 'The user',
        schema: ConsoleMeResponse,
        example: {
          subject: '3f1c2b4a-0d1e-4f5a-9b8c-7d6e5f4a3b2c',
          email: 'ops@acme.test',
          platform_admin: false,
          instances: [instance],
        },
      },
    },
  },
  'POST /console/v1/instances/get': {
    tag: 'Console',
    summary: 'The instances the user may manage',
    description: 'The instances of this region the signed-in user may manage, by ID.',
    request: z.strictObject({}),
    requestExample: {},
    responses: {
      200: {
        description: 'The instances',
        schema: ConsoleInstancesResponse,
        example: { instances: [instance] },
      },
    },
  },
  'POST /console/v1/keys/get': {
    tag: 'Console',
    summary: "An instance's data sources and API keys",
    description: `Each data source with its merge preferences and its keys, by their SHA-256 (a key is never kept, so never shown again). ${NOT_YOURS}`,
    request: ConsoleInstanceRequest,
    requestExample: { instance_id: 'acme' },
    errors: [404],
    responses: {
      200: {
        description: 'The data sources',
        schema: ConsoleKeysResponse,
        example: {
          instance_id: 'acme',
          data_sources: [
            {
              name: 'Website',
              merge_by: ['str::email'],
              merge_strategy: 2,
              find_strategy: 0,
              declared_in_file: true,
              keys: [
                {
                  key_hash: keyHash,
                  origin: 'minted',
                  created_at: '2026-12-01T09:30:00.000Z',
                  revoked_at: null,
                },
              ],
            },
          ],
        },
      },
    },
  },
  'POST /console/v1/keys/create': {
    tag: 'Console',
    summary: 'Mint an API key',
    description: `A new key of a data source, shown in this answer only (its SHA-256 is kept), recorded in the audit log. ${NOT_YOURS}`,
    request: ConsoleKeyCreateRequest,
    requestExample: { instance_id: 'acme', data_source: 'Website' },
    errors: [404],
    responses: {
      200: {
        description: 'The new key',
        schema: ConsoleKeyCreatedResponse,
        example: {
          instance_id: 'acme',
          data_source: 'Website',
          key: 'cdp_default_5mXq0yZ8b2Jk1VfS4tWc9rEhL7nPaQ3dGuIoT6sYxB0',
          key_hash: keyHash,
        },
      },
    },
  },
  'PUT /console/v1/keys/revoke': {
    tag: 'Console',
    summary: 'Revoke an API key',
    description: `The key, named by its SHA-256, is refused everywhere within seconds; recorded in the audit log. ${NOT_YOURS}`,
    request: ConsoleKeyRevokeRequest,
    requestExample: { instance_id: 'acme', key_hash: keyHash },
    errors: [404],
    responses: {
      200: {
        description: 'Revoked',
        schema: ConsoleKeyRevokedResponse,
        example: { instance_id: 'acme', key_hash: keyHash, revoked: true },
      },
    },
  },
  'POST /console/v1/audit/get': {
    tag: 'Console',
    summary: "An instance's audit log",
    description: `Every change made through the console to the instance (who, what, when, from where), newest first; \`next\` continues. ${NOT_YOURS}`,
    request: ConsoleAuditRequest,
    requestExample: { instance_id: 'acme', limit: 50 },
    errors: [404],
    responses: {
      200: {
        description: 'A page of the log',
        schema: ConsoleAuditResponse,
        example: {
          entries: [
            {
              at: '2026-12-01T09:30:00.000Z',
              actor: { subject: '3f1c2b4a-0d1e-4f5a-9b8c-7d6e5f4a3b2c', email: 'ops@acme.test' },
              action: 'key.create',
              target: 'data_source:Website',
              source_ip: '203.0.113.7',
              request_id: 'c0ffee00-0000-4000-8000-000000000001',
              details: { key_hash: keyHash },
            },
          ],
          next: null,
        },
      },
    },
  },
  'POST /console/v1/activities/get': {
    tag: 'Console',
    summary: "An instance's activity definitions",
    description: `Every definition, archived ones too, and the custom person fields an attribute may map to. ${NOT_YOURS}`,
    request: ConsoleInstanceRequest,
    requestExample: { instance_id: 'acme' },
    errors: [404],
    responses: {
      200: {
        description: 'The definitions',
        schema: ConsoleActivitiesResponse,
        example: {
          instance_id: 'acme',
          activities: [purchased],
          person_fields: [{ id: 'str:cm:last-item', name: 'Last item' }],
        },
      },
    },
  },
  'POST /console/v1/activities/create': {
    tag: 'Console',
    summary: 'Define an activity',
    description: `A definition in the configuration file's shape, checked by its rules and usable at once; recorded in the audit log. 409 when the ID is taken. ${NOT_YOURS}`,
    request: ConsoleActivityRequest,
    requestExample: { instance_id: 'acme', definition: purchased },
    errors: [404, 409],
    responses: {
      200: {
        description: 'The definition',
        schema: ConsoleActivityResponse,
        example: { activity: purchased },
      },
    },
  },
  'PUT /console/v1/activities/modify': {
    tag: 'Console',
    summary: 'Change an activity definition',
    description: `The definition named by \`definition.id\` replaced by the one given (archived ones cannot change); recorded in the audit log. ${NOT_YOURS}`,
    request: ConsoleActivityRequest,
    requestExample: { instance_id: 'acme', definition: { ...purchased, name: 'Bought' } },
    errors: [404],
    responses: {
      200: {
        description: 'The definition',
        schema: ConsoleActivityResponse,
        example: { activity: { ...purchased, name: 'Bought' } },
      },
    },
  },
  'PUT /console/v1/activities/archive': {
    tag: 'Console',
    summary: 'Archive an activity definition',
    description: `Its recorded activities stay readable; new ones are refused. Recorded in the audit log. ${NOT_YOURS}`,
    request: ConsoleActivityArchiveRequest,
    requestExample: { instance_id: 'acme', activity_field_id: 'act:cm:purchased' },
    errors: [404],
    responses: {
      200: {
        description: 'Archived',
        schema: ConsoleActivityArchivedResponse,
        example: { archived_activity: 'act:cm:purchased' },
      },
    },
  },
  'POST /console/v1/people/get': {
    tag: 'Console',
    summary: "Search an instance's people",
    description: `People by the API's \`q\` search and \`filter\` (the filter language of \`person/get\` and the audiences), newest first, a page at a time (\`offset\`, \`cursor_id\`), with the instance's totals and the fields a filter can name. ${NOT_YOURS}`,
    request: ConsolePeopleRequest,
    requestExample: {
      instance_id: 'acme',
      q: 'ada',
      filter: { '$str::is': { field_id: 'str::first', value: 'Ada' } },
      limit: 25,
    },
    errors: [404],
    responses: {
      200: {
        description: 'A page of people',
        schema: ConsolePeopleResponse,
        example: {
          instance_id: 'acme',
          contacts: [
            {
              id: '0066a1f0c7e4b0a1b2c3d4e5',
              fields: { 'str::email': 'ada@example.com', 'str::first': 'Ada' },
            },
          ],
          meta: {
            total_contacts: 1,
            total_organizations: 0,
            total_matches: 1,
            total_subscribers: 1,
          },
          offset: 0,
          next_offset: 1,
          has_more: false,
          filter_fields: [
            {
              id: 'str::first',
              label: 'First name',
              type: 'str',
              operators: [{ operator: '$str::is', label: 'is', kind: 'text' }],
            },
          ],
        },
      },
    },
  },
  'POST /console/v1/people/profile': {
    tag: 'Console',
    summary: "A person's profile",
    description: `Every field with its label, tags, organization, the 50 newest activities as display text, the 10 newest emails sent to the person and the audiences they are in. 404 for a person the instance does not have. ${NOT_YOURS}`,
    request: ConsoleProfileRequest,
    requestExample: { instance_id: 'acme', person_id: '0066a1f0c7e4b0a1b2c3d4e5' },
    errors: [404],
    responses: {
      200: {
        description: 'The profile',
        schema: ConsoleProfileResponse,
        example: {
          instance_id: 'acme',
          person_id: '0066a1f0c7e4b0a1b2c3d4e5',
          fields: [{ id: 'str::email', label: 'Email', value: 'ada@example.com' }],
          tags: ['vip'],
          created: '2026-12-01T09:30:00.000Z',
          last_seen: '2026-12-02T10:00:00.000Z',
          organization_id: null,
          activities: [
            {
              id: '0066a1f0c7e4b0a1b2c3d4e6',
              activity_id: 'act:cm:purchased',
              display: 'Purchased Analytical Engine',
              created_at: '2026-12-02T10:00:00.000Z',
            },
          ],
          emails: [],
          audiences: [
            {
              audience_id: '0066a1f0c7e4b0a1b2c3d4f0',
              name: 'Newsletter',
              member_from: '2026-12-01T09:31:00.000Z',
              subscribed: true,
            },
          ],
        },
      },
    },
  },
  'POST /console/v1/data-sources/create': {
    tag: 'Console',
    summary: 'Make a data source',
    description: `A data source with its merge preferences, checked by the configuration file's rules, usable at once (mint its keys next); \`apply\` keeps it. Recorded in the audit log. 409 when the name is taken. ${NOT_YOURS}`,
    request: ConsoleDataSourceRequest,
    requestExample: {
      instance_id: 'acme',
      data_source: {
        name: 'Mobile app',
        merge_by: ['str::email'],
        merge_strategy: 2,
        find_strategy: 0,
      },
    },
    errors: [404, 409],
    responses: {
      200: {
        description: 'The data source',
        schema: ConsoleDataSourceResponse,
        example: {
          instance_id: 'acme',
          data_source: {
            name: 'Mobile app',
            merge_by: ['str::email'],
            merge_strategy: 2,
            find_strategy: 0,
          },
        },
      },
    },
  },
} satisfies Partial<Record<RouteKey, Endpoint>>;
