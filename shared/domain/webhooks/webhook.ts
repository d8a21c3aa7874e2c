import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { ID_PATTERN, newId } from '../ids.js';
import type { KeyWrapper } from '../signing-keys.js';
import type { Tenant } from '../tenancy.js';
import { checkWebhookUrl, type AddressPolicy, type HostResolver } from './address-policy.js';

/**
 * Outbound webhooks (docs/webhooks.md): an instance's endpoints, the events each subscribes
 * to, and the secrets that sign their deliveries (Standard Webhooks). Secrets are shown once
 * (on create and on rotation) and kept wrapped (`KeyWrapper`: KMS on AWS).
 */

/** Webhooks per instance. */
export const MAX_WEBHOOKS = 20;
/** How long a rotated-out secret keeps signing beside the new one. */
export const SECRET_GRACE_MS = 24 * 3_600_000;

/** The event types, by family (`*` and `<family>.*` subscribe to several). */
export const EVENT_TYPES = [
  'person.created',
  'person.updated',
  'person.archived',
  'person.restored',
  'person.deleted',
  'organization.created',
  'organization.updated',
  'activity.created',
  'email.sent',
  'email.bounced',
  'email.complained',
  'audience.entered',
  'audience.exited',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const FAMILIES = [...new Set(EVENT_TYPES.map((type) => type.split('.')[0] ?? ''))];
const SUBSCRIPTIONS: readonly string[] = [
  '*',
  ...FAMILIES.map((family) => `${family}.*`),
  ...EVENT_TYPES,
];

/** Whether a webhook subscribed to `patterns` receives events of `type`. */
export function subscribesTo(patterns: readonly string[], type: string): boolean {
  return patterns.some(
    (pattern) =>
      pattern === '*' ||
      pattern === type ||
      (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))),
  );
}

const url = z.string().min(1, 'expected a URL').max(2048, 'at most 2048 characters');
const events = z
  .array(
    z.string().refine((pattern) => SUBSCRIPTIONS.includes(pattern), {
      message: `expected an event type, a family such as person.* or * (types: ${EVENT_TYPES.join(', ')})`,
    }),
    'expected an array of event types',
  )
  .min(1, 'expected at least one event type')
  .max(EVENT_TYPES.length + FAMILIES.length + 1, 'too many event types');
const description = z.string().max(500, 'at most 500 characters');
export const webhookIdSchema = z
  .string()
  .regex(ID_PATTERN, 'expected a webhook ID (24 hexadecimal characters)');
const webhookId = webhookIdSchema;

/** `POST /v1/webhooks/create`. */
export const WebhookCreateRequest = z.strictObject({
  url,
  events,
  description: description.optional(),
  enabled: z.boolean().optional(),
});
export type WebhookCreateRequest = z.infer<typeof WebhookCreateRequest>;

/** `PUT /v1/webhooks/update`: what is given changes; enabling clears why it was disabled. */
export const WebhookUpdateRequest = z.strictObject({
  webhook_id: webhookId,
  url: url.optional(),
  events: events.optional(),
  description: description.nullable().optional(),
  enabled: z.boolean().optional(),
});
export type WebhookUpdateRequest = z.infer<typeof WebhookUpdateRequest>;

/** `DELETE /v1/webhooks/delete`, `PUT /v1/webhooks/rotate-secret`. */
export const WebhookIdRequest = z.strictObject({ webhook_id: webhookId });
export type WebhookIdRequest = z.infer<typeof WebhookIdRequest>;

/** `POST /v1/webhooks/get`: one webhook, or all of the instance's (the body may be left out). */
export const WebhooksGetRequest = z.strictObject({ webhook_id: webhookId.optional() });
export type WebhooksGetRequest = z.infer<typeof WebhooksGetRequest>;

