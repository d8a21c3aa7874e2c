import { z } from 'zod';
import { ActivitiesCreateRequest } from '../domain/activities/record-activities.js';
import {
  AnyActivityDefinitionRequest,
  CustomActivityDeleteRequest,
  CustomActivityModifyRequest,
} from '../domain/activities/definition-create.js';
import {
  CustomFieldCreateRequest,
  CustomFieldGetRequest,
  CustomFieldUpdateRequest,
} from '../domain/fields/custom-fields.js';
import { CustomFieldDeleteRequest } from '../domain/fields/custom-field-api.js';
import { TagsGetRequest } from '../domain/people/tags.js';
import { TransactionalGetRequest } from '../domain/email/email-status.js';
import { EmailEntry, TransactionalSendRequest } from '../domain/email/send-request.js';
import { AsyncGetRequest } from '../domain/ingest/request-status.js';
import { InstanceSchemaRequest } from '../domain/fields/instance-schema.js';
import { LifecycleRequest, type LifecycleAction } from '../domain/lifecycle/lifecycle.js';
import { AccountMembershipRequest, AccountMergeRequest } from '../domain/organizations/accounts.js';
import { MembershipRequest } from '../domain/organizations/memberships.js';
import {
  AccountGetByIdsRequest,
  OrganizationGetByIdsRequest,
  OrganizationGetRequest,
} from '../domain/organizations/organization-get.js';
import { OrganizationMergeRequest } from '../domain/organizations/organization-merge.js';
import { PersonMergeRequest } from '../domain/people/merge-request.js';
import {
  AccountActivitiesRequest,
  PersonActivitiesRequest,
} from '../domain/people/person-activities.js';
import { AccountActivitiesCreateRequest } from '../domain/organizations/account-activities.js';
import { PersonGetByIdsRequest, PersonGetRequest } from '../domain/people/person-get.js';
import { PersonSubscriptionsRequest } from '../domain/people/person-subscriptions.js';
import {
  AudienceCreateRequest,
  AudienceIdRequest,
  AudiencesGetRequest,
  AudienceUpdateRequest,
} from '../domain/audiences/audience.js';
import { AudienceSubscribeRequest } from '../domain/audiences/subscribe.js';
import {
  WebhookCreateRequest,
  WebhookIdRequest,
  WebhooksGetRequest,
  WebhookUpdateRequest,
} from '../domain/webhooks/webhook.js';
import { DeliveriesGetRequest } from '../domain/webhooks/attempts.js';
import { ReplayRequest } from '../domain/webhooks/replay.js';
import { REFERENCE_ASSETS, type RouteKey } from '../routes.js';
import {
  AccountGetByIdsResponse,
  AccountGetResponse,
  AccountMergeResponse,
  ActivitiesCreateResponse,
  ActivityDefinitionResponse,
  ActivityRecord,
  ArchivedActivityResponse,
  AsyncGetResponse,
  AudienceDeleteResponse,
  AudienceEntrySchema,
  AudiencesGetResponse,
  AudienceSubscribeResponse,
  CustomActivityResponse,
  CustomFieldCreateResponse,
  CustomFieldUpdateResponse,
  EmptyResponse,
  HealthResponse,
  InstanceSchemaResponse,
  Location,
  OrganizationArchiveResponse,
  OrganizationCustomFieldsResponse,
  OrganizationDeleteResponse,
  AccountDeleteResponse,
  OrganizationGetByIdsResponse,
  OrganizationGetResponse,
  OrganizationMergeRecord,
  OrganizationMergeResponse,
  OrganizationRestoreResponse,
  PersonActivitiesResponse,
  AccountActivitiesResponse,
  AccountActivitiesCreateResponse,
  PersonArchiveResponse,
  PersonCustomFieldsResponse,
  PersonDeleteResponse,
  PersonFieldsInput,
  PersonGetByIdsResponse,
  PersonGetResponse,
  PersonMergeRecord,
  PersonMergeResponse,
  PersonRestoreResponse,
  PersonSubscriptionsResponse,
  TagsResponse,
  TransactionalGetResponse,
  TransactionalSendResponse,
  WebhookCreatedSchema,
  WebhookDeleteResponse,
  WebhookEntrySchema,
  WebhookSecretResponse,
  WebhooksGetResponse,
  DeliveriesGetResponse,
  ReplaySchema,
} from './schemas.js';

/**
 * The API's description, one entry per route of the routes table (`shared/routes.ts`): what
 * the OpenAPI document says of it. `npm run openapi` builds `docs/openapi.json` from this
 * table (`shared/api/document.ts`), and a test fails when a route has no entry here. To
 * describe a new route, add its entry: its summary, its request body schema (the zod schema
 * its handler validates with), its answers (the response schemas its handler is typed
 * with) with examples, and the error statuses that are its own. The statuses every route
 * shares (edge limits, keys, rate limits, idempotency, the store) are added from the route's
 * definition.
 */

export type Tag =
  | 'People'
  | 'Organizations'
  | 'Activities'
  | 'Asynchronous requests'
  | 'Transactional email'
  | 'Email links'
  | 'Accounts'
  | 'Instance'
  | 'Audiences'
  | 'Webhooks'
  | 'Service';

export interface Answer {
  description: string;
  /** The JSON body's schema; absent for answers that are not JSON (`content`). */
  schema?: z.ZodType;
  example?: unknown;
  /** A body of another media type (HTML pages, images, scripts). */
  content?: { type: string; description: string };
  /** Response headers beyond `X-Request-Id` (documented in `document.ts`). */
  headers?: readonly ('Location' | 'Cache-Control' | 'X-Next-Cursor')[];
}

export interface Endpoint {
  tag: Tag;
  summary: string;
  description: string;
  /** The JSON request body, as its handler (or domain) validates it. */
  request?: z.ZodType;
  requestExample?: unknown;
  /** The successful answers by status. */
  responses: Readonly<Partial<Record<200 | 202 | 302, Answer>>>;
  /** Error statuses of this route beyond those every route of its kind has. */
  errors?: readonly number[];
  /** Query parameters (the public links). */
  query?: z.ZodObject;
}

