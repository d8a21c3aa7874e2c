import { z } from 'zod';
import type { Region } from '../regions.js';
import {
  ATTEMPT_OUTCOMES,
  getDeliveries,
  DeliveriesGetRequest,
  type DeliveriesPorts,
} from '../webhooks/attempts.js';
import { eventIdSchema, replay, type ReplayPorts } from '../webhooks/replay.js';
import {
  rotateWebhookSecret,
  webhookEntry,
  webhookIdSchema,
  webhookNotFound,
  type Webhook,
  type WebhookServices,
  type WebhookStore,
} from '../webhooks/webhook.js';
import { recordChange, type AuditSink } from './audit.js';
import { consoleTenant } from './console-activities.js';
import { type ConsoleCaller, ConsoleInstanceId, type ConsoleStore } from './console-keys.js';

/**
 * Webhooks in the console: the instance's endpoints with their health, each one's delivery
 * attempts (the API's `webhooks/deliveries/get`), an event sent again (`webhooks/replay`) and
 * the secret rotated (`webhooks/rotate-secret`: the new secret shown once, the old one signing
 * beside it for a day). The same objects and rules as the public API; each change audited
 * before it is made, after the webhook is known to be the instance's (a 404 writes nothing).
 */
const instanceId = ConsoleInstanceId;
export const ConsoleWebhooksRequest = z.strictObject({ instance_id: instanceId });
export const ConsoleAttemptsRequest = z.strictObject({
  instance_id: instanceId,
  webhook_id: webhookIdSchema,
  status: z.enum(ATTEMPT_OUTCOMES, { message: 'expected succeeded or failed' }).optional(),
  limit: z.number().int().min(1).max(100).default(25),
  cursor_id: z.string().max(2000).optional(),
});
export const ConsoleReplayRequest = z.strictObject({
  instance_id: instanceId,
  webhook_id: webhookIdSchema,
  event_id: eventIdSchema,
});
export const ConsoleRotateRequest = z.strictObject({
  instance_id: instanceId,
  webhook_id: webhookIdSchema,
});

/** How an endpoint is doing: the platform's view of its recent deliveries. */
export function webhookHealth(webhook: Webhook, now: number) {
  const health = webhook.health;
  const state: 'disabled' | 'paused' | 'failing' | 'healthy' = !webhook.enabled
    ? 'disabled'
    : health && health.paused_until > now
      ? 'paused'
      : health
        ? 'failing'
        : 'healthy';
  return {
    state,
    failing_since: health?.failing_since ?? null,
    failures: health?.failures ?? 0,
    paused_until: health ? new Date(health.paused_until).toISOString() : null,
    last_failure: health?.last_failure ?? null,
    slow_until:
      webhook.slow_until !== undefined && webhook.slow_until > now
        ? new Date(webhook.slow_until).toISOString()
        : null,
  };
}

/** The instance's webhooks (never their secrets), each with its health. */
export async function webhooksOf(
  store: Pick<ConsoleStore, 'getInstance'>,
  webhooks: Pick<WebhookStore, 'list'>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleWebhooksRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const now = Date.now();
  const list = await webhooks.list(tenant.instance.id);
  return {
    instance_id: tenant.instance.id,
    webhooks: list.map((webhook) => ({
      ...webhookEntry(webhook),
      disabled_reason: webhook.disabled_reason ?? null,
      health: webhookHealth(webhook, now),
    })),
  };
}

/** A page of one endpoint's delivery attempts, newest first. */
export async function attemptsOf(
  store: Pick<ConsoleStore, 'getInstance'>,
  ports: (instanceId: string) => Promise<DeliveriesPorts>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  request: z.infer<typeof ConsoleAttemptsRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const { instance_id: _instance, ...listing } = request;
  const page = await getDeliveries(
    DeliveriesGetRequest.parse(listing),
    tenant,
    await ports(tenant.instance.id),
  );
  return { instance_id: tenant.instance.id, webhook_id: request.webhook_id, ...page };
}

/** One event sent again to the endpoint, with its ID and body (signed anew). */
export async function replayConsoleEvent(
  store: Pick<ConsoleStore, 'getInstance'>,
  ports: ReplayPorts,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleReplayRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  if (!(await ports.webhooks.get(tenant.instance.id, request.webhook_id))) {
    throw webhookNotFound(request.webhook_id);
  }
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'webhook.replay',
    target: `webhook:${request.webhook_id}`,
    details: { event_id: request.event_id },
  });
  const answer = await replay(
    { webhook_id: request.webhook_id, event_id: request.event_id },
    tenant,
    ports,
  );
  return { instance_id: tenant.instance.id, ...answer.replay };
}

/** A new signing secret, shown in this answer only; the old one signs beside it for a day. */
export async function rotateConsoleSecret(
  store: Pick<ConsoleStore, 'getInstance'>,
  services: WebhookServices,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleRotateRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  if (!(await services.store.get(tenant.instance.id, request.webhook_id))) {
    throw webhookNotFound(request.webhook_id);
  }
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'webhook.rotate_secret',
    target: `webhook:${request.webhook_id}`,
  });
  const rotated = await rotateWebhookSecret({ webhook_id: request.webhook_id }, tenant, services);
  return {
    instance_id: tenant.instance.id,
    webhook_id: rotated.id,
    secret: rotated.secret,
    previous_secret_expires_at: rotated.previous_secret_expires_at,
  };
}