export interface WebhookSecret {
  /** `whsec_<base64>`, wrapped: bound to its instance and webhook when `bound`. */
  wrapped: string;
  /** Wrapped with `secretContext` (every secret wrapped since; older ones until rebound). */
  bound?: boolean;
  /** A rotated-out secret signs until then. */
  expires_at?: string;
}

export interface Webhook {
  id: string;
  url: string;
  events: string[];
  description?: string;
  enabled: boolean;
  /** Why the platform disabled it (deliveries failing for days). */
  disabled_reason?: string;
  created_at: string;
  updated_at: string;
  /** The newest first. */
  secrets: WebhookSecret[];
  /** While its deliveries fail: the endpoint's own backoff (delivery.ts). */
  health?: WebhookHealth;
  /** Until when (epoch ms) its deliveries go to the slow queue (delivery.ts, `SLOW_FOR_MS`). */
  slow_until?: number;
}

/**
 * An endpoint whose deliveries fail (docs/webhooks.md, "One endpoint's trouble stays its
 * own"): since when, how many attempts in a row, and until when no attempt is made to it
 * (one probe is let through then).
 */
export interface WebhookHealth {
  failing_since: string;
  failures: number;
  /** Epoch ms. */
  paused_until: number;
  last_failure?: string;
}

/** What webhooks are kept in (the config table). */
export interface WebhookStore {
  /** Every webhook of the instance (read consistently). */
  list(instanceId: string): Promise<Webhook[]>;
  get(instanceId: string, webhookId: string): Promise<Webhook | undefined>;
  /** `ValidationError` past `MAX_WEBHOOKS`. */
  create(instanceId: string, webhook: Webhook): Promise<void>;
  /** Conditioned on `updated_at` as read: a concurrent change fails with `ConflictError`. */
  update(instanceId: string, webhook: Webhook, previous: Webhook): Promise<void>;
  /** `false` when it was not there. */
  remove(instanceId: string, webhookId: string): Promise<boolean>;
  /**
   * Records a failed attempt: `health` as the attempt read it becomes `next` (or nothing
   * changes, when another attempt recorded one meanwhile, a success cleared it or the owner
   * changed the webhook: then `false`).
   */
  recordFailure(
    instanceId: string,
    webhookId: string,
    seen: WebhookHealth | undefined,
    next: WebhookHealth,
  ): Promise<boolean>;
  /** The endpoint answers again: its failing state goes. */
  recordSuccess(instanceId: string, webhookId: string): Promise<void>;
  /** The endpoint answered slowly: its deliveries go to the slow queue until `until`. */
  markSlow(instanceId: string, webhookId: string, until: number): Promise<void>;
  /** It answered promptly again. */
  clearSlow(instanceId: string, webhookId: string): Promise<void>;
  /**
   * Lets one attempt through to a paused endpoint: moves `paused_until` from `seen` to
   * `until`; false when another attempt took it.
   */
  takeProbe(instanceId: string, webhookId: string, seen: number, until: number): Promise<boolean>;
  /**
   * The platform disables the webhook (its deliveries failed for days), saying why: only
   * while its failing state is still `seen` and the webhook is as read (`updated_at`), so that
   * a late attempt never disables an endpoint its owner has changed or that answered since.
   */
  disable(
    instanceId: string,
    webhookId: string,
    seen: { health: WebhookHealth; updated_at: string },
    reason: string,
    at: string,
  ): Promise<boolean>;
}

export interface WebhookServices {
  store: WebhookStore;
  secrets: KeyWrapper;
  addresses: AddressPolicy;
  resolve: HostResolver;
  now?: () => number;
}

/** A new secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** What a webhook's secrets are wrapped with: they unwrap for that webhook only. */
export function secretContext(instanceId: string, webhookId: string): Record<string, string> {
  return { instance: instanceId, webhook: webhookId };
}

/** A secret of a webhook in plain form. */
export function unwrapSecret(
  wrapper: KeyWrapper,
  instanceId: string,
  webhookId: string,
  secret: WebhookSecret,
): Promise<string> {
  return secret.bound
    ? wrapper.unwrap(secret.wrapped, secretContext(instanceId, webhookId))
    : wrapper.unwrap(secret.wrapped);
}

