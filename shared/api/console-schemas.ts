import { z } from 'zod';
import { StoredActivityDefinition } from '../domain/instance-config.js';
import { ConsoleFilterField } from './console-groups.js';
import { ConsoleProfileAudiences, ConsoleProfileEmails } from './console-messages.js';

/** The answers of the console's API (docs/console.md), typed and documented from here. */
export const ConsoleInstance = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: z.string(),
    region: z.enum(['default', 'au', 'eu']),
  })
  .meta({ id: 'ConsoleInstance' });

export const ConsoleMeResponse = z
  .object({
    subject: z.string().describe("The user's ID at the identity provider"),
    email: z.string().nullable(),
    platform_admin: z.boolean(),
    instances: z
      .array(ConsoleInstance)
      .describe('The instances of this region the user may manage'),
  })
  .meta({ id: 'ConsoleMeResponse' });

export const ConsoleInstancesResponse = z
  .object({ instances: z.array(ConsoleInstance) })
  .meta({ id: 'ConsoleInstancesResponse' });

export const ConsoleKeyListing = z
  .object({
    key_hash: z.string().describe("The key's SHA-256: the key itself is never kept"),
    origin: z.enum(['file', 'minted']),
    created_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: 'ConsoleKeyListing' });

export const ConsoleKeysResponse = z
  .object({
    instance_id: z.string(),
    data_sources: z.array(
      z.object({
        name: z.string(),
        merge_by: z.array(z.string()),
        merge_strategy: z.number().int(),
        find_strategy: z.number().int(),
        declared_in_file: z
          .boolean()
          .describe(
            "Declared in the instance's configuration file: changed there, not in the console",
          ),
        keys: z.array(ConsoleKeyListing),
      }),
    ),
  })
  .meta({ id: 'ConsoleKeysResponse' });

export const ConsoleKeyCreatedResponse = z
  .object({
    instance_id: z.string(),
    data_source: z.string(),
    key: z.string().describe('The new key: shown in this answer only'),
    key_hash: z.string(),
  })
  .meta({ id: 'ConsoleKeyCreatedResponse' });

export const ConsoleKeyRevokedResponse = z
  .object({ instance_id: z.string(), key_hash: z.string(), revoked: z.literal(true) })
  .meta({ id: 'ConsoleKeyRevokedResponse' });

export const ConsoleAuditResponse = z
  .object({
    entries: z.array(
      z.object({
        at: z.string(),
        actor: z.object({ subject: z.string(), email: z.string().nullable() }),
        action: z.string(),
        target: z.string(),
        source_ip: z.string(),
        request_id: z.string(),
        details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
      }),
    ),
    next: z.string().nullable().describe('The next page: send it as `before`'),
  })
  .meta({ id: 'ConsoleAuditResponse' });

export const ConsoleActivity = StoredActivityDefinition.meta({ id: 'ConsoleActivity' });

export const ConsoleActivitiesResponse = z
  .object({
    instance_id: z.string(),
    activities: z.array(ConsoleActivity).describe('Archived ones too (`archived_at`)'),
    person_fields: z
      .array(z.object({ id: z.string(), name: z.string() }))
      .describe("The instance's custom person fields: what attributes may map to"),
  })
  .meta({ id: 'ConsoleActivitiesResponse' });

export const ConsoleActivityResponse = z
  .object({ activity: ConsoleActivity })
  .meta({ id: 'ConsoleActivityResponse' });

export const ConsoleActivityArchivedResponse = z
  .object({ archived_activity: z.string() })
  .meta({ id: 'ConsoleActivityArchivedResponse' });

export const ConsolePeopleResponse = z
  .object({
    instance_id: z.string(),
    contacts: z.array(
      z.object({ id: z.string(), fields: z.record(z.string(), z.unknown()).optional() }),
    ),
    meta: z.record(z.string(), z.number()),
    offset: z.number().int(),
    next_offset: z.number().int(),
    cursor_id: z.string().optional(),
    has_more: z.boolean(),
    filter_fields: z
      .array(ConsoleFilterField)
      .describe('The fields a `filter` can name, with the operators that can read each'),
  })
  .meta({ id: 'ConsolePeopleResponse' });

export const ConsoleProfileResponse = z
  .object({
    instance_id: z.string(),
    person_id: z.string(),
    fields: z.array(z.object({ id: z.string(), label: z.string(), value: z.unknown() })),
    tags: z.array(z.string()),
    created: z.string().nullable(),
    last_seen: z.string().nullable(),
    organization_id: z.string().nullable(),
    activities: z
      .array(
        z.object({
          id: z.string(),
          activity_id: z.string(),
          display: z.string(),
          created_at: z.string(),
        }),
      )
      .describe('The 50 newest, as display text'),
    emails: ConsoleProfileEmails,
    audiences: ConsoleProfileAudiences,
  })
  .meta({ id: 'ConsoleProfileResponse' });

export const ConsoleDataSourceResponse = z
  .object({
    instance_id: z.string(),
    data_source: z.object({
      name: z.string(),
      merge_by: z.array(z.string()),
      merge_strategy: z.number().int(),
      find_strategy: z.number().int(),
    }),
  })
  .meta({ id: 'ConsoleDataSourceResponse' });
