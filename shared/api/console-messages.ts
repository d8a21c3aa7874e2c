import { z } from 'zod';
import { DeliveryAttemptSchema, ReplaySchema } from './schemas.js';

/**
 * The answers of the console's email and webhook routes, and what a person's profile says of
 * their emails and audiences (docs/console.md), typed and documented from here.
 */
const happened = z
  .object({ at: z.string(), detail: z.string().nullable() })
  .nullable()
  .meta({ description: 'The latest, with its kind as SES gave it; `null` when none' });

export const ConsoleEmail = z
  .object({
    message_id: z.string(),
    person_id: z.string(),
    to: z.string().describe("The recipient's address when the email was sent"),
    subject: z.string().nullable().describe('The rendered subject; `null` when never built'),
    email_name: z.string(),
    status: z.enum(['queued', 'sent', 'failed', 'bounced', 'complained', 'suppressed']),
    error: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    opens: z.number().int().describe('Opens recorded (of the 100 events an email keeps)'),
    clicks: z.number().int().describe('Clicks recorded (of the 100 events an email keeps)'),
    bounce: happened,
    complaint: happened,
  })
  .meta({ id: 'ConsoleEmail' });

export const ConsoleEmailsResponse = z
  .object({
    instance_id: z.string(),
    emails: z.array(ConsoleEmail).describe('Newest first'),
    next: z
      .string()
      .nullable()
      .describe('Send it back as `before` for the next page; `null` on the last'),
  })
  .meta({ id: 'ConsoleEmailsResponse' });

export const ConsoleEmailPreviewResponse = z
  .object({
    instance_id: z.string(),
    email: ConsoleEmail,
    html: z
      .string()
      .nullable()
      .describe(
        'The HTML as written (links to their destinations, no open pixel); `null` when not kept: after 30 days, too large, or never built',
      ),
  })
  .meta({ id: 'ConsoleEmailPreviewResponse' });

export const ConsoleWebhookHealth = z
  .object({
    state: z.enum(['healthy', 'failing', 'paused', 'disabled']),
    failing_since: z.string().nullable(),
    failures: z.number().int().describe('Failed attempts in a row'),
    paused_until: z.string().nullable().describe('No attempt is made before then'),
    last_failure: z.string().nullable(),
    slow_until: z
      .string()
      .nullable()
      .describe('Its deliveries wait in the slow queue until then (it answered slowly)'),
  })
  .meta({ id: 'ConsoleWebhookHealth' });

export const ConsoleWebhooksResponse = z
  .object({
    instance_id: z.string(),
    webhooks: z.array(
      z.object({
        id: z.string(),
        url: z.string(),
        events: z.array(z.string()),
        description: z.string().nullable(),
        enabled: z.boolean(),
        disabled_reason: z.string().nullable(),
        failing_since: z.string().optional(),
        created_at: z.string(),
        updated_at: z.string(),
        health: ConsoleWebhookHealth,
      }),
    ),
  })
  .meta({ id: 'ConsoleWebhooksResponse' });

export const ConsoleAttemptsResponse = z
  .object({
    instance_id: z.string(),
    webhook_id: z.string(),
    deliveries: z.array(DeliveryAttemptSchema).describe('Newest first'),
    cursor_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({ id: 'ConsoleAttemptsResponse' });

export const ConsoleReplayResponse = ReplaySchema.extend({ instance_id: z.string() }).meta({
  id: 'ConsoleReplayResponse',
});

export const ConsoleSecretResponse = z
  .object({
    instance_id: z.string(),
    webhook_id: z.string(),
    secret: z.string().describe('The new signing secret, `whsec_…`: shown in this answer only'),
    previous_secret_expires_at: z
      .string()
      .describe('Until then the previous secret signs beside the new one'),
  })
  .meta({ id: 'ConsoleSecretResponse' });

/** What a person's profile adds: their emails and the audiences they are in. */
export const ConsoleProfileEmails = z
  .array(ConsoleEmail)
  .describe('The 10 newest emails sent to the person');

export const ConsoleProfileAudiences = z
  .array(
    z.object({
      audience_id: z.string(),
      name: z.string(),
      member_from: z.string().nullable(),
      subscribed: z.boolean().describe("The person's choice for this audience's email"),
    }),
  )
  .describe('The audiences the person is a member of');