/** What a repeat of a request that showed a secret answers in its place (never the secret). */
export const SECRET_SHOWN_ONCE =
  'The secret is shown once, in the first answer to this request, and is not kept anywhere in plain form; rotate it (PUT /v1/webhooks/rotate-secret) for a new one';

/**
 * The answer of `webhooks/create` or `webhooks/rotate-secret` as its idempotency record keeps
 * it: without `secret`, with `secret_note` saying why.
 */
export function withoutSecret(answer: Record<string, unknown>): Record<string, unknown> {
  const { secret: _secret, ...rest } = answer;
  return { ...rest, secret_note: SECRET_SHOWN_ONCE };
}

/** The HMAC key of a `whsec_<base64>` secret. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
}

/** A webhook as the API shows it (never its secrets). */
export function webhookEntry(webhook: Webhook) {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description ?? null,
    enabled: webhook.enabled,
    ...(webhook.disabled_reason !== undefined ? { disabled_reason: webhook.disabled_reason } : {}),
    ...(webhook.health ? { failing_since: webhook.health.failing_since } : {}),
    created_at: webhook.created_at,
    updated_at: webhook.updated_at,
  };
}
export type WebhookEntry = ReturnType<typeof webhookEntry>;

/** An unknown webhook, or another instance's: the same answer. */
export const webhookNotFound = (id: string) =>
  new NotFoundError(`webhook_id: no webhook ${id} in this instance`, [
    { field: 'webhook_id', error: 'not found' },
  ]);

export async function createWebhook(
  request: WebhookCreateRequest,
  tenant: Tenant,
  services: WebhookServices,
): Promise<WebhookEntry & { secret: string }> {
  const checked = await checkWebhookUrl(request.url, services.addresses, services.resolve);
  const now = new Date((services.now ?? Date.now)()).toISOString();
  const secret = newWebhookSecret();
  const id = newId();
  const webhook: Webhook = {
    id,
    url: checked.toString(),
    events: [...new Set(request.events)],
    ...(request.description !== undefined ? { description: request.description } : {}),
    enabled: request.enabled ?? true,
    created_at: now,
    updated_at: now,
    secrets: [
      {
        wrapped: await services.secrets.wrap(secret, secretContext(tenant.instance.id, id)),
        bound: true,
      },
    ],
  };
  await services.store.create(tenant.instance.id, webhook);
  return { ...webhookEntry(webhook), secret };
}

export async function getWebhooks(
  request: WebhooksGetRequest,
  tenant: Tenant,
  services: WebhookServices,
): Promise<{ webhooks: WebhookEntry[] }> {
  if (request.webhook_id !== undefined) {
    const webhook = await services.store.get(tenant.instance.id, request.webhook_id);
    if (!webhook) throw webhookNotFound(request.webhook_id);
    return { webhooks: [webhookEntry(webhook)] };
  }
  const webhooks = await services.store.list(tenant.instance.id);
  return { webhooks: webhooks.map(webhookEntry) };
}

export async function updateWebhook(
  request: WebhookUpdateRequest,
  tenant: Tenant,
  services: WebhookServices,
): Promise<WebhookEntry> {
  const previous = await services.store.get(tenant.instance.id, request.webhook_id);
  if (!previous) throw webhookNotFound(request.webhook_id);
  const checked =
    request.url === undefined
      ? undefined
      : await checkWebhookUrl(request.url, services.addresses, services.resolve);
  const { description: _description, disabled_reason: _reason, health, ...rest } = previous;
  const description =
    request.description === undefined ? previous.description : (request.description ?? undefined);
  const enabled = request.enabled ?? previous.enabled;
  // A new address, or a webhook enabled again by its owner, starts with a clean record.
  const fresh = (checked && checked.toString() !== previous.url) || (enabled && !previous.enabled);
  const webhook: Webhook = {
    ...rest,
    ...(health && !fresh ? { health } : {}),
    ...(checked ? { url: checked.toString() } : {}),
    ...(request.events ? { events: [...new Set(request.events)] } : {}),
    ...(description !== undefined ? { description } : {}),
    enabled,
    // Enabled again by its owner: the reason it was disabled is history.
    ...(!enabled && previous.disabled_reason !== undefined
      ? { disabled_reason: previous.disabled_reason }
      : {}),
    updated_at: new Date((services.now ?? Date.now)()).toISOString(),
  };
  await services.store.update(tenant.instance.id, webhook, previous);
  return webhookEntry(webhook);
}

