import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { ConflictError, ValidationError } from '../domain/errors.js';
import {
  MAX_WEBHOOKS,
  type Webhook,
  type WebhookHealth,
  type WebhookStore,
} from '../domain/webhooks/webhook.js';
import { cancellationCodes, conditionally, type Item } from './dynamo-helpers.js';

/**
 * Webhooks, in the config table in a partition of their own (`INST#<id>#WH`, which
 * `admin apply` does not rewrite; docs/data-model.md):
 * - `W#<webhook>`: the webhook (`webhook`), its secrets wrapped;
 * - `COUNT`: how many the instance has (at most `MAX_WEBHOOKS`).
 * A create or a delete is one transaction of the two.
 */
const webhooksPk = (instanceId: string) => `INST#${instanceId}#WH`;
const webhookSk = (webhookId: string) => `W#${webhookId}`;
const webhookKey = (instanceId: string, webhookId: string) => ({
  pk: webhooksPk(instanceId),
  sk: webhookSk(webhookId),
});

const StoredWebhook = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().optional(),
  enabled: z.boolean(),
  disabled_reason: z.string().optional(),
  created_at: z.string(),
  updated_at: z.string(),
  secrets: z
    .array(
      z.object({
        wrapped: z.string(),
        bound: z.boolean().optional(),
        expires_at: z.string().optional(),
      }),
    )
    .min(1),
});

/** The endpoint's record while it fails, beside the webhook (deliveries write it alone). */
const StoredHealth = z.object({
  failing_since: z.string(),
  failures: z.number(),
  paused_until: z.number(),
  last_failure: z.string().optional(),
});
const HEALTH_ATTRIBUTES = ['failing_since', 'failures', 'paused_until', 'last_failure'] as const;

function webhookOf(item: Item): Webhook {
  const { description, disabled_reason, secrets, ...rest } = StoredWebhook.parse(item.webhook);
  const health = item.failing_since === undefined ? undefined : StoredHealth.parse(item);
  const slowUntil = typeof item.slow_until === 'number' ? item.slow_until : undefined;
  return {
    ...rest,
    ...(description !== undefined ? { description } : {}),
    ...(disabled_reason !== undefined ? { disabled_reason } : {}),
    secrets: secrets.map(({ wrapped, bound, expires_at }) => ({
      wrapped,
      ...(bound ? { bound } : {}),
      ...(expires_at !== undefined ? { expires_at } : {}),
    })),
    ...(health
      ? {
          health: {
            failing_since: health.failing_since,
            failures: health.failures,
            paused_until: health.paused_until,
            ...(health.last_failure !== undefined ? { last_failure: health.last_failure } : {}),
          },
        }
      : {}),
    ...(slowUntil !== undefined ? { slow_until: slowUntil } : {}),
  };
}

/** The webhook as stored in its `webhook` attribute (its health and pace are kept beside it). */
function storedWebhook(webhook: Webhook) {
  const { health: _health, slow_until: _slow, ...stored } = webhook;
  return stored;
}

