import {
  ConsoleFieldCreateRequest,
  ConsoleFieldModifyRequest,
} from '../../domain/console/console-fields.js';
import { ConsoleInstanceRequest } from '../../domain/console/console-keys.js';
import type { RouteKey } from '../../routes.js';
import {
  ConsoleFieldResponse,
  ConsoleFieldsResponse,
  ConsoleOverviewResponse,
} from '../console-overview.js';
import type { Endpoint } from './common.js';
import { HEALTHY_EXAMPLE } from './console-messages.js';

const NOT_YOURS =
  'An instance the user may not manage is answered 404, as one that does not exist.';

const plan = {
  id: 'str:cm:plan',
  name: 'Plan',
  display_type: 'single_select',
  values: ['Free', 'Pro', 'Enterprise'],
  unique: false,
  track_changes: false,
  source: 'api',
  created_at: '2026-12-01T09:30:00.000Z',
};

/** The console's overview and custom fields (docs/console.md). */
export const CONSOLE_OVERVIEW = {
  'POST /console/v1/instances/overview': {
    tag: 'Console',
    summary: "An instance's overview",
    description: `People, subscribers and organizations (the instance's counters); transactional emails sent, bounced and complained about in the last 7 UTC days (daily counters, each event counted once); each webhook's health (the webhooks page's: healthy, failing, paused or disabled, failures in a row) and its newest attempt; and, for platform admins only, the messages waiting in the region's dead-letter queues, which every instance shares (\`null\` for others). ${NOT_YOURS}`,
    request: ConsoleInstanceRequest,
    requestExample: { instance_id: 'acme' },
    errors: [404],
    responses: {
      200: {
        description: 'The overview',
        schema: ConsoleOverviewResponse,
        example: {
          instance_id: 'acme',
          people: { people: 1200, subscribers: 950, organizations: 40 },
          emails: { from: '2026-12-01', to: '2026-12-07', sent: 310, bounced: 4, complained: 1 },
          webhooks: [
            {
              id: '0066a1f0c7e4b0a1b2c3d4e7',
              url: 'https://hooks.example.com/cdp',
              description: 'CRM sync',
              enabled: true,
              disabled_reason: null,
              health: HEALTHY_EXAMPLE,
              last_attempt: {
                at: '2026-12-07T10:00:00.000Z',
                outcome: 'succeeded',
                status_code: 200,
              },
            },
          ],
          dead_letters: null,
        },
      },
    },
  },
  'POST /console/v1/fields/get': {
    tag: 'Console',
    summary: "An instance's custom fields",
    description: `The custom fields of people and of organizations, as the configuration holds them: name, field ID, display type, a select field's options, whether it is unique, tracked, from the file or made through the API; and the IDs of fields deleted through the API (reserved). ${NOT_YOURS}`,
    request: ConsoleInstanceRequest,
    requestExample: { instance_id: 'acme' },
    errors: [404],
    responses: {
      200: {
        description: 'The fields',
        schema: ConsoleFieldsResponse,
        example: {
          instance_id: 'acme',
          person: { fields: [plan], deleted: [] },
          organization: { fields: [], deleted: [] },
        },
      },
    },
  },
  'POST /console/v1/fields/create': {
    tag: 'Console',
    summary: 'Make a custom field',
    description: `A custom person or organization field, by the rules of \`person/custom-field/create\` and \`organizations/custom-field/create\` (its ID is \`<type>:cm:<kebab-case name>\` or \`<type>:oc:…\`; select fields need their options), usable at once. Recorded in the audit log. ${NOT_YOURS}`,
    request: ConsoleFieldCreateRequest,
    requestExample: {
      instance_id: 'acme',
      kind: 'person',
      name: 'Plan',
      type: 'single_select',
      values: ['Free', 'Pro', 'Enterprise'],
    },
    errors: [404],
    responses: {
      200: {
        description: 'The field',
        schema: ConsoleFieldResponse,
        example: { instance_id: 'acme', kind: 'person', field: plan },
      },
    },
  },
  'PUT /console/v1/fields/modify': {
    tag: 'Console',
    summary: "Change a select field's options",
    description: `A select field's options (all of them with \`replace_values\`, or some added or removed), and whether a person field's changes are tracked, by the rules of \`…/custom-field/update\`. Recorded in the audit log. ${NOT_YOURS}`,
    request: ConsoleFieldModifyRequest,
    requestExample: {
      instance_id: 'acme',
      kind: 'person',
      field_id: 'str:cm:plan',
      replace_values: ['Free', 'Pro', 'Enterprise', 'Partner'],
    },
    errors: [404],
    responses: {
      200: {
        description: 'The field as changed',
        schema: ConsoleFieldResponse,
        example: {
          instance_id: 'acme',
          kind: 'person',
          field: { ...plan, values: ['Free', 'Pro', 'Enterprise', 'Partner'] },
        },
      },
    },
  },
} satisfies Partial<Record<RouteKey, Endpoint>>;
