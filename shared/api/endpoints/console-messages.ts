import {
  ConsoleEmailPreviewRequest,
  ConsoleEmailsRequest,
} from '../../domain/console/console-emails.js';
import {
  ConsoleAttemptsRequest,
  ConsoleReplayRequest,
  ConsoleRotateRequest,
  ConsoleWebhooksRequest,
} from '../../domain/console/console-webhooks.js';
import type { RouteKey } from '../../routes.js';
import {
  ConsoleAttemptsResponse,
  ConsoleEmailPreviewResponse,
  ConsoleEmailsResponse,
  ConsoleReplayResponse,
  ConsoleSecretResponse,
  ConsoleWebhooksResponse,
} from '../console-messages.js';
import type { Endpoint } from './common.js';

const NOT_YOURS =
  'An instance the user may not manage is answered 404, as one that does not exist.';
const webhookId = '0066a1f0c7e4b0a1b2c3d4e9';
const eventId = 'msg_2f0c1d9e8b7a6f5e4d3c2b1a09f8e7d6';
const email = {
  message_id: '0066a1f0c7e4b0a1b2c3d4e7',
  person_id: '0066a1f0c7e4b0a1b2c3d4e5',
  to: 'ada@example.com',
  subject: 'Your receipt',
  email_name: 'receipt',
  status: 'sent' as const,
  error: null,
  created_at: '2026-12-02T10:00:00.000Z',
  updated_at: '2026-12-02T10:05:00.000Z',
  opens: 2,
  clicks: 1,
  bounce: null,
  complaint: null,
};

/** The console's email and webhook routes (docs/console.md), tag `Console`. */
/** An endpoint's health while its deliveries succeed (the examples of the overview and webhooks). */
export const HEALTHY_EXAMPLE = {
  state: 'healthy',
  failing_since: null,
  failures: 0,
  paused_until: null,
  last_failure: null,
  slow_until: null,
} as const;

export const CONSOLE_MESSAGES = {
  'POST /console/v1/emails/get': {
    tag: 'Console',
    summary: "An instance's transactional emails",
    description: `The emails sent through \`transactional/send\`, newest first, with their state, opens, clicks, bounce and complaint; with \`person_id\`, that person's only. \`next\` continues as \`before\`. ${NOT_YOURS}`,
    request: ConsoleEmailsRequest,
    requestExample: { instance_id: 'acme', limit: 25 },
    errors: [404],
    responses: {
      200: {
        description: 'A page of emails',
        schema: ConsoleEmailsResponse,
        example: { instance_id: 'acme', emails: [email], next: null },
      },
    },
  },
  'POST /console/v1/emails/preview': {
    tag: 'Console',
    summary: "An email's HTML",
    description: `The email's HTML as written (links to their destinations, without the open pixel), kept 30 days; \`html\` is null after that. 404 for an email the instance does not have. ${NOT_YOURS}`,
    request: ConsoleEmailPreviewRequest,
    requestExample: { instance_id: 'acme', message_id: email.message_id },
    errors: [404],
    responses: {
      200: {
        description: 'The email',
        schema: ConsoleEmailPreviewResponse,
        example: {
          instance_id: 'acme',
          email,
          html: '<html><body><p>Thank you, Ada</p></body></html>',
        },
      },
    },
  },
  'POST /console/v1/webhooks/get': {
    tag: 'Console',
    summary: "An instance's webhooks",
    description: `Each endpoint (never its secret) with its health: healthy, failing (since when, how many attempts in a row), paused until a time, or disabled. ${NOT_YOURS}`,
    request: ConsoleWebhooksRequest,
    requestExample: { instance_id: 'acme' },
    errors: [404],
    responses: {
      200: {
        description: 'The webhooks',
        schema: ConsoleWebhooksResponse,
        example: {
          instance_id: 'acme',
          webhooks: [
            {
              id: webhookId,
              url: 'https://hooks.example.com/cdp',
              events: ['person.*'],
              description: null,
              enabled: true,
              disabled_reason: null,
              created_at: '2026-12-01T09:30:00.000Z',
              updated_at: '2026-12-01T09:30:00.000Z',
              health: HEALTHY_EXAMPLE,
            },
          ],
        },
      },
    },
  },
  'POST /console/v1/webhooks/attempts': {
    tag: 'Console',
    summary: "A webhook's delivery attempts",
    description: `One endpoint's attempts of the last 30 days, newest first (status, HTTP code, time, duration), optionally \`succeeded\` or \`failed\` only; \`cursor_id\` continues. 404 for a webhook the instance does not have. ${NOT_YOURS}`,
    request: ConsoleAttemptsRequest,
    requestExample: { instance_id: 'acme', webhook_id: webhookId, limit: 25 },
    errors: [404],
    responses: {
      200: {
        description: 'A page of attempts',
        schema: ConsoleAttemptsResponse,
        example: {
          instance_id: 'acme',
          webhook_id: webhookId,
          deliveries: [
            {
              webhook_id: webhookId,
              event_id: eventId,
              event_type: 'person.created',
              replay_id: null,
              attempt: 1,
              status: 'succeeded',
              status_code: 200,
              latency_ms: 84,
              response_body: 'ok',
              response_truncated: false,
              error: null,
              attempted_at: '2026-12-02T10:00:01.000Z',
            },
          ],
          cursor_id: null,
          has_more: false,
        },
      },
    },
  },
  'POST /console/v1/webhooks/replay': {
    tag: 'Console',
    summary: 'Send an event again',
    description: `The event (its \`webhook-id\`, kept 30 days) is queued again for the endpoint, with its ID and body, signed with the current secrets; recorded in the audit log. 404 for a webhook or an event the endpoint does not have. ${NOT_YOURS}`,
    request: ConsoleReplayRequest,
    requestExample: { instance_id: 'acme', webhook_id: webhookId, event_id: eventId },
    errors: [404, 409],
    responses: {
      202: {
        description: 'Queued',
        schema: ConsoleReplayResponse,
        example: {
          instance_id: 'acme',
          replay_id: '0066a1f0c7e4b0a1b2c3d4ea',
          webhook_id: webhookId,
          event_id: eventId,
          status: 'complete',
          events_found: 1,
          events_queued: 1,
          events_skipped: 0,
          events_delivered: 0,
          created_at: '2026-12-02T10:10:00.000Z',
          updated_at: '2026-12-02T10:10:00.000Z',
          completed_at: '2026-12-02T10:10:00.000Z',
        },
      },
    },
  },
  'PUT /console/v1/webhooks/rotate': {
    tag: 'Console',
    summary: "Rotate a webhook's secret",
    description: `A new signing secret, shown in this answer only; the previous one keeps signing beside it for 24 hours, so that the receiver can switch without missing a delivery. Recorded in the audit log (never the secret). ${NOT_YOURS}`,
    request: ConsoleRotateRequest,
    requestExample: { instance_id: 'acme', webhook_id: webhookId },
    errors: [404],
    responses: {
      200: {
        description: 'The new secret',
        schema: ConsoleSecretResponse,
        example: {
          instance_id: 'acme',
          webhook_id: webhookId,
          secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
          previous_secret_expires_at: '2026-12-03T10:10:00.000Z',
        },
      },
    },
  },
} satisfies Partial<Record<RouteKey, Endpoint>>;
