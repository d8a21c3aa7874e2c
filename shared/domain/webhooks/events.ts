import { isDeepStrictEqual } from 'node:util';
import { eventId, type DeliveryMessage, type WebhookEvent } from './delivery.js';
import { subscribesTo, type Webhook } from './webhook.js';

/**
 * The events a change of the people or organizations table makes (docs/webhooks.md,
 * "Events"). A change is what the table's stream says of one item: its images before and
 * after. The event ID
 * derives from the change's sequence number, so a change the stream delivers twice makes the
 * same events, with the same IDs (receivers deduplicate on `webhook-id`).
 */
export interface ItemChange {
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  newImage?: Record<string, unknown>;
  oldImage?: Record<string, unknown>;
  sequenceNumber: string;
  /** When DynamoDB wrote it (epoch ms). */
  at: number;
}

/** The tags field, as the API names it. */
const TAGS_FIELD = 'u4s::t';

const record = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

const tagsOf = (image: Record<string, unknown>) => Object.keys(record(image.tags)).sort();

/** A person as events show it: ID, fields (by field ID, tags among them), times. */
function personData(personId: string, image: Record<string, unknown>) {
  return {
    person_id: personId,
    fields: { ...record(image.fields), [TAGS_FIELD]: tagsOf(image) },
    ...(typeof image.organization_id === 'string'
      ? { organization_id: image.organization_id }
      : {}),
    created_at: image.created_at ?? null,
    updated_at: image.updated_at ?? null,
    ...(typeof image.archived_at === 'string' ? { archived_at: image.archived_at } : {}),
  };
}

/** The fields whose values differ, with their new values (`null`: cleared). */
function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  withTags = true,
) {
  const old = record(before.fields);
  const now = record(after.fields);
  const changed: Record<string, unknown> = {};
  for (const field of new Set([...Object.keys(old), ...Object.keys(now)])) {
    if (!isDeepStrictEqual(old[field], now[field])) changed[field] = now[field] ?? null;
  }
  if (!withTags) return changed;
  const tagsBefore = tagsOf(before);
  const tagsAfter = tagsOf(after);
  if (!isDeepStrictEqual(tagsBefore, tagsAfter)) changed[TAGS_FIELD] = tagsAfter;
  return changed;
}

const timestampOf = (change: ItemChange) =>
  new Date(change.at > 0 ? change.at : Date.now()).toISOString();

/** The events of one change of a person item (`<inst>#P#<id>` / `P`). */
export function personEvents(personId: string, change: ItemChange): WebhookEvent[] {
  const event = (type: string, data: Record<string, unknown>): WebhookEvent => ({
    id: eventId(personId, change.sequenceNumber, type),
    type,
    timestamp: timestampOf(change),
    data,
  });
  const before = change.oldImage;
  const after = change.newImage;
  if (!after)
    return before || change.eventName === 'REMOVE'
      ? [event('person.deleted', { person_id: personId })]
      : [];
  if (!before) return [event('person.created', personData(personId, after))];
  const events: WebhookEvent[] = [];
  const changed = changedFields(before, after);
  if (Object.keys(changed).length > 0) {
    events.push(
      event('person.updated', {
        person_id: personId,
        changed_field_ids: Object.keys(changed).sort(),
        changes: changed,
      }),
    );
  }
  const wasArchived = typeof before.archived_at === 'string';
  const isArchived = typeof after.archived_at === 'string';
  if (!wasArchived && isArchived)
    events.push(event('person.archived', personData(personId, after)));
  if (wasArchived && !isArchived)
    events.push(event('person.restored', personData(personId, after)));
  return events;
}

/**
 * The events of one change of an organization item (`<inst>#O#<id>` / `O`):
 * `organization.created` with the organization as stored (`{organization_id, fields,
 * created_at, updated_at}`), `organization.updated` with the changed field IDs and their new
 * values. A change of its members count alone (people linked) makes no event.
 */
export function organizationEvents(organizationId: string, change: ItemChange): WebhookEvent[] {
  const event = (type: string, data: Record<string, unknown>): WebhookEvent => ({
    id: eventId(organizationId, change.sequenceNumber, type),
    type,
    timestamp: timestampOf(change),
    data,
  });
  const before = change.oldImage;
  const after = change.newImage;
  if (!after) return [];
  if (!before) {
    return [
      event('organization.created', {
        organization_id: organizationId,
        fields: record(after.fields),
        created_at: after.created_at ?? null,
        updated_at: after.updated_at ?? null,
      }),
    ];
  }
  const changed = changedFields(before, after, false);
  if (Object.keys(changed).length === 0) return [];
  return [
    event('organization.updated', {
      organization_id: organizationId,
      changed_field_ids: Object.keys(changed).sort(),
      changes: changed,
    }),
  ];
}

/** The deliveries of an instance's events: one per event and enabled webhook subscribed to it. */
export function fanOut(
  instanceId: string,
  events: readonly WebhookEvent[],
  webhooks: readonly Webhook[],
): DeliveryMessage[] {
  return events.flatMap((event) =>
    webhooks
      .filter((webhook) => webhook.enabled && subscribesTo(webhook.events, event.type))
      .map((webhook) => ({ instance_id: instanceId, webhook_id: webhook.id, event })),
  );
}
