import { z } from 'zod';

/**
 * The answers of the console's organizations and audiences routes (docs/console.md), typed and
 * documented from here; the pages take their types from these schemas.
 */

/** A person in a listing: the ID and the fields asked for (email, first and last name). */
const ListedPerson = z.object({
  id: z.string(),
  fields: z.record(z.string(), z.unknown()).optional(),
});

const Paging = {
  offset: z.number().int(),
  next_offset: z.number().int(),
  cursor_id: z.string().optional().describe('The next page: send it back as `cursor_id`'),
  has_more: z.boolean(),
};

export const ConsoleOrganizationsResponse = z
  .object({
    instance_id: z.string(),
    organizations: z.array(
      z.object({ id: z.string(), fields: z.record(z.string(), z.unknown()).optional() }),
    ),
    meta: z.object({
      total_organizations: z.number().int(),
      total_matches: z.number().int(),
    }),
    ...Paging,
  })
  .meta({ id: 'ConsoleOrganizationsResponse' });

export const ConsoleOrganizationProfileResponse = z
  .object({
    instance_id: z.string(),
    organization_id: z.string(),
    fields: z.array(z.object({ id: z.string(), label: z.string(), value: z.unknown() })),
    tags: z.array(z.string()),
    created: z.string(),
    archived_at: z.string().nullable(),
    member_count: z.number().int().describe('Kept with every link and unlink, never counted'),
    people: z
      .object({ contacts: z.array(ListedPerson), ...Paging })
      .describe('A page of its people, newest first'),
  })
  .meta({ id: 'ConsoleOrganizationProfileResponse' });

export const ConsoleAudience = z
  .object({
    id: z.string(),
    name: z.string(),
    filter: z.unknown().describe('The entry filter, in the filter language of the API'),
    exit_filter: z.unknown(),
    created: z.string(),
    archived_at: z.string().nullable(),
    members: z.number().int(),
    subscribers: z.number().int(),
    sms_opted_in: z.number().int(),
    added_last_30_days: z.number().int(),
    building: z.boolean().describe("Its members are still being found over the instance's people"),
    ready: z.boolean(),
    last_built_at: z.string().nullable(),
    build_progress: z.object({
      queued: z.number().int(),
      evaluated: z.number().int(),
      done_shards: z.number().int(),
    }),
    held_reason: z
      .string()
      .nullable()
      .describe('Why it is held (its filter no longer compiles), else null'),
  })
  .meta({ id: 'ConsoleAudience' });

export const ConsoleFilterField = z
  .object({
    id: z.string(),
    label: z.string(),
    type: z.string().describe('What its operators read: a field type, or `u4s` for the tags'),
    operators: z.array(
      z.object({
        operator: z.string(),
        label: z.string(),
        kind: z.enum([
          'none',
          'boolean',
          'text',
          'number',
          'number-range',
          'days',
          'date',
          'date-range',
        ]),
      }),
    ),
  })
  .meta({ id: 'ConsoleFilterField' });

export const ConsoleAudiencesResponse = z
  .object({
    instance_id: z.string(),
    audiences: z.array(ConsoleAudience),
    total: z.number().int().describe('How many audiences match (live or archived, the search)'),
    offset: z.number().int(),
    next_offset: z.number().int(),
    has_more: z.boolean(),
    filter_fields: z
      .array(ConsoleFilterField)
      .describe('The fields a filter can name, with the operators that can read each'),
  })
  .meta({ id: 'ConsoleAudiencesResponse' });

export const ConsoleAudienceResponse = z
  .object({ instance_id: z.string(), audience: ConsoleAudience })
  .meta({ id: 'ConsoleAudienceResponse' });

export const ConsoleAudienceMembersResponse = z
  .object({
    instance_id: z.string(),
    audience_id: z.string(),
    contacts: z.array(ListedPerson),
    total: z.number().int().describe("The audience's member count (its counter)"),
    ...Paging,
  })
  .meta({ id: 'ConsoleAudienceMembersResponse' });
