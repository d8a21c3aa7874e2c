import {
  AudienceCreateRequest,
  AudienceIdRequest,
  AudiencesGetRequest,
  AudienceUpdateRequest,
} from '../../domain/audiences/audience.js';
import { AudienceSubscribeRequest } from '../../domain/audiences/subscribe.js';
import type { RouteKey } from '../../routes.js';
import {
  AudienceDeleteResponse,
  AudienceEntrySchema,
  AudiencesGetResponse,
  AudienceSubscribeResponse,
} from '../schemas.js';
import { ids, type Endpoint } from './common.js';

const audienceId = '66a1f0c7e4b0a1b2c3d4e644';

const audienceFilter = {
  $and: [
    { $and: [{ '$bol::is': { field_id: 'bol::p', value: true } }] },
    { $and: [{ '$tme::relative_more_than': { field_id: 'l', days_ago: 30 } }] },
  ],
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

/** Audiences: `audiences/*` and `audience/subscribe`. */
export const AUDIENCES = {
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
} satisfies Partial<Record<RouteKey, Endpoint>>;