const ids = {
  person: '66a1f0c2e4b0a1b2c3d4e5f6',
  person2: '66a1f0c2e4b0a1b2c3d4e5f7',
  organization: '66a1f0c3e4b0a1b2c3d4e600',
  activity: '66a1f0c4e4b0a1b2c3d4e611',
  request: '66a1f0c5e4b0a1b2c3d4e622',
  message: '66a1f0c6e4b0a1b2c3d4e633',
};

const cursor = 'eyJ2IjozLCJtb2RlIjoiaW5kZXgifQ.c2lnbmF0dXJl';

const audienceId = '66a1f0c7e4b0a1b2c3d4e644';
const audienceFilter = {
  $and: [
    { $and: [{ '$bol::is': { field_id: 'bol::p', value: true } }] },
    { $and: [{ '$tme::relative_more_than': { field_id: 'l', days_ago: 30 } }] },
  ],
};
/** A webhook as the endpoints answer it, for the examples. */
const webhookExample = {
  id: '66a1f0c8e4b0a1b2c3d4e655',
  url: 'https://hooks.example.com/cdp',
  events: ['person.*'],
  description: 'CRM sync',
  enabled: true,
  created_at: '2026-07-01T09:30:00.000Z',
  updated_at: '2026-07-01T09:30:00.000Z',
};

/** A replay as `webhooks/replay` answers it when it starts, for the examples. */
const replayExample = {
  replay_id: '66a1f0c9e4b0a1b2c3d4e666',
  webhook_id: webhookExample.id,
  since: '2026-11-24T00:00:00.000Z',
  until: '2026-11-24T10:30:00.000Z',
  status: 'queued',
  events_found: 0,
  events_queued: 0,
  events_skipped: 0,
  events_delivered: 0,
  created_at: '2026-11-24T10:30:00.000Z',
  updated_at: '2026-11-24T10:30:00.000Z',
};

/** An audience as the endpoints answer it, for the examples. */
const audienceExample = {
  id: audienceId,
  instance_id: 'acme',
  folder_id: null,
  data_source_id: '000000000000000000000000',
  icon_id: 'audiences-illustration-icon',
  type: 'permanent',
  building: false,
  ready: true,
  is_public: true,
  sms_is_public: false,
  sms_public_name: '',
  sms_public_description: '',
  filter: audienceFilter,
  filter_sha: 'f67bd9c808f20b598c0a03673efd89e96cc498af',
  last_built_at: '2026-11-24T10:00:02.000Z',
  new_filter: null,
  new_filter_sha: '',
  last_used: '2026-11-24T10:00:00.000Z',
  created: '2026-11-24T10:00:00.000Z',
  created_by_id: '',
  created_by_name: '',
  edited_at: '2026-11-24T10:00:00.000Z',
  name: 'Slipping subscribers',
  public_name: 'News and updates',
  public_description: 'We will send you news and updates',
  template_id: '000000000000000000000000',
  exit_selection: '',
  new_exit_criteria_filter: null,
  ds_destinations: null,
  sms_opted_in: 12,
  subscribers: 30,
  members: 43,
  added_last_30_days: 5,
  engagement: 0,
  revenue: 0,
  is_cold: false,
  build_progress: { queued: 1200, evaluated: 1200, done_shards: 16 },
};

function audienceAnswer(description: string): Endpoint['responses'] {
  return { 200: { description, schema: AudienceEntrySchema, example: audienceExample } };
}

/** Bodies documented with the real shape of the records the domain reads one by one. */
const PersonMergeBody = PersonMergeRequest.extend({
  people: z.array(PersonMergeRecord).min(1).max(100),
}).meta({ id: 'PersonMergeRequest' });

const OrganizationMergeBody = OrganizationMergeRequest.extend({
  organizations: z.array(OrganizationMergeRecord).min(1).max(100),
}).meta({ id: 'OrganizationMergeRequest' });

const ActivitiesCreateBody = ActivitiesCreateRequest.extend({
  activities: z.array(ActivityRecord).min(1).max(100),
}).meta({ id: 'ActivitiesCreateRequest' });

const TransactionalSendBody = TransactionalSendRequest.extend({
  emails: z
    .array(EmailEntry.extend({ fields: PersonFieldsInput, location: Location.optional() }))
    .min(1)
    .max(100),
}).meta({ id: 'TransactionalSendRequest' });

const AccountMergeBody = AccountMergeRequest.extend({
  accounts: z.array(OrganizationMergeRecord).min(1).max(100),
}).meta({ id: 'AccountMergeRequest' });

/** One or the other, as `LifecycleRequest`'s refinement says (both, or neither, is a 400). */
const LifecycleBody = z
  .xor([
    z
      .object({ inclusion_ids: LifecycleRequest.shape.inclusion_ids.unwrap() })
      .meta({ title: 'Named records', description: '1 to 100 IDs, changed before the answer' }),
    z
      .object({
        all_rows_selected: z.literal(true),
        exclusion_ids: LifecycleRequest.shape.exclusion_ids,
      })
      .meta({
        title: 'Every record',
        description: 'Every record but `exclusion_ids` (up to 1000): a background request',
      }),
  ])
  .meta({ id: 'LifecycleRequest' });

/** What archive, restore and delete do, by action and by the names the route uses. */
const LIFECYCLE_TEXT: Record<
  LifecycleAction,
  (names: { plural: string; singular: string }) => { summary: string; description: string }