export class DynamoWebhookStore implements WebhookStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly configTable: string,
  ) {}

  async list(instanceId: string): Promise<Webhook[]> {
    // At most MAX_WEBHOOKS small items: one page.
    const { Items } = await this.db.send(
      new QueryCommand({
        TableName: this.configTable,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :w)',
        ExpressionAttributeValues: { ':pk': webhooksPk(instanceId), ':w': 'W#' },
        ConsistentRead: true,
      }),
    );
    return (Items ?? []).map(webhookOf).sort((a, b) => a.id.localeCompare(b.id));
  }

  async get(instanceId: string, webhookId: string): Promise<Webhook | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.configTable,
        Key: webhookKey(instanceId, webhookId),
        ConsistentRead: true,
      }),
    );
    return Item ? webhookOf(Item) : undefined;
  }

  async create(instanceId: string, webhook: Webhook): Promise<void> {
    const pk = webhooksPk(instanceId);
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.configTable,
                Item: { pk, sk: webhookSk(webhook.id), webhook: storedWebhook(webhook) },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Update: {
                TableName: this.configTable,
                Key: { pk, sk: 'COUNT' },
                UpdateExpression: 'ADD webhooks :one',
                ConditionExpression: 'attribute_not_exists(webhooks) OR webhooks < :max',
                ExpressionAttributeValues: { ':one': 1, ':max': MAX_WEBHOOKS },
              },
            },
          ],
        }),
      );
    } catch (error) {
      if (cancellationCodes(error)?.[1] === 'ConditionalCheckFailed') {
        throw new ValidationError(`url: the instance has ${MAX_WEBHOOKS} webhooks already`, [
          { field: 'url', error: `at most ${MAX_WEBHOOKS} webhooks per instance` },
        ]);
      }
      throw error;
    }
  }

  async update(instanceId: string, webhook: Webhook, previous: Webhook): Promise<void> {
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.configTable,
                Key: { pk: webhooksPk(instanceId), sk: webhookSk(webhook.id) },
                // The endpoint's record stays, unless the change starts it afresh.
                UpdateExpression:
                  previous.health && !webhook.health
                    ? `SET webhook = :webhook REMOVE ${HEALTH_ATTRIBUTES.join(', ')}`
                    : 'SET webhook = :webhook',
                // A change made from a read another change has overtaken is refused.
                ConditionExpression: 'webhook.updated_at = :seen',
                ExpressionAttributeValues: {
                  ':webhook': storedWebhook(webhook),
                  ':seen': previous.updated_at,
                },
              },
            },
          ],
        }),
      );
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') {
        throw new ConflictError(
          'webhook_id: the webhook was changed or deleted by another request meanwhile; read it and try again',
          [{ field: 'webhook_id', error: 'changed meanwhile' }],
        );
      }
      throw error;
    }
  }

  async recordFailure(
    instanceId: string,
    webhookId: string,
    seen: WebhookHealth | undefined,
    next: WebhookHealth,
  ): Promise<boolean> {
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.configTable,
        Key: webhookKey(instanceId, webhookId),
        UpdateExpression:
          'SET failing_since = :since, failures = :failures, paused_until = :until, last_failure = :why',
        // Another attempt recorded a failure meanwhile: its record stands.
        ConditionExpression: seen
          ? 'failures = :seen AND failing_since = :seenSince'
          : 'attribute_exists(pk) AND attribute_not_exists(failures)',
        ExpressionAttributeValues: {
          ':since': next.failing_since,
          ':failures': next.failures,
          ':until': next.paused_until,
          ':why': next.last_failure ?? '',
          ...(seen ? { ':seen': seen.failures, ':seenSince': seen.failing_since } : {}),
        },
      }),
    );
  }

  async recordSuccess(instanceId: string, webhookId: string): Promise<void> {
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.configTable,
        Key: webhookKey(instanceId, webhookId),
        UpdateExpression: `REMOVE ${HEALTH_ATTRIBUTES.join(', ')}`,
        ConditionExpression: 'attribute_exists(failing_since)',
      }),
    );
  }

  async markSlow(instanceId: string, webhookId: string, until: number): Promise<void> {
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.configTable,
        Key: webhookKey(instanceId, webhookId),
        UpdateExpression: 'SET slow_until = :until',
        // Never for a webhook deleted meanwhile, never earlier than another attempt set it.
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(slow_until) OR slow_until < :until)',
        ExpressionAttributeValues: { ':until': until },
      }),
    );
  }

  async clearSlow(instanceId: string, webhookId: string): Promise<void> {
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.configTable,
        Key: webhookKey(instanceId, webhookId),
        UpdateExpression: 'REMOVE slow_until',
        ConditionExpression: 'attribute_exists(slow_until)',
      }),
    );
  }

  async takeProbe(
    instanceId: string,
    webhookId: string,
    seen: number,
    until: number,
  ): Promise<boolean> {
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.configTable,
        Key: webhookKey(instanceId, webhookId),
        UpdateExpression: 'SET paused_until = :until',
        ConditionExpression: 'paused_until = :seen',
        ExpressionAttributeValues: { ':until': until, ':seen': seen },
      }),
    );
  }

  async disable(
    instanceId: string,
    webhookId: string,
    seen: { health: WebhookHealth; updated_at: string },
    reason: string,
    at: string,
  ): Promise<boolean> {
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.configTable,
        Key: webhookKey(instanceId, webhookId),
        UpdateExpression:
          'SET webhook.enabled = :false, webhook.disabled_reason = :reason, webhook.updated_at = :at',
        // Still failing as the attempt recorded it, and not changed by its owner since.
        ConditionExpression:
          'webhook.enabled = :true AND webhook.updated_at = :updated AND failures = :failures AND failing_since = :since',
        ExpressionAttributeValues: {
          ':false': false,
          ':true': true,
          ':reason': reason,
          ':at': at,
          ':updated': seen.updated_at,
          ':failures': seen.health.failures,
          ':since': seen.health.failing_since,
        },
      }),
    );
  }

  async remove(instanceId: string, webhookId: string): Promise<boolean> {
    const pk = webhooksPk(instanceId);
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.configTable,
                Key: { pk, sk: webhookSk(webhookId) },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            {
              Update: {
                TableName: this.configTable,
                Key: { pk, sk: 'COUNT' },
                UpdateExpression: 'ADD webhooks :minus',
                ExpressionAttributeValues: { ':minus': -1 },
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }
}
