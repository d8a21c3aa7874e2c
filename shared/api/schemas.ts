import { z } from 'zod';
import { ID_PATTERN } from '../domain/ids.js';
import { LocationInput } from '../domain/location.js';
import { PersonRecord } from '../domain/people/merge-request.js';
import { ActivityDefinition } from '../domain/instance-config.js';
import { MAX_COUNTED_ACTIVITIES } from '../domain/people/person-activities.js';

/**
 * The response bodies of the API, declared once: the OpenAPI document (`shared/api/endpoints.ts`)
 * describes them, handlers type their answers with them (`apiHandler`'s `response`), and the
 * integration suite checks every answer against the document. Request bodies are the domain's
 * own schemas; the few documented here are those the domain reads record by record (so that
 * one bad record does not fail the request), given their real shape for the reader.
 *
 * `.meta({ id })` makes a schema a named component of the document.
 */

const id = (what: string) =>
  z
    .string()
    .regex(ID_PATTERN)
    .meta({ description: `${what} (24 lowercase hexadecimal characters)` });

export const PersonId = id('A person ID').meta({
  id: 'PersonId',
  example: '66a1f0c2e4b0a1b2c3d4e5f6',
});

// ---------------------------------------------------------------------------------------
// Field values

export const GeoValue = z
  .object({ name: z.string() })
  .meta({ id: 'GeoValue', description: 'A place (`geo` fields)', example: { name: 'Sydney' } });

export const PhoneValue = z.object({ c: z.string().optional(), n: z.string() }).meta({
  id: 'PhoneValue',
  description:
    'A phone number (`phn` fields): country code digits (absent when not known) and the number',
  example: { c: '61', n: '400000000' },
});

export const DateValue = z
  .object({
    year: z.number().int(),
    month: z.number().int(),
    day: z.number().int(),
    timezone: z.string().meta({ description: "One of the spec's time zones" }),
  })
  .meta({
    id: 'DateValue',
    description: 'A date (`dtz` fields); an unknown time zone is the spec’s 500',
    example: { year: 1990, month: 4, day: 12, timezone: 'Australia/Sydney' },
  });

export const FieldValue = z
  .union([
    z.string(),
    z.number(),
    z.boolean(),
    DateValue,
    GeoValue,
    PhoneValue,
    z.array(z.string()),
    z.record(z.string(), z.unknown()),
  ])
  .meta({
    id: 'FieldValue',
    description:
      'A stored field value; its type follows the field ID (`str`/`txt`/`tme`: string, `int`: integer, ×1000 for decimals and currency, `bol`, `dtz`, `geo`, `phn`, `sst`: an array of strings (multi-select), `obj`: a JSON object)',
  });

export const FieldInput = z
  .union([
    z.string(),
    z.number().int(),
    z.boolean(),
    z.null(),
    DateValue,
    GeoValue,
    PhoneValue,
    z.object({ phone: z.string(), parse_with_country_code: z.boolean().optional() }),
    z.object({ n: z.string() }),
    z.array(z.string()),
    z.record(z.string(), z.unknown()),
  ])
  .meta({
    id: 'FieldInput',
    description:
      'A field value as sent: typed by the field ID (see FieldValue); `null` clears the field under merge strategy 2. Phones are also accepted as `{"phone", "parse_with_country_code"}` or `{"n"}`.',
  });

export const PersonFieldsInput = z.record(z.string(), FieldInput).meta({
  id: 'PersonFieldsInput',
  description:
    'Person fields by field ID (`str::email`, `str::first`, `str:cm:<custom>`, …); unknown fields and values of the wrong type make the record invalid',
  example: { 'str::email': 'ada@example.com', 'str::first': 'Ada', 'bol::p': true },
});

export const Location = LocationInput.meta({
  id: 'Location',
  description:
    'Where the person is: `custom` (most specific), `address` (geocoded; Business plan and up) or `source_ip` (offline lookup)',
});

// ---------------------------------------------------------------------------------------
// Records the domain reads one by one (documented with their real shape)

export const PersonMergeRecord = PersonRecord.extend({
  fields: PersonFieldsInput,
  location: Location.optional(),
  clear_fields: z.record(z.string(), z.boolean()).optional(),
}).meta({
  id: 'PersonMergeRecord',
  description:
    'One person to create or update. `str::email` or `str::ei` is required unless merging by `str::person_id`.',
});