> = {
  archive: ({ plural }) => ({
    summary: `Archive ${plural}`,
    description:
      plural === 'people'
        ? 'Archived people leave listings, searches, counters and their organization’s member count, are not emailed, and keep their merge keys: a merge, an activity or a send that finds one is refused for that record (`invalid`), never creates a second person. Restore brings them back.'
        : `Archived ${plural} leave listings, name searches and \`total_organizations\`, keep their key claims (a merge that finds one is \`invalid\`) and their people. Restore brings them back.`,
  }),
  restore: ({ plural }) => ({
    summary: `Restore archived ${plural}`,
    description: `Puts archived ${plural} back into listings, searches and counters.`,
  }),
  delete: ({ plural, singular }) => ({
    summary: `Delete archived ${plural} (erasure)`,
    description:
      plural === 'people'
        ? 'Erases archived people (only archived ones: any other is a 400 naming it, and nothing is deleted) and everything that names them: fields, tags, key claims, memberships, activities, kept `Idempotency-Key` answers, asynchronous requests and sent-email records. Kept: the hashed suppression of an address that bounced or complained, and an audit entry without personal data. The body is JSON, as with every call.'
        : `Deletes archived ${plural} that have no people (one that still has people is a 400 naming it): the ${singular}, its key claims and its count; an audit entry without personal data is kept. The body is JSON, as with every call.`,
  }),
};

const VERB = { archive: 'archived', restore: 'restored', delete: 'deleted' } as const;

/** The entry of an archive, restore or delete route. */
function lifecycle(
  tag: Tag,
  names: 'people' | 'organizations' | 'accounts',
  action: LifecycleAction,
  schema: z.ZodType,
): Endpoint {
  const singular = { people: 'person', organizations: 'organization', accounts: 'account' }[names];
  const text = LIFECYCLE_TEXT[action]({ plural: names, singular });
  // As recorded: the accounts delete answers the accounts names, archive and restore not.
  const noun =
    names === 'people'
      ? 'contacts'
      : names === 'accounts' && action === 'delete'
        ? 'accounts'
        : 'organizations';
  const accounts =
    names === 'accounts'
      ? ` The organizations endpoint under the accounts names (the same operation${noun === 'accounts' ? '; its answer says `scheduled_accounts` and `deleted_accounts`, as the real API’s does' : ' and answer, as the real API’s'}).`
      : '';
  return {
    tag,
    summary: text.summary,
    description: `${text.description} With \`inclusion_ids\` the records are changed before the answer: every ID is checked first (an unknown one, or one of another instance, is a 400 naming it, and nothing changes), records already so are left alone and not counted, and \`scheduled_${noun}\` is 0. With \`all_rows_selected\` the request runs in the background: the answer comes at once with \`scheduled_${noun}\` (how many it is about to change) and a \`request_id\`, and \`POST /v1/async/get\` shows its \`progress\`, then its \`result\` (this answer).${accounts}`,
    request: LifecycleBody,
    requestExample: { inclusion_ids: [names === 'people' ? ids.person : ids.organization] },
    responses: {
      200: {
        description: `How many were ${VERB[action]} (or scheduled, in the background)`,
        schema,
        example: { [`scheduled_${noun}`]: 0, [`${VERB[action]}_${noun}`]: 1 },
      },
    },
  };
}

const token = z.object({
  t: z.string().meta({ description: 'The signed token of the link, as the email holds it' }),
});

const html = (description: string): Answer => ({
  description,
  content: { type: 'text/html', description },
  headers: ['Cache-Control'],
});

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