export async function deleteWebhook(
  request: WebhookIdRequest,
  tenant: Tenant,
  services: WebhookServices,
): Promise<{ webhook_id: string; deleted: true }> {
  if (!(await services.store.remove(tenant.instance.id, request.webhook_id))) {
    throw webhookNotFound(request.webhook_id);
  }
  return { webhook_id: request.webhook_id, deleted: true };
}

/**
 * A new secret signs from now on; the current one keeps signing beside it for
 * `SECRET_GRACE_MS`, so that receivers can switch without missing a delivery. Secrets
 * rotated out earlier (and expired ones) are dropped.
 */
export async function rotateWebhookSecret(
  request: WebhookIdRequest,
  tenant: Tenant,
  services: WebhookServices,
): Promise<{ id: string; secret: string; previous_secret_expires_at: string }> {
  const previous = await services.store.get(tenant.instance.id, request.webhook_id);
  if (!previous) throw webhookNotFound(request.webhook_id);
  const now = (services.now ?? Date.now)();
  const current = previous.secrets.find((secret) => secret.expires_at === undefined);
  if (!current) throw new ValidationError('webhook_id: the webhook has no current secret');
  const expiresAt = new Date(now + SECRET_GRACE_MS).toISOString();
  const secret = newWebhookSecret();
  await services.store.update(
    tenant.instance.id,
    {
      ...previous,
      secrets: [
        {
          wrapped: await services.secrets.wrap(
            secret,
            secretContext(tenant.instance.id, previous.id),
          ),
          bound: true,
        },
        { ...current, expires_at: expiresAt },
      ],
      updated_at: new Date(now).toISOString(),
    },
    previous,
  );
  return { id: previous.id, secret, previous_secret_expires_at: expiresAt };
}

/** The secrets that sign at `now`: the current one, and a rotated-out one in its grace. */
export function signingSecrets(webhook: Webhook, now: number): WebhookSecret[] {
  return webhook.secrets.filter(
    (secret) => secret.expires_at === undefined || Date.parse(secret.expires_at) > now,
  );
}

/**
 * Wraps again, bound to their webhook, the secrets of an instance's webhooks wrapped before
 * secrets were bound (`admin apply` runs it). Each webhook's change is conditioned on the
 * webhook as read: one changed meanwhile is left for the next run. Answers how many secrets
 * were bound.
 */
export async function bindWebhookSecrets(
  instanceId: string,
  store: Pick<WebhookStore, 'list' | 'update'>,
  wrapper: KeyWrapper,
): Promise<number> {
  let bound = 0;
  for (const webhook of await store.list(instanceId)) {
    const unbound = webhook.secrets.filter((secret) => !secret.bound).length;
    if (unbound === 0) continue;
    const secrets = await Promise.all(
      webhook.secrets.map(async (secret) =>
        secret.bound
          ? secret
          : {
              ...secret,
              wrapped: await wrapper.wrap(
                await wrapper.unwrap(secret.wrapped),
                secretContext(instanceId, webhook.id),
              ),
              bound: true,
            },
      ),
    );
    try {
      await store.update(instanceId, { ...webhook, secrets }, webhook);
      bound += unbound;
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
    }
  }
  return bound;
}