export const OrganizationMergeRecord = z
  .object({
    fields: z.record(z.string(), FieldInput).meta({
      description: 'Organization fields by field ID (`str:o:name`, `int:oc:<custom>`, …)',
    }),
    clear_fields: z.record(z.string(), z.boolean()).optional(),
  })
  .meta({ id: 'OrganizationMergeRecord' });

export const ActivityRecord = z
  .object({
    activity_id: z.string().min(1).meta({ description: 'The definition, `act:cm:<name>`' }),
    fields: PersonFieldsInput.optional(),
    person_id: PersonId.optional(),
    attributes: z.record(z.string(), FieldInput).optional().meta({
      description: 'Attribute values by attribute ID; attributes the definition lacks are ignored',
    }),
    location: Location.optional(),
    created: z.iso.datetime({ offset: true }).optional().meta({
      description: 'Back-dates the activity (at most 90 days in the past)',
    }),
    key: z.string().min(1).max(255).optional().meta({
      description:
        'Deduplication key: an activity with a key already recorded is not recorded again',
    }),
  })
  .meta({ id: 'ActivityRecord' });

// ---------------------------------------------------------------------------------------
// Errors

export const ErrorDetail = z
  .object({
    index: z.number().int().optional(),
    field: z.string().optional(),
    status: z.string().optional(),
    error: z.string().optional(),
    person_id: z.string().optional(),
    organization_id: z.string().optional(),
    account_id: z.string().optional(),
    activity_id: z.string().optional(),
    request_id: z.string().optional(),
    message_id: z.string().optional(),
  })
  .meta({ id: 'ErrorDetail', description: 'One record or member the error is about' });

export const ErrorEnvelope = z
  .object({
    request_id: z.string(),
    code: z.number().int().meta({ description: 'The HTTP status' }),
    error: z.string().meta({ description: 'What was wrong, naming the member' }),
    details: z.array(ErrorDetail).optional(),
  })
  .meta({
    id: 'Error',
    description: 'Every error answer',
    example: {
      request_id: 'c0a8012e-7d3f-4b7e-9a59-2f1c8b7d9e10',
      code: 400,
      error: 'Invalid request body: people: expected 1 to 100 people',
      details: [{ field: 'people', error: 'expected 1 to 100 people' }],
    },
  });

// ---------------------------------------------------------------------------------------
// Responses

const requestId = z.string().optional().meta({
  description: 'With `async: true`: the ID to give `POST /v1/async/get`',
});

export const PersonMergeResponse = z
  .object({
    people: z.array(
      z.object({
        person_id: PersonId.optional(),
        status: z.enum(['created', 'merged', 'skipped', 'invalid', 'suppressed', 'queued']).meta({
          description:
            '`suppressed`: with `suppression_list_field_id`, a person not created because the address is on the suppression list',
        }),
        error: z.string().optional(),
      }),
    ),
    request_id: requestId,
  })
  .meta({ id: 'PersonMergeResponse', description: 'One entry per person sent, in order' });

export const OrganizationMergeResponse = z
  .object({
    organizations: z.array(
      z.object({
        organization_id: id('An organization ID').optional(),
        status: z.enum(['created', 'merged', 'skipped', 'invalid', 'queued']),
        error: z.string().optional(),
      }),
    ),
    request_id: requestId,
  })
  .meta({ id: 'OrganizationMergeResponse' });

export const ActivitiesCreateResponse = z
  .object({
    activities: z.array(
      z.object({
        person_id: PersonId.optional(),
        person_status: z.enum(['created', 'merged', 'skipped', 'by-id', 'invalid', 'queued']),
        activity_id: z.string().optional().meta({ description: 'The recorded activity’s ID' }),
        status: z.enum(['ingested', 'queued', 'invalid']),
        error: z.string().optional(),
      }),
    ),
    request_id: requestId,
  })
  .meta({ id: 'ActivitiesCreateResponse' });

export const EmptyResponse = z.object({}).meta({ id: 'Empty' });

export const Contact = z
  .object({
    id: PersonId,
    fields: z.record(z.string(), FieldValue).optional().meta({
      description:
        'The requested fields the person has (`tags` and `u4s::t` are arrays of tag names; `idt::o` the organization ID; `c` and `l` the times the person was created and last seen)',
    }),
  })
  .meta({ id: 'Contact' });