export const ENDPOINTS: Readonly<Record<RouteKey, Endpoint>> = {
  'GET /health': {
    tag: 'Service',
    summary: 'Health of the regional API',
    description: 'Answers 200 once the regional deployment can serve requests. No key needed.',
    responses: {
      200: {
        description: 'Ready',
        schema: HealthResponse,
        example: { status: 'ok', region: 'default' },
      },
    },
  },
  'POST /v1/transactional/send': {
    tag: 'Transactional email',
    summary: 'Send transactional email',
    description:
      'Sends 1 to 100 emails, each to a person found or created by `merge_by`. Needs the transactional email feature and a Business or Enterprise plan (403 otherwise, before the body is looked at). Subject and body are Liquid templates (`{{ people.first-name }}`, `{{ json.<key> }}`); `campaign_id`/`asset_id` use a stored template. Answers 202 once every email is rendered and queued.',
    request: TransactionalSendBody,
    requestExample: {
      asset: {
        from_email: 'team@mail.example.com',
        from_name: 'Example Team',
        subject: 'Welcome, {{ people.first-name }}',
        email_name: 'welcome',
        html_body: '<html><body><p>Hi {{ people.first-name }}!</p></body></html>',
      },
      emails: [{ fields: { 'str::email': 'ada@example.com', 'str::first': 'Ada' } }],
      merge_by: ['str::email'],
    },
    responses: {
      202: {
        description: 'Every email was validated, rendered, recorded and queued',
        schema: TransactionalSendResponse,
        example: {
          emails: [
            {
              person_id: ids.person,
              contact_status: 'created',
              email_status: 'queued',
              message_id: ids.message,
              email_name: 'welcome',
            },
          ],
        },
      },
    },
    errors: [403],
  },
  'POST /v1/transactional/get': {
    tag: 'Transactional email',
    summary: 'State and events of sent emails',
    description:
      'Where each email stands (`queued`, `sent`, `failed`, `bounced`, `complained`, `suppressed`) with its events, in the order asked. An ID of no email of the instance is an entry with `error: "not found"`; 404 when none is found.',
    request: TransactionalGetRequest,
    requestExample: { message_ids: [ids.message] },
    responses: {
      200: {
        description: 'The emails asked for',
        schema: TransactionalGetResponse,
        example: {
          emails: [
            {
              message_id: ids.message,
              person_id: ids.person,
              email_name: 'welcome',
              status: 'sent',
              events: [
                { type: 'queued', at: '2026-01-05T10:00:00.000Z' },
                { type: 'sent', at: '2026-01-05T10:00:01.000Z' },
              ],
            },
          ],
        },
      },
    },
    errors: [404],
  },
  'POST /v1/person/merge': {
    tag: 'People',
    summary: 'Create or update people',
    description:
      'Creates or updates 1 to 100 people by their merge key (`merge_by`, else the data source’s), with tags and subscription permissions. Records that fail are `invalid` with their `error` while the others are applied; a request whose every record is invalid is a 400. With `async: true` the request is checked, queued and answered at once with a `request_id`.',
    request: PersonMergeBody,
    requestExample: {
      people: [
        {
          fields: { 'str::email': 'ada@example.com', 'str::first': 'Ada', 'str::last': 'Lovelace' },
          tags: ['newsletter'],
        },
      ],
      merge_by: ['str::email'],
    },
    responses: {
      200: {
        description: 'One entry per person sent, in order (`queued` with `async: true`)',
        schema: PersonMergeResponse,
        example: { people: [{ person_id: ids.person, status: 'created' }] },
      },
    },
    errors: [403],
  },
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
  'POST /v1/activities/create': {
    tag: 'Activities',
    summary: 'Record activities',
    description:
      'Records 1 to 100 activities, each against a person found or created from `fields` (or named by `person_id`). `created` back-dates an activity by at most 90 days; `key` makes a retry record it once. With `async: true` the request is queued.',
    request: ActivitiesCreateBody,
    requestExample: {
      activities: [
        {
          activity_id: 'act:cm:purchased',
          fields: { 'str::email': 'ada@example.com' },
          attributes: { 'str:cm:item': 'Difference engine', 'int:cm:price': 24990 },
          key: 'order-1001',
        },
      ],
    },
    responses: {
      200: {
        description: 'One entry per activity sent, in order',
        schema: ActivitiesCreateResponse,
        example: {
          activities: [
            {
              person_id: ids.person,
              person_status: 'merged',
              activity_id: ids.activity,
              status: 'ingested',
            },
          ],
        },
      },
    },
    errors: [403],
  },
  'POST /v1/async/get': {
    tag: 'Asynchronous requests',
    summary: 'State of an asynchronous request',
    description:
      'The state of a request sent with `async: true`: `queued`, `processing`, `done` (with `result`, the body the synchronous call answers) or `failed` (with `error` and `code`). 404 for an unknown ID or one of another instance.',
    request: AsyncGetRequest,
    requestExample: { request_id: ids.request },
    responses: {
      200: {
        description: 'The request’s state',
        schema: AsyncGetResponse,
        example: {
          request_id: ids.request,
          status: 'done',
          result: { people: [{ person_id: ids.person, status: 'created' }] },
        },
      },
    },
    errors: [404],
  },
  'POST /v1/definitions/activity/create': {
    tag: 'Activities',
    summary: 'Define a custom activity',
    description:
      'Defines an activity (`act:cm:<name>`) with its attributes; 409 naming it when one of that ID exists (archived ones too). Two shapes, one definition: the real API’s (`name`, `icon_id`, `track_conversion_value`, `touch`, `filterable`, `visible_in_feeds`, `display_style`, `attributes[].display_type` and `field_id`: `do-not-map` or a person field to map to) answered with `custom_activity` as the real API answers, or the configuration file’s (with `id`; attributes map to person fields with `map_to_crm`) answered with `activity`.',
    request: AnyActivityDefinitionRequest,
    requestExample: {
      id: 'act:cm:purchased',
      name: 'Purchased',
      display_text: 'Purchased {{attribute.item}}',
      attributes: [
        { id: 'str:cm:item', name: 'Item' },
        { id: 'int:cm:price', name: 'Price', kind: 'currency' },
      ],
      conversion_value: true,
    },
    responses: {
      200: {
        description: 'The definition as stored',
        schema: ActivityDefinitionResponse,
        example: {
          activity: {
            id: 'act:cm:purchased',
            name: 'Purchased',
            display_text: 'Purchased {{attribute.item}}',
            attributes: [
              { id: 'str:cm:item', name: 'Item' },
              { id: 'int:cm:price', name: 'Price', kind: 'currency' },
            ],
            conversion_value: true,
            track_as_touch: false,
          },
        },
      },
    },
  },
  'PUT /v1/definitions/activity/modify': {
    tag: 'Activities',
    summary: 'Change a custom activity’s definition',
    description:
      'Changes the definition named by `activity_field_id` (else `name`), in the real API’s request shape: the members given replace the stored ones; attributes are matched by name (new ones added, existing ones keep their IDs and type). Recorded activities stay as they are. An unknown or archived definition is a 400 naming it.',
    request: CustomActivityModifyRequest,
    requestExample: { activity_field_id: 'act:cm:purchased', touch: true },
    responses: {
      200: {
        description: 'The definition as stored now',
        schema: CustomActivityResponse,
      },
    },
  },
  'DELETE /v1/definitions/activity/delete': {
    tag: 'Activities',
    summary: 'Delete (archive) a custom activity’s definition',
    description:
      'Archives the definition: new activities of it are refused and it leaves `instance-schema/get`; activities already recorded stay readable with their attributes. Its ID stays taken (a create of the same name is a 409).',
    request: CustomActivityDeleteRequest,
    requestExample: { activity_field_id: 'act:cm:purchased' },
    responses: {
      200: {
        description: 'The archived definition',
        schema: ArchivedActivityResponse,
        example: { archived_activity: 'act:cm:purchased' },
      },
    },
  },
  'POST /v1/person/custom-field/get': {
    tag: 'People',
    summary: 'List custom person fields',
    description:
      'The instance’s custom person fields (`<type>:cm:<name>`), configured or created through the API, in the shape the real API answers: each `field` with its display type, `liquid_name` and a select field’s options (`dic_items`), and `tracked_value` (changes recorded as activities). The body may be left out.',
    request: CustomFieldGetRequest,
    requestExample: {},
    responses: {
      200: {
        description: 'The custom person fields',
        schema: PersonCustomFieldsResponse,
        example: {
          fields: [
            {
              field: {
                id: 'str:cm:job-title',
                name: 'Job Title',
                display_type: 'text',
                liquid_name: 'people.custom.job-title',
              },
              tracked_value: false,
            },
          ],
        },
      },
    },
  },
  'POST /v1/person/custom-field/create': {
    tag: 'People',
    summary: 'Create a custom person field',
    description:
      'Creates `<type>:cm:<kebab-case name>`; the type prefix follows the display `type` (`text`, `large_text`, `email`, `integer`, `decimal`, `currency`, `price` (the last three ×1000), `date`, `time`, `bool`, `phone`, `single_select`, `multi_select`, `link`, `object`). Select types need `values` (their options); others refuse them. Usable at once in merges, listings, filters, Liquid and `instance-schema/get` in every function of the region. At most 100 custom fields per instance, exact under concurrent creates. A name that becomes an existing field’s is a 400 naming `name`.',
    request: CustomFieldCreateRequest,
    requestExample: { name: 'Favourite colour', type: 'single_select', values: ['Red', 'Blue'] },
    responses: {
      200: {
        description: 'The field created',
        schema: CustomFieldCreateResponse,
        example: {
          name: 'Favourite colour',
          field_id: 'str:cm:favourite-colour',
          display_type: 'single_select',
          values: ['Red', 'Blue'],
        },
      },
    },
  },
  'DELETE /v1/instances/custom-field/delete': {
    tag: 'Instance',
    summary: 'Delete a custom field',
    description:
      'Deletes a custom person (`<type>:cm:<name>`) or organization (`<type>:oc:<name>`) field: it leaves the configuration at once in every function of the region (merges refuse it, filters and sorts no longer know it, listings, `custom-field/get` and `instance-schema/get` leave it out, templates render it empty). Its ID stays reserved: a create of the same name is a 400 naming `name`. The values records held stay with them, unread, and leave with them on erasure; a configuration file that names the field again brings it back with them. Refused with a 400 naming `field_id` while the field is a merge key (unique, or in a data source’s `merge_by`) or an audience’s filter names it. Answers `{}`.',
    request: CustomFieldDeleteRequest,
    requestExample: { field_id: 'str:cm:favourite-colour' },
    responses: { 200: { description: 'Deleted', schema: EmptyResponse, example: {} } },
  },
  'PUT /v1/person/custom-field/update': {
    tag: 'People',
    summary: 'Change a custom person field',
    description:
      'Replaces (`replace_values`), adds to (`add_values`, `values`) or removes from (`remove_values`) a select field’s options, and turns the recording of changes (`track_changes`) on or off. A field of another namespace, unknown to the instance, or options on a type without them is a 400 naming the member.',
    request: CustomFieldUpdateRequest,
    requestExample: { field_id: 'str:cm:favourite-colour', add_values: ['Green'] },
    responses: {
      200: {
        description: 'The field’s options and tracking now',
        schema: CustomFieldUpdateResponse,
        example: {
          field_id: 'str:cm:favourite-colour',
          values: ['Red', 'Blue', 'Green'],
          track_changes: false,
        },
      },
    },
  },
  ...organizationFields('accounts'),
  ...organizationFields('organizations'),
  'POST /v1/tags/get': {
    tag: 'People',
    summary: 'List tags',
    description:
      'The instance’s person tags as the real API answers them (a bare array), in name order: a stable `id` per tag, `count` the people holding it (archived people aside), `subscribers` those of them subscribed to email, `sms_opted_in` to SMS, kept by counters as people are tagged, untagged, archived, restored and erased. `q` keeps the names containing each of its words (case-insensitive). An answer holds at most `limit` tags (1,000) and reads at most 10,000 names: when more may follow, the `X-Next-Cursor` header is the `cursor_id` of the next page. The body may be left out.',
    request: TagsGetRequest,
    requestExample: { q: 'vip' },
    responses: {
      200: {
        description: 'The tags',
        headers: ['X-Next-Cursor'],
        schema: TagsResponse,
        example: [
          {
            id: 1,
            instance_id: 'demo',
            name: 'VIP',
            source: 'api',
            created_by_id: '000000000000000000000000',
            created_by_name: '',
            created_by_email: '',
            created_at: '2026-01-01T00:00:00.000Z',
            last_used: '2026-01-02T00:00:00.000Z',
            count: 2,
            subscribers: 1,
            sms_opted_in: 0,
            type: '',
          },
        ],
      },
    },
  },
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
  'POST /v1/person/get': {
    tag: 'People',
    summary: 'List people',
    description:
      'People in pages of 1 to 100: send the previous answer’s `next_offset` and `cursor_id` for the next. `fields` selects what each person shows; `q` searches email and names; `sort_by_field_id` and `filter` narrow and order the listing. `audience_id` lists the members of one audience from its members index (newest person first; not with `q`, `filter` or `sort_by_field_id`; `total_matches` is its member count). `meta` holds the instance’s totals.',
    request: PersonGetRequest,
    requestExample: { limit: 2, fields: ['str::email', 'str::first'] },
    responses: {
      200: {
        description: 'A page of people',
        schema: PersonGetResponse,
        example: {
          contacts: [
            {
              id: ids.person2,
              fields: { 'str::email': 'grace@example.com', 'str::first': 'Grace' },
            },
            { id: ids.person, fields: { 'str::email': 'ada@example.com', 'str::first': 'Ada' } },
          ],
          meta: {
            total_contacts: 3,
            total_organizations: 1,
            total_matches: 3,
            total_subscribers: 3,
          },
          offset: 0,
          next_offset: 2,
          cursor_id: cursor,
          has_more: true,
        },
      },
    },
    errors: [404],
  },
  'POST /v1/person/get-by-ids': {
    tag: 'People',
    summary: 'People by ID',
    description:
      'Up to 100 people by ID, keyed by ID; IDs of no person of the instance are left out.',
    request: PersonGetByIdsRequest,
    requestExample: { contact_ids: [ids.person], fields: ['str::email', 'tags'] },
    responses: {
      200: {
        description: 'The people found',
        schema: PersonGetByIdsResponse,
        example: {
          contacts: {
            [ids.person]: {
              id: ids.person,
              fields: { 'str::email': 'ada@example.com', tags: ['newsletter'] },
            },
          },
        },
      },
    },
  },
  'POST /v1/person/get/activities': {
    tag: 'Activities',
    summary: 'A person’s activities',
    description:
      'A person’s activities, newest first, in the real API’s shape: optionally of some definitions only (`activities`) and of a period (`timeframe`, `{"type": "last-7-days"}`, calendar periods in the instance’s time zone), paged by `offset` (`next_offset` of the previous page; continuing where a page ended costs the same at any depth) or `cursor_id`. Each activity’s `render_cmds` is its line in a feed.',
    request: PersonActivitiesRequest,
    requestExample: {
      person_id: ids.person,
      activities: ['act:cm:purchased'],
      limit: 20,
      offset: 0,
      timeframe: { type: 'last-30-days' },
    },
    responses: {
      200: {
        description: 'A page of activities',
        schema: PersonActivitiesResponse,
        example: {
          activities: [
            {
              id: ids.activity,
              field_id: 'act:cm:purchased',
              attr: { 'str:cm:item': 'Difference engine', 'int:cm:price': 24990 },
              created_at: '2026-01-05T10:00:00.000Z',
              render_cmds: [{ content: 'Purchased Difference engine' }],
              display: 'Purchased Difference engine',
            },
          ],
          meta: {
            total_activities: 1,
            field_ids: ['act:cm:purchased'],
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
  'GET /t/c': {
    tag: 'Email links',
    summary: 'Tracked link of an email',
    description:
      'Records the click (`act::c`) and redirects to the destination stored with the email (never one taken from the URL).',
    query: token,
    responses: {
      302: {
        description: 'To the link’s destination',
        headers: ['Location', 'Cache-Control'],
      },
    },
    errors: [404],
  },
  'GET /t/o': {
    tag: 'Email links',
    summary: 'Open pixel of an email',
    description: 'Records the open (`act::o`) and answers a transparent 1×1 GIF.',
    query: token,
    responses: {
      200: {
        description: 'The pixel',
        content: { type: 'image/gif', description: 'A 1×1 transparent GIF' },
        headers: ['Cache-Control'],
      },
    },
    errors: [404],
  },
  'GET /t/u': {
    tag: 'Email links',
    summary: 'Unsubscribe page',
    description:
      'Shows the address (masked) and a button; changes nothing, since mail scanners follow links.',
    query: token,
    responses: { 200: html('The confirmation page') },
    errors: [404],
  },
  'POST /t/u': {
    tag: 'Email links',
    summary: 'Unsubscribe',
    description:
      'Unsubscribes the email’s person (`bol::p` false, `act::u-all`): RFC 8058 one-click (`List-Unsubscribe=One-Click`) or the page’s button.',
    query: token,
    responses: { 200: html('The confirmation') },
    errors: [404],
  },
  'POST /v1/person/subscriptions': {
    tag: 'People',
    summary: 'Subscription states of people',
    description:
      'The email and SMS permissions and the audience memberships of 1 to 100 people, looked up by `person_id`, `email` or `external_id` (that precedence), in the order asked. `subscriptions` lists the audiences the person is a member of, with their email and SMS choices for each (effective: a global unsubscribe reads as `subscribed: false`). A person not found is an entry with `person_status: "invalid"` and an `error`; the request still answers 200.',
    request: PersonSubscriptionsRequest,
    requestExample: { people: [{ email: 'ada@example.com' }, { person_id: ids.person2 }] },
    responses: {
      200: {
        description: 'One entry per lookup, in order',
        schema: PersonSubscriptionsResponse,
        example: {
          people: [
            {
              person_status: 'merged',
              person_id: ids.person,
              email: 'ada@example.com',
              subscriptions: [
                {
                  audience_id: '6904f4faf0cc08364094a964',
                  audience_name: 'Subscribers',
                  member_from: '2025-11-03T21:23:17Z',
                  subscribed: true,
                  subscribed_from: '2025-11-03T21:23:17Z',
                  sms_opted_in: false,
                  whatsapp_opted_in: false,
                  ios_opted_in: false,
                  android_opted_in: false,
                  web_opted_in: false,
                },
              ],
              email_permissions: true,
              sms_permissions: false,
              ios_permissions: false,
              android_permissions: false,
              web_permissions: false,
            },
            {
              person_status: 'invalid',
              person_id: ids.person2,
              error: 'people[1].person_id: no person has this ID',
            },
          ],
        },
      },
    },
  },
  'PUT /v1/person/archive': lifecycle('People', 'people', 'archive', PersonArchiveResponse),
  'PUT /v1/person/restore': lifecycle('People', 'people', 'restore', PersonRestoreResponse),
  'DELETE /v1/person/delete': lifecycle('People', 'people', 'delete', PersonDeleteResponse),
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
  'POST /v1/instance-schema/get': {
    tag: 'Instance',
    summary: 'Fields and activities of the instance',
    description:
      'The instance’s fields and activity definitions by namespace: `""` (built-in person fields and activities), `"o"` (built-in organization fields), `"cm"` (custom person fields and activities), `"oc"` (custom organization fields). `[]` or no `namespaces` asks for all; a namespace the instance has none of is left out. Read from the instance’s configuration.',
    request: InstanceSchemaRequest,
    requestExample: { namespaces: ['', 'cm'] },
    responses: {
      200: {
        description: 'The namespaces asked for, in order',
        schema: InstanceSchemaResponse,
        example: {
          namespaces: {
            '': {
              id: '',
              fields: {
                'str::email': {
                  id: 'str::email',
                  name: 'Email',
                  display_type: 'email',
                  liquid_name: 'people.email',
                },
                'str::person_id': {
                  id: 'str::person_id',
                  name: 'Person ID',
                  display_type: 'text',
                  liquid_name: 'people.id',
                  read_only: true,
                },
              },
            },
            cm: {
              id: 'cm',
              fields: {
                'str:cm:favourite-colour': {
                  id: 'str:cm:favourite-colour',
                  name: 'Favourite colour',
                  display_type: 'text',
                  liquid_name: 'people.custom.favourite-colour',
                },
                'act:cm:purchased': {
                  id: 'act:cm:purchased',
                  name: 'Purchased',
                  display_type: 'activity',
                  attributes: [
                    { id: 'str:cm:item', name: 'Item', display_type: 'text' },
                    { id: 'int:cm:price', name: 'Price', display_type: 'currency' },
                  ],
                },
              },
            },
          },
        },
      },
    },
  },
  'GET /openapi.json': {
    tag: 'Service',
    summary: 'This document',
    description:
      'The OpenAPI 3.1 document of the API, with this deployment’s addresses as its servers (its own region first). No key needed.',
    responses: {
      200: {
        description: 'The OpenAPI document',
        schema: z.looseObject({ openapi: z.literal('3.1.0') }),
        headers: ['Cache-Control'],
      },
    },
  },
  'GET /docs': {
    tag: 'Service',
    summary: 'API reference page',
    description:
      'This document rendered by Swagger UI (served by the API itself, nothing loaded from elsewhere). No key needed.',
    responses: { 200: html('The reference page') },
  },
  ...Object.fromEntries(
    REFERENCE_ASSETS.map((file) => [
      `GET /docs/${file}`,
      {
        tag: 'Service',
        summary: `Reference page renderer: ${file}`,
        description: 'A file of Swagger UI (npm package `swagger-ui-dist`), gzipped when accepted.',
        responses: {
          200: {
            description: file,
            content: {
              type: file.endsWith('.css') ? 'text/css' : 'text/javascript',
              description: file,
            },
            headers: ['Cache-Control'],
          },
        },
      } satisfies Endpoint,
    ]),
  ),
  'POST /v1/audiences/create': {
    tag: 'Audiences',
    summary: 'Create an audience',
    description:
      'Beyond the real API (which makes audiences in its UI): a filter-defined segment of the instance’s people, `filter` deciding who enters and `exit_filter` (optional) who leaves; without one, people leave when they stop matching. Its members are decided at once over the existing people (a build: `building` until done) and kept current as people change. At most 100 audiences per instance; names are unique (without case): a taken one is a 409.',
    request: AudienceCreateRequest,
    requestExample: { name: 'Slipping subscribers', filter: audienceFilter, is_public: true },
    responses: audienceAnswer('The audience, building'),
    errors: [409],
  },
  'POST /v1/audiences/get': {
    tag: 'Audiences',
    summary: 'List audiences',
    description:
      'Live (or with `archived: true` archived) audiences, newest first, whose name contains `search_term` (without case), `limit` (1 to 40, default 40) from `offset`; `filter` and `new_exit_criteria_filter` only with `with_filter`. A bare array, as the real API answers (`[]` when none; the real API answers `null`).',
    request: AudiencesGetRequest,
    requestExample: { search_term: 'subscribers', with_filter: true, limit: 10, offset: 0 },
    responses: {
      200: {
        description: 'The audiences',
        schema: AudiencesGetResponse,
        example: [audienceExample],
      },
    },
  },
  'PUT /v1/audiences/update': {
    tag: 'Audiences',
    summary: 'Change an audience',
    description:
      'A new name, filters (`exit_filter: null` removes the exit filter) or presentation. A new filter builds the audience again over every person; members are kept until the build decides otherwise. A change made from an old read is a 409.',
    request: AudienceUpdateRequest,
    requestExample: { audience_id: audienceId, name: 'Slipping customers' },
    responses: audienceAnswer('The audience as changed'),
    errors: [404, 409],
  },
  'PUT /v1/audiences/archive': {
    tag: 'Audiences',
    summary: 'Archive an audience',
    description:
      'Its members stay as they were and it is no longer kept current; it is listed with `archived: true` only.',
    request: AudienceIdRequest,
    requestExample: { audience_id: audienceId },
    responses: audienceAnswer('The archived audience'),
    errors: [404],
  },
  'PUT /v1/audiences/restore': {
    tag: 'Audiences',
    summary: 'Restore an archived audience',
    description: 'It is built again over every person and kept current from then on.',
    request: AudienceIdRequest,
    requestExample: { audience_id: audienceId },
    responses: audienceAnswer('The restored audience, building'),
    errors: [404],
  },
  'DELETE /v1/audiences/delete': {
    tag: 'Audiences',
    summary: 'Delete an archived audience',
    description:
      'Archive it first (a 400 otherwise). Its memberships and counters are removed in the background; the enter and exit activities it recorded stay on the people.',
    request: AudienceIdRequest,
    requestExample: { audience_id: audienceId },
    responses: {
      200: {
        description: 'Deleted',
        schema: AudienceDeleteResponse,
        example: { audience_id: audienceId, deleted: true },
      },
    },
    errors: [404],
  },
  'PUT /v1/audience/subscribe': {
    tag: 'Audiences',
    summary: 'Members’ choices for an audience',
    description:
      'For 1 to 100 people (each by `person_id`, `email` or `external_id`): `subscribed` (the audience’s email) and `sms_opted_in` (its SMS). Only members have choices: a person who is not a member is answered `not-member` and nothing changes (membership is the filter’s alone). `status` says whether the person receives the audience’s email now.',
    request: AudienceSubscribeRequest,
    requestExample: {
      audience_id: audienceId,
      people: [
        { email: 'ada@example.com', subscribed: false },
        { person_id: ids.person2, sms_opted_in: true },
      ],
    },
    responses: {
      200: {
        description: 'One entry per person, in order',
        schema: AudienceSubscribeResponse,
        example: {
          audience_id: audienceId,
          people: [
            {
              person_status: 'merged',
              person_id: ids.person,
              status: 'unsubscribed',
              sms_opted_in: true,
            },
            { person_status: 'by-id', status: 'subscribed', sms_opted_in: true },
          ],
        },
      },
    },
    errors: [404],
  },
  'POST /v1/webhooks/create': {
    tag: 'Webhooks',
    summary: 'Create a webhook',
    description:
      'An endpoint of yours that receives the instance’s events (`events`: types such as `person.created`, families such as `person.*`, or `*`), signed per the Standard Webhooks specification with the `secret` answered here once (`whsec_<base64>`). `url` is `https` and must resolve to public addresses only: loopback, private, link-local, multicast and metadata addresses are refused (the local stack alone also allows `http://127.0.0.1`). At most 20 webhooks per instance. See docs/webhooks.md.',
    request: WebhookCreateRequest,
    requestExample: {
      url: 'https://hooks.example.com/cdp',
      events: ['person.*'],
      description: 'CRM sync',
    },
    responses: {
      200: {
        description: 'The webhook, with its secret (shown once)',
        schema: WebhookCreatedSchema,
        example: { ...webhookExample, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
      },
    },
  },
  'POST /v1/webhooks/get': {
    tag: 'Webhooks',
    summary: 'List webhooks',
    description:
      'The instance’s webhooks (or the one `webhook_id` names: 404 when it has none such), without their secrets. `disabled_reason` says why the platform disabled one.',
    request: WebhooksGetRequest,
    requestExample: {},
    responses: {
      200: {
        description: 'The webhooks',
        schema: WebhooksGetResponse,
        example: { webhooks: [webhookExample] },
      },
    },
    errors: [404],
  },
  'PUT /v1/webhooks/update': {
    tag: 'Webhooks',
    summary: 'Change a webhook',
    description:
      'A new `url` (checked as on create), `events`, `description` (`null` removes it) or `enabled`. Enabling a webhook the platform disabled clears its `disabled_reason`. A change made from an old read is a 409.',
    request: WebhookUpdateRequest,
    requestExample: { webhook_id: webhookExample.id, enabled: false },
    responses: {
      200: {
        description: 'The webhook as changed',
        schema: WebhookEntrySchema,
        example: { ...webhookExample, enabled: false },
      },
    },
    errors: [404],
  },
  'PUT /v1/webhooks/rotate-secret': {
    tag: 'Webhooks',
    summary: 'Rotate a webhook’s secret',
    description:
      'A new secret (answered once) signs from now on; the previous one keeps signing beside it for 24 hours (`previous_secret_expires_at`), so deliveries carry two signatures meanwhile.',
    request: WebhookIdRequest,
    requestExample: { webhook_id: webhookExample.id },
    responses: {
      200: {
        description: 'The new secret',
        schema: WebhookSecretResponse,
        example: {
          id: webhookExample.id,
          secret: 'whsec_Hn0Xq3b8y5dM2oW6Zt1cV9kL4sR7uP0eA8iJ2gF6hQ4=',
          previous_secret_expires_at: '2026-07-02T09:30:00.000Z',
        },
      },
    },
    errors: [404],
  },
  'DELETE /v1/webhooks/delete': {
    tag: 'Webhooks',
    summary: 'Delete a webhook',
    description: 'It receives nothing more; deliveries already queued for it are dropped.',
    request: WebhookIdRequest,
    requestExample: { webhook_id: webhookExample.id },
    responses: {
      200: {
        description: 'Deleted',
        schema: WebhookDeleteResponse,
        example: { webhook_id: webhookExample.id, deleted: true },
      },
    },
    errors: [404],
  },
  'POST /v1/webhooks/deliveries/get': {
    tag: 'Webhooks',
    summary: 'List delivery attempts',
    description:
      'The attempts to deliver events to one webhook, newest first, kept 30 days: each with its outcome (`status`: `succeeded` for a 2xx within 15 s, `failed` otherwise), the HTTP status, the latency and the first KB of the answer. Filter by `status` and by time (`from` inclusive, `to` exclusive, ISO 8601); page with `cursor_id` (sent back with the same filters). Listings lag attempts by about a second (an index). An unknown webhook, or another instance’s, is a 404.',
    request: DeliveriesGetRequest,
    requestExample: {
      webhook_id: webhookExample.id,
      status: 'failed',
      from: '2026-11-24T00:00:00Z',
      limit: 50,
    },
    responses: {
      200: {
        description: 'A page of attempts',
        schema: DeliveriesGetResponse,
        example: {
          deliveries: [
            {
              webhook_id: webhookExample.id,
              event_id: 'msg_5f0c2a9e8b7d41c3a6e2f1d0c9b8a776',
              event_type: 'person.created',
              replay_id: null,
              attempt: 1,
              status: 'failed',
              status_code: 503,
              latency_ms: 182,
              response_body: '{"error":"maintenance"}',
              response_truncated: false,
              error: 'it answered 503',
              attempted_at: '2026-11-24T10:00:01.250Z',
            },
          ],
          cursor_id: cursor,
          has_more: true,
        },
      },
    },
    errors: [404],
  },
  'POST /v1/webhooks/replay': {
    tag: 'Webhooks',
    summary: 'Send events again',
    description:
      'Sends one event again (`event_id`: its `webhook-id`), or every event delivered to the webhook `since` a time (at most 30 days ago; `until` optional), each with its own `webhook-id` and body, signed anew with the webhook’s current secrets. Answers 202 with the replay: one event is queued at once (`complete`); a range is a background job (`queued`, then `running`, `complete`), paced. The same call with `replay_id` alone answers 200 with that replay’s progress: events found in the range so far, queued again, skipped (no longer subscribed) and delivered since. One range replay per webhook at a time (409 while one runs); a disabled webhook cannot be replayed to (400); an unknown webhook, event or replay, or another instance’s, is a 404.',
    request: ReplayRequest,
    requestExample: { webhook_id: webhookExample.id, since: '2026-11-24T00:00:00Z' },
    responses: {
      200: {
        description: 'With `replay_id` alone: the replay and how far it got',
        schema: ReplaySchema,
        example: {
          ...replayExample,
          status: 'complete',
          events_found: 1240,
          events_queued: 1240,
          events_delivered: 1187,
          updated_at: '2026-11-24T10:30:14.000Z',
          completed_at: '2026-11-24T10:30:14.000Z',
        },
      },
      202: {
        description: 'The replay, started',
        schema: ReplaySchema,
        example: replayExample,
      },
    },
    errors: [404, 409],
  },
};
