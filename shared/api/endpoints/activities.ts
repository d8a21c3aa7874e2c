import { z } from 'zod';
import { ActivitiesCreateRequest } from '../../domain/activities/record-activities.js';
import {
  AnyActivityDefinitionRequest,
  CustomActivityDeleteRequest,
  CustomActivityModifyRequest,
} from '../../domain/activities/definition-create.js';
import {
  CustomFieldCreateRequest,
  CustomFieldGetRequest,
  CustomFieldUpdateRequest,
} from '../../domain/fields/custom-fields.js';
import { CustomFieldDeleteRequest } from '../../domain/fields/custom-field-api.js';
import { TagsGetRequest } from '../../domain/people/tags.js';
import { AsyncGetRequest } from '../../domain/ingest/request-status.js';
import { InstanceSchemaRequest } from '../../domain/fields/instance-schema.js';
import { PersonActivitiesRequest } from '../../domain/people/person-activities.js';
import type { RouteKey } from '../../routes.js';
import {
  ActivitiesCreateResponse,
  ActivityDefinitionResponse,
  ActivityRecord,
  ArchivedActivityResponse,
  AsyncGetResponse,
  CustomActivityResponse,
  CustomFieldCreateResponse,
  CustomFieldUpdateResponse,
  EmptyResponse,
  InstanceSchemaResponse,
  PersonActivitiesResponse,
  PersonCustomFieldsResponse,
  TagsResponse,
} from '../schemas.js';
import { ids, type Endpoint } from './common.js';

/** Bodies documented with the real shape of the records the domain reads one by one. */
const ActivitiesCreateBody = ActivitiesCreateRequest.extend({
  activities: z.array(ActivityRecord).min(1).max(100),
}).meta({ id: 'ActivitiesCreateRequest' });

/**
 * Activities and the instance’s configuration: `activities/create`, `async/get`, activity
 * definitions, a person’s activities, custom person fields, `instances/custom-field/delete`,
 * `tags/get` and `instance-schema/get`.
 */
export const ACTIVITIES = {
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
} satisfies Partial<Record<RouteKey, Endpoint>>;