export const PersonGetResponse = z
  .object({
    contacts: z.array(Contact),
    meta: z.object({
      total_contacts: z.number().int(),
      total_organizations: z.number().int(),
      total_matches: z.number().int(),
      total_subscribers: z.number().int(),
    }),
    offset: z.number().int(),
    next_offset: z.number().int(),
    cursor_id: z.string().meta({ description: 'Send it with `next_offset` for the next page' }),
    has_more: z.boolean(),
  })
  .meta({ id: 'PersonGetResponse' });

export const PersonGetByIdsResponse = z
  .object({
    contacts: z.record(z.string(), Contact).meta({
      description: 'By person ID; IDs of no person of the instance are left out',
    }),
  })
  .meta({ id: 'PersonGetByIdsResponse' });

const activityFeed = z.object({
  activities: z.array(
    z.object({
      id: z.string(),
      field_id: z.string().meta({ description: 'The activity definition (`act:cm:…`, `act::o`)' }),
      attr: z.record(z.string(), z.unknown()),
      created_at: z.string(),
      render_cmds: z
        .array(
          z.object({
            content: z.string(),
            link: z.string().optional().meta({ description: 'A path of the console' }),
          }),
        )
        .meta({ description: 'The activity’s line in a feed, part by part' }),
      display: z.string().optional().meta({ description: 'A custom activity’s display text' }),
      value: z.number().optional(),
      location: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
  meta: z.object({
    total_activities: z
      .number()
      .int()
      .meta({
        description: `The activities the request selects (counted up to ${MAX_COUNTED_ACTIVITIES})`,
      }),
    field_ids: z.array(z.string()).nullable().meta({ description: '`activities` as sent' }),
    has_more: z.boolean(),
    retention: z.object({ type: z.string(), max_value: z.number().int() }).meta({
      description:
        'How long activities are kept: `{"type": "none", "max_value": 0}`, until the person is erased',
    }),
  }),
  offset: z.number().int(),
  next_offset: z.number().int(),
  cursor_id: z.string().nullable().meta({ description: 'The next page’s cursor, if any' }),
  has_more: z.boolean(),
});

export const PersonActivitiesResponse = activityFeed.meta({
  id: 'PersonActivitiesResponse',
  description: 'Newest first',
});

export const AccountActivitiesResponse = activityFeed.meta({
  id: 'AccountActivitiesResponse',
  description: 'An account’s activities, newest first',
});

export const OrganizationView = z
  .object({
    id: id('An organization ID'),
    fields: z.record(z.string(), FieldValue).optional().meta({
      description: 'The requested fields the organization has (none: no `fields`)',
    }),
  })
  .meta({ id: 'Organization' });

const listingMeta = z.object({
  total_organizations: z.number().int(),
  total_matches: z.number().int(),
});

export const OrganizationGetResponse = z
  .object({
    organizations: z.array(OrganizationView),
    meta: listingMeta,
    offset: z.number().int(),
    next_offset: z.number().int(),
    cursor_id: z.string(),
    has_more: z.boolean(),
  })
  .meta({ id: 'OrganizationGetResponse' });

export const CustomActivity = z
  .object({
    name: z.string(),
    activity_field_id: z.string().meta({ description: '`act:cm:<kebab-case name>`' }),
    state: z.enum(['awaiting_implementation', 'archived']),
    display_mode: z.object({
      type: z.enum(['activity', 'activity_attribute', 'activity_template']),
      attribute_field_id: z.string().optional(),
      template: z.string().optional(),
    }),
    attributes: z.array(
      z.object({
        name: z.string(),
        field_id: z.string().meta({ description: 'The attribute’s ID, `<type>:cm:<name>`' }),
        display_type: z.string(),
        liquid_name: z.string(),
      }),
    ),
    icon_id: z.string(),
    track_conversion_value: z.boolean(),
    touch: z.boolean(),
    filterable: z.boolean(),
    visible_in_feeds: z.boolean(),
    created_by: z.string(),
    created_at: z.string().optional(),
    edited_at: z.string().optional(),
  })
  .meta({
    id: 'CustomActivity',
    description: 'An activity definition as the real API answers it',
  });

export const ActivityDefinitionResponse = z
  .union([
    z.object({ activity: ActivityDefinition }).meta({
      description: 'A definition sent in the configuration shape (with `id`)',
    }),
    z.object({ custom_activity: CustomActivity }).meta({
      description: 'A definition sent in the real API’s shape (with `name`, no `id`)',
    }),
  ])
  .meta({ id: 'ActivityDefinitionResponse' });

export const CustomActivityResponse = z
  .object({ custom_activity: CustomActivity })
  .meta({ id: 'CustomActivityResponse' });

export const ArchivedActivityResponse = z
  .object({ archived_activity: z.string().meta({ description: 'The archived definition' }) })
  .meta({ id: 'ArchivedActivityResponse' });

// ---------------------------------------------------------------------------------------
// Custom fields and tags, in the real API's recorded shapes

const customFieldCommon = {
  id: z.string().meta({ description: '`<type>:cm:<name>` (people) or `<type>:oc:<name>`' }),
  name: z.string(),
  display_type: z.string(),
  liquid_name: z.string(),
  dic_items: z.array(z.string()).optional().meta({ description: 'A select field’s options' }),
};

export const PersonCustomFieldsResponse = z
  .object({
    fields: z.array(
      z.object({
        field: z.object(customFieldCommon),
        tracked_value: z.boolean().meta({ description: 'Changes are recorded as activities' }),
      }),
    ),
  })
  .meta({ id: 'PersonCustomFieldsResponse' });

export const OrganizationCustomFieldsResponse = z
  .object({ fields: z.array(z.object(customFieldCommon)) })
  .meta({ id: 'OrganizationCustomFieldsResponse' });

export const CustomFieldCreateResponse = z
  .object({
    name: z.string(),
    field_id: z.string(),
    display_type: z.string(),
    values: z.array(z.string()).optional(),
  })
  .meta({ id: 'CustomFieldCreateResponse' });

export const CustomFieldUpdateResponse = z
  .object({
    field_id: z.string(),
    values: z.array(z.string()).nullable().meta({ description: 'null for fields without options' }),
    track_changes: z.boolean(),
  })
  .meta({ id: 'CustomFieldUpdateResponse' });

export const TagsResponse = z
  .array(
    z.object({
      id: z.number().int().meta({ description: 'Stable per instance' }),
      instance_id: z.string(),
      name: z.string(),
      source: z.string(),
      created_by_id: z.string(),
      created_by_name: z.string(),
      created_by_email: z.string(),
      created_at: z.string(),
      last_used: z.string(),
      count: z.number().int().meta({
        description: 'People (organizations, for their tags) holding the tag, archived aside',
      }),
      subscribers: z
        .number()
        .int()
        .optional()
        .meta({ description: 'Person tags: of them, subscribed to email' }),
      sms_opted_in: z
        .number()
        .int()
        .optional()
        .meta({ description: 'Person tags: of them, subscribed to SMS' }),
      type: z.enum(['', 'organization']).meta({
        description: '"" for person tags, "organization" for organizations’ (numbered apart)',
      }),
    }),
  )
  .meta({ id: 'TagsResponse', description: 'The instance’s tags, by name' });

export const TransactionalSendResponse = z
  .object({
    emails: z.array(
      z.object({
        person_id: PersonId.optional(),
        contact_status: z.enum(['created', 'merged', 'skipped', 'invalid']),
        email_status: z.enum(['queued', 'skipped', 'suppressed', 'invalid']),
        message_id: z.string().optional(),
        email_name: z.string().optional(),
        error: z.string().optional(),
      }),
    ),
  })
  .meta({ id: 'TransactionalSendResponse', description: 'One entry per recipient, in order' });

export const EmailEventView = z
  .object({
    type: z.string(),
    at: z.string(),
    url: z.string().optional(),
    detail: z.string().optional(),
    recipient: z.string().optional().meta({
      description:
        'The address a delivery, bounce or complaint is about: the recipient, or a cc address',
    }),
  })
  .meta({ id: 'EmailEvent' });

export const TransactionalGetResponse = z
  .object({
    emails: z.array(
      z.object({
        message_id: z.string(),
        person_id: z.string().optional(),
        email_name: z.string().optional(),
        status: z
          .enum(['queued', 'sent', 'failed', 'bounced', 'complained', 'suppressed'])
          .optional(),
        error: z.string().optional(),
        events: z.array(EmailEventView).optional(),
      }),
    ),
  })
  .meta({ id: 'TransactionalGetResponse', description: 'In the order asked' });

export const HealthResponse = z
  .object({ status: z.literal('ok'), region: z.string() })
  .meta({ id: 'HealthResponse' });

// ---------------------------------------------------------------------------------------
// Beyond the spec: the shapes of the real API's recorded answers (docs/api.md)

const count = (what: string) => z.number().int().min(0).meta({ description: what });

const mergeStatus = z.enum(['created', 'merged', 'skipped', 'invalid', 'queued']);

export const AccountMergeResponse = z
  .object({
    accounts: z.array(
      z.object({
        account_id: id('An account (organization) ID').optional(),
        status: mergeStatus,
        error: z.string().optional(),
      }),
    ),
    request_id: requestId,
  })
  .meta({
    id: 'AccountMergeResponse',
    description: 'One entry per account sent, in order (organizations merge, accounts names)',
  });

export const AccountGetResponse = z
  .object({
    accounts: z.array(OrganizationView),
    meta: listingMeta,
    offset: z.number().int(),
    next_offset: z.number().int(),
    cursor_id: z.string(),
    has_more: z.boolean(),
  })
  .meta({
    id: 'AccountGetResponse',
    description: 'A page of organizations under the accounts names',
  });

export const OrganizationGetByIdsResponse = z
  .object({
    organizations: z.record(z.string(), OrganizationView).meta({
      description: 'By organization ID; IDs of no organization of the instance are left out',
    }),
  })
  .meta({ id: 'OrganizationGetByIdsResponse' });

export const AccountGetByIdsResponse = z
  .object({
    accounts: z.record(z.string(), OrganizationView).meta({
      description: 'By account ID; IDs of no account of the instance are left out',
    }),
  })
  .meta({ id: 'AccountGetByIdsResponse' });

const OptIn = z.literal(false).meta({ description: 'No such channel here: always false' });

export const AudienceSubscription = z
  .object({
    audience_id: z.string(),
    audience_name: z.string(),
    member_from: z.string().meta({ description: 'When the person last entered (seconds, UTC)' }),
    subscribed: z.boolean().meta({
      description: 'Receives the audience email: subscribed to it and `bol::p` not false',
    }),
    subscribed_from: z.string(),
    sms_opted_in: z.boolean().meta({
      description: 'Opted in to the audience SMS and `bol::sp` true',
    }),
    whatsapp_opted_in: OptIn,
    ios_opted_in: OptIn,
    android_opted_in: OptIn,
    web_opted_in: OptIn,
  })
  .meta({ id: 'AudienceSubscription', description: 'One audience the person is a member of' });

export const SubscriptionEntry = z
  .union([
    z.object({
      person_status: z.enum(['merged', 'by-id']).meta({
        description: '`by-id` when looked up by ID, `merged` when by email or external ID',
      }),
      person_id: PersonId,
      email: z.string().optional().meta({
        description: 'Not looked up by ID: the address the person holds',
      }),
      subscriptions: z.array(AudienceSubscription).meta({
        description: 'The audiences the person is a member of, oldest membership first',
      }),
      email_permissions: z.boolean().meta({ description: '`bol::p` (true when not set)' }),
      sms_permissions: z.boolean().meta({ description: '`bol::sp` (false when not set)' }),
      ios_permissions: OptIn,
      android_permissions: OptIn,
      web_permissions: OptIn,
    }),
    z.object({
      person_status: z.literal('invalid'),
      person_id: z.string().optional().meta({ description: 'As asked' }),
      email: z.string().optional().meta({ description: 'As asked' }),
      external_id: z.string().optional().meta({ description: 'As asked' }),
      error: z.string().meta({ description: 'Which lookup found no one' }),
    }),
  ])
  .meta({ id: 'SubscriptionEntry' });

export const PersonSubscriptionsResponse = z
  .object({ people: z.array(SubscriptionEntry) })
  .meta({ id: 'PersonSubscriptionsResponse', description: 'One entry per lookup, in order' });

export const SchemaField = z
  .object({
    id: z.string(),
    name: z.string(),
    display_type: z.string().meta({
      description:
        '`text`, `email`, `link`, `large_text`, `integer`, `decimal`, `currency`, `bool`, `date`, `time`, `geo`, `phone`, `id`; `activity` or `activity_template` for activities',
    }),
    liquid_name: z.string().optional().meta({
      description:
        'The variable transactional email templates read it by (`people.…`); organization fields as the real API names them (`account.…`), and the person’s organization `people.account`',
    }),
    read_only: z.literal(true).optional().meta({ description: 'Clients cannot write it' }),
  })
  .meta({ id: 'SchemaField' });

export const SchemaActivity = SchemaField.extend({
  display_type: z.enum(['activity', 'activity_template']).meta({
    description:
      '`activity_template` for activities shown from a template of their attributes (subscribing, unsubscribing, entering and leaving audiences, definitions with that display style)',
  }),
  attributes: z.array(SchemaField).meta({ description: 'Its attributes, in order' }),
}).meta({ id: 'SchemaActivity', description: 'An activity definition and its attributes' });

export const InstanceSchemaResponse = z
  .object({
    namespaces: z.record(
      z.string(),
      z.object({
        id: z.string(),
        org: z.literal(true).optional().meta({ description: 'Organization fields' }),
        fields: z.record(z.string(), z.union([SchemaActivity, SchemaField])),
      }),
    ),
  })
  .meta({ id: 'InstanceSchemaResponse', description: 'The namespaces asked for, in order' });

// Archive, restore and delete: `scheduled_…` (how many a background request, sent with
// `all_rows_selected`, is about to change; 0 with `inclusion_ids`) and how many were changed.

const scheduled = count(
  'How many records a background request (`all_rows_selected`) is about to change; 0 with `inclusion_ids`',
);
const changed = (verb: string) =>
  count(`How many records this call ${verb} (a background request: 0 until it is done)`);
const backgroundId = z.string().optional().meta({
  description: 'With `all_rows_selected`: the ID to give `POST /v1/async/get`',
});

export const PersonArchiveResponse = z
  .object({
    scheduled_contacts: scheduled,
    archived_contacts: changed('archived'),
    request_id: backgroundId,
  })
  .meta({ id: 'PersonArchiveResponse' });

export const PersonRestoreResponse = z
  .object({
    scheduled_contacts: scheduled,
    restored_contacts: changed('restored'),
    request_id: backgroundId,
  })
  .meta({ id: 'PersonRestoreResponse' });

export const PersonDeleteResponse = z
  .object({
    scheduled_contacts: scheduled,
    deleted_contacts: changed('deleted'),
    request_id: backgroundId,
  })
  .meta({ id: 'PersonDeleteResponse' });

export const OrganizationArchiveResponse = z
  .object({
    scheduled_organizations: scheduled,
    archived_organizations: changed('archived'),
    request_id: backgroundId,
  })
  .meta({ id: 'OrganizationArchiveResponse' });

export const OrganizationRestoreResponse = z
  .object({
    scheduled_organizations: scheduled,
    restored_organizations: changed('restored'),
    request_id: backgroundId,
  })
  .meta({ id: 'OrganizationRestoreResponse' });

export const OrganizationDeleteResponse = z
  .object({
    scheduled_organizations: scheduled,
    deleted_organizations: changed('deleted'),
    request_id: backgroundId,
  })
  .meta({ id: 'OrganizationDeleteResponse' });

/** `accounts/delete` answers the accounts names (as recorded; its archive and restore do not). */
export const AccountDeleteResponse = z
  .object({
    scheduled_accounts: scheduled,
    deleted_accounts: changed('deleted'),
    request_id: backgroundId,
  })
  .meta({ id: 'AccountDeleteResponse' });

/** What a background archive, restore or delete has changed so far (its answer's shape). */
export const LifecycleProgress = z
  .union([
    PersonArchiveResponse.omit({ request_id: true }),
    PersonRestoreResponse.omit({ request_id: true }),
    PersonDeleteResponse.omit({ request_id: true }),
    OrganizationArchiveResponse.omit({ request_id: true }),
    OrganizationRestoreResponse.omit({ request_id: true }),
    OrganizationDeleteResponse.omit({ request_id: true }),
    AccountDeleteResponse.omit({ request_id: true }),
  ])
  .meta({
    id: 'LifecycleProgress',
    description:
      'A background archive, restore or delete while `queued` or `processing`: its answer so far (`scheduled_…`, and how many it has changed)',
  });

export const AsyncGetResponse = z
  .object({
    request_id: z.string(),
    status: z.enum(['queued', 'processing', 'done', 'failed']),
    progress: LifecycleProgress.optional(),
    result: z.unknown().optional().meta({
      description: 'When `done`: exactly the body the synchronous call answers',
    }),
    error: z.string().optional(),
    code: z.number().int().optional().meta({
      description: 'When `failed`: the status the synchronous call would have answered',
    }),
    details: z.array(ErrorDetail).optional(),
  })
  .meta({ id: 'AsyncGetResponse' });

const Time = z.string().meta({ description: 'ISO 8601, UTC, milliseconds' });

/** One audience, as `audiences/get` answers it (the recorded shape, and how far a build got). */
export const AudienceEntrySchema = z
  .object({
    id: z.string().meta({ description: 'The audience ID (24 hexadecimal characters)' }),
    instance_id: z.string(),
    folder_id: z.null(),
    data_source_id: z.string(),
    icon_id: z.string(),
    type: z.literal('permanent'),
    building: z.boolean().meta({
      description: 'Members are being decided over the instance’s people (a new filter)',
    }),
    ready: z.boolean().meta({ description: 'A build of the audience has finished' }),
    is_public: z.boolean().meta({ description: 'Listed in the email preference center' }),
    sms_is_public: z.boolean(),
    sms_public_name: z.string(),
    sms_public_description: z.string(),
    filter: z.unknown().meta({ description: 'The entry filter (only with `with_filter`)' }),
    filter_sha: z.string().meta({ description: 'SHA-1 of the entry filter (canonical JSON)' }),
    last_built_at: Time.nullable(),
    new_filter: z.null(),
    new_filter_sha: z.string(),
    last_used: Time,
    created: Time,
    created_by_id: z.string(),
    created_by_name: z.string(),
    edited_at: Time,
    archived_at: Time.optional().meta({ description: 'Only on archived audiences' }),
    held_reason: z.string().optional().meta({
      description:
        'Only on a held audience: why it is not evaluated (its filter names a field the instance no longer has). Its members and counters stay as they are until the field is back or the filter is changed',
    }),
    name: z.string(),
    public_name: z.string(),
    public_description: z.string(),
    template_id: z.string().meta({
      description:
        'The template the audience was made from: always the zero ID here (no audience templates)',
    }),
    exit_selection: z.enum(['', 'filter']).meta({
      description: '`filter` when the audience has an exit filter',
    }),
    new_exit_criteria_filter: z.unknown().meta({
      description: 'The exit filter (only with `with_filter`), else null',
    }),
    ds_destinations: z.null(),
    sms_opted_in: z.number().int().meta({ description: 'Members opted in to its SMS' }),
    subscribers: z.number().int().meta({ description: 'Members who receive its email' }),
    members: z.number().int(),
    added_last_30_days: z.number().int(),
    engagement: z.number(),
    revenue: z.number(),
    is_cold: z.boolean(),
    build_progress: z
      .object({
        queued: z.number().int(),
        evaluated: z.number().int(),
        done_shards: z.number().int(),
      })
      .meta({ description: 'The current build: people queued for evaluation, and evaluated' }),
  })
  .meta({ id: 'AudienceEntry' });

export const AudiencesGetResponse = z
  .array(AudienceEntrySchema)
  .meta({ id: 'AudiencesGetResponse', description: 'Newest first; `[]` when none' });

export const AudienceDeleteResponse = z
  .object({ audience_id: z.string(), deleted: z.literal(true) })
  .meta({ id: 'AudienceDeleteResponse' });

export const AudienceSubscribeResponse = z
  .object({
    audience_id: z.string(),
    people: z.array(
      z.object({
        person_status: z.enum(['by-id', 'merged', 'invalid', 'queued']).meta({
          description:
            '`by-id`, `merged` (found by email or external ID), `invalid`, or `queued` (`async: true`)',
        }),
        person_id: z
          .string()
          .optional()
          .meta({ description: 'When found by email or external ID' }),
        status: z.enum(['subscribed', 'unsubscribed', 'not-member', 'invalid', 'queued']).meta({
          description:
            'Whether the member receives the audience’s email now; `not-member`: nothing changed; `queued` with `async: true`',
        }),
        sms_opted_in: z.boolean().optional(),
        error: z.string().optional(),
      }),
    ),
    request_id: z.string().optional().meta({
      description: 'With `async: true`: the request to follow with `POST /v1/async/get`',
    }),
  })
  .meta({ id: 'AudienceSubscribeResponse', description: 'One entry per person, in order' });

/** A webhook as the endpoints show it (docs/webhooks.md); its secret only when made. */
export const WebhookEntrySchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    enabled: z.boolean(),
    disabled_reason: z
      .string()
      .optional()
      .meta({ description: 'Why the platform disabled it (deliveries failing for days)' }),
    failing_since: z.string().optional().meta({
      description:
        'While its deliveries fail: since when (ISO 8601). The endpoint is paused between attempts, and disabled after 5 days',
    }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Webhook' });

const shownOnce = {
  secret: z.string().optional().meta({
    description:
      'The signing secret, `whsec_<base64>` (Standard Webhooks): shown once, here and on rotation. A repeat of the request with the same `Idempotency-Key` answers without it (`secret_note` says why): it is kept nowhere in plain form',
  }),
  secret_note: z.string().optional().meta({
    description: 'In a repeat with the same `Idempotency-Key` only: why `secret` is absent',
  }),
};

export const WebhookCreatedSchema = WebhookEntrySchema.extend(shownOnce).meta({
  id: 'WebhookCreated',
});

export const WebhooksGetResponse = z
  .object({ webhooks: z.array(WebhookEntrySchema) })
  .meta({ id: 'WebhooksGetResponse' });

export const WebhookDeleteResponse = z
  .object({ webhook_id: z.string(), deleted: z.literal(true) })
  .meta({ id: 'WebhookDeleteResponse' });

export const WebhookSecretResponse = z
  .object({
    id: z.string(),
    ...shownOnce,
    previous_secret_expires_at: z.string(),
  })
  .meta({ id: 'WebhookSecretResponse' });

/** One delivery attempt (docs/webhooks.md, "Attempts and replays"). */
export const DeliveryAttemptSchema = z
  .object({
    webhook_id: z.string(),
    event_id: z
      .string()
      .meta({ description: 'The event’s ID: the `webhook-id` header the attempt carried' }),
    event_type: z.string(),
    replay_id: z
      .string()
      .nullable()
      .meta({ description: 'The replay that sent it again; `null` for its own delivery' }),
    attempt: z.number().int().meta({
      description:
        '1, then one more per retry (attempts skipped while the endpoint was paused are not listed)',
    }),
    status: z.enum(['succeeded', 'failed']).meta({
      description: '`succeeded`: a 2xx within 15 s; `failed`: anything else',
    }),
    status_code: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The HTTP status answered; `null` when none came' }),
    latency_ms: z.number().nullable().meta({
      description: 'Request to answer (or to giving up); `null` when no request was made',
    }),
    response_body: z
      .string()
      .nullable()
      .meta({ description: 'The first KB of the answer’s body; `null` when none came' }),
    response_truncated: z.boolean().meta({ description: 'Whether the body went on past that' }),
    error: z.string().nullable().meta({ description: 'Why a failed attempt failed' }),
    attempted_at: z.string(),
  })
  .meta({ id: 'DeliveryAttempt' });

export const DeliveriesGetResponse = z
  .object({
    deliveries: z.array(DeliveryAttemptSchema).meta({ description: 'Newest first' }),
    cursor_id: z
      .string()
      .nullable()
      .meta({ description: 'Send it back (with the same filters) for the next page' }),
    has_more: z.boolean(),
  })
  .meta({ id: 'DeliveriesGetResponse' });

/** A replay and how far it got. */
export const ReplaySchema = z
  .object({
    replay_id: z.string(),
    webhook_id: z.string(),
    event_id: z.string().optional().meta({ description: 'A replay of one event' }),
    since: z.string().optional().meta({ description: 'A replay of every event since then' }),
    until: z.string().optional(),
    status: z.enum(['queued', 'running', 'complete', 'failed']).meta({
      description:
        '`complete`: every event found was queued again (deliveries follow, counted in `events_delivered`)',
    }),
    events_found: z
      .number()
      .int()
      .meta({ description: 'Events kept for the webhook in the range, read so far' }),
    events_queued: z.number().int().meta({ description: 'Of those, queued again' }),
    events_skipped: z.number().int().meta({
      description: 'Of those, not queued: the webhook no longer subscribes to their type',
    }),
    events_delivered: z
      .number()
      .int()
      .meta({ description: 'Queued events delivered since (a 2xx), each once' }),
    created_at: z.string(),
    updated_at: z.string(),
    completed_at: z.string().optional(),
    error: z.string().optional().meta({ description: 'Why a failed replay stopped' }),
  })
  .meta({ id: 'Replay' });

export const AccountActivitiesCreateResponse = z
  .object({
    activities: z.array(
      z.union([
        z.object({
          account_id: id('The account the activity was recorded on'),
          account_status: z.enum(['created', 'merged', 'by-id']).meta({
            description:
              '`by-id` when named by `str:o:organization_id`; else what the merge of its `fields` did',
          }),
          activity_id: id('The activity recorded'),
          status: z.literal('ingested'),
        }),
        z.object({
          account_status: z.literal('invalid'),
          status: z.literal('invalid'),
          error: z.string().meta({ description: 'What is wrong, naming the member' }),
        }),
      ]),
    ),
  })
  .meta({ id: 'AccountActivitiesCreateResponse', description: 'One entry per activity, in order' });
