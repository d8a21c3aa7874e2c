import { z } from 'zod';
import { ConsoleWebhookHealth } from './console-messages.js';

/**
 * The answers of the console's overview and custom-fields routes (docs/console.md), typed and
 * documented from here like those of console-schemas.ts.
 */
const count = z.number().int().min(0);

export const ConsoleOverviewWebhook = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    enabled: z.boolean(),
    disabled_reason: z
      .string()
      .nullable()
      .describe('Why the platform disabled it (deliveries failing for days), if it did'),
    health: ConsoleWebhookHealth,
    last_attempt: z
      .object({
        at: z.string(),
        outcome: z.enum(['succeeded', 'failed']),
        status_code: z.number().int().nullable(),
      })
      .nullable()
      .describe('The newest delivery attempt kept (30 days), if any'),
  })
  .meta({ id: 'ConsoleOverviewWebhook' });

export const ConsoleOverviewResponse = z
  .object({
    instance_id: z.string(),
    people: z.object({
      people: count,
      subscribers: count.describe('People who may be emailed'),
      organizations: count,
    }),
    emails: z
      .object({
        from: z.string().describe('The first UTC day counted (YYYY-MM-DD)'),
        to: z.string().describe('The last: today'),
        sent: count,
        bounced: count.describe("Emails whose recipient's address bounced for good"),
        complained: count.describe('Emails their recipient marked as spam'),
      })
      .describe('Transactional emails of the last 7 UTC days, today included'),
    webhooks: z.array(ConsoleOverviewWebhook),
    dead_letters: z
      .object({
        queues: z.array(z.object({ queue: z.string(), messages: count.nullable() })),
        total: count,
      })
      .nullable()
      .describe(
        "The region's dead-letter queues, shared by every instance: platform admins only (null for others)",
      ),
  })
  .meta({ id: 'ConsoleOverviewResponse' });

export const ConsoleCustomField = z
  .object({
    id: z.string().describe('The field ID (`<type>:cm:<name>` for people, `<type>:oc:<name>`)'),
    name: z.string(),
    display_type: z.string(),
    values: z.array(z.string()).nullable().describe('The options of a select field'),
    unique: z.boolean().describe('A merge key (configured in the file)'),
    track_changes: z.boolean().nullable().describe('Person fields: changes kept as activities'),
    source: z.enum(['file', 'api']).describe('The configuration file, or the API and console'),
    created_at: z.string().nullable(),
  })
  .meta({ id: 'ConsoleCustomField' });

const FieldsOfKind = z.object({
  fields: z.array(ConsoleCustomField),
  deleted: z
    .array(z.object({ id: z.string(), deleted_at: z.string() }))
    .describe('Fields deleted through the API: their IDs and names stay reserved'),
});

export const ConsoleFieldsResponse = z
  .object({ instance_id: z.string(), person: FieldsOfKind, organization: FieldsOfKind })
  .meta({ id: 'ConsoleFieldsResponse' });

export const ConsoleFieldResponse = z
  .object({
    instance_id: z.string(),
    kind: z.enum(['person', 'organization']),
    field: ConsoleCustomField,
  })
  .meta({ id: 'ConsoleFieldResponse' });
