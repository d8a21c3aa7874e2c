import {
  WebhookCreateRequest,
  WebhookIdRequest,
  WebhooksGetRequest,
  WebhookUpdateRequest,
} from '../../domain/webhooks/webhook.js';
import { DeliveriesGetRequest } from '../../domain/webhooks/attempts.js';
import { ReplayRequest } from '../../domain/webhooks/replay.js';
import type { RouteKey } from '../../routes.js';
import {
  WebhookCreatedSchema,
  WebhookDeleteResponse,
  WebhookEntrySchema,
  WebhookSecretResponse,
  WebhooksGetResponse,
  DeliveriesGetResponse,
  ReplaySchema,
} from '../schemas.js';
import { cursor, type Endpoint } from './common.js';

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

/** Webhooks: `webhooks/*` (with delivery attempts and replays). */
export const WEBHOOKS = {
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
} satisfies Partial<Record<RouteKey, Endpoint>>;
