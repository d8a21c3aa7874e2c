import { z } from 'zod';
import { PersonMergeRequest } from '../../domain/people/merge-request.js';
import { PersonGetByIdsRequest, PersonGetRequest } from '../../domain/people/person-get.js';
import { PersonSubscriptionsRequest } from '../../domain/people/person-subscriptions.js';
import type { RouteKey } from '../../routes.js';
import {
  PersonArchiveResponse,
  PersonDeleteResponse,
  PersonGetByIdsResponse,
  PersonGetResponse,
  PersonMergeRecord,
  PersonMergeResponse,
  PersonRestoreResponse,
  PersonSubscriptionsResponse,
} from '../schemas.js';
import { cursor, ids, lifecycle, type Endpoint } from './common.js';

/** Bodies documented with the real shape of the records the domain reads one by one. */
const PersonMergeBody = PersonMergeRequest.extend({
  people: z.array(PersonMergeRecord).min(1).max(100),
}).meta({ id: 'PersonMergeRequest' });

/** People: `person/*` (merge, listings, subscriptions, archive, restore and erasure). */
export const PEOPLE = {
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
} satisfies Partial<Record<RouteKey, Endpoint>>;
