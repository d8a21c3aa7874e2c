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

const NONE: ReadonlySet<string> = new Set();

/**
 * The image without the values of fields the instance deleted (they stay on records, unread:
 * docs/api.md, "Deleting a custom field").
 */
function withoutHidden(
  image: Record<string, unknown> | undefined,
  hidden: ReadonlySet<string>,
): Record<string, unknown> | undefined {
  if (!image || hidden.size === 0) return image;
  const fields = Object.fromEntries(
    Object.entries(record(image.fields)).filter(([id]) => !hidden.has(id)),
  );
  return { ...image, fields };
}

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
export function personEvents(
  personId: string,
  change: ItemChange,
  hidden: ReadonlySet<string> = NONE,
): WebhookEvent[] {
  const event = (type: string, data: Record<string, unknown>): WebhookEvent => ({
    id: eventId(personId, change.sequenceNumber, type),
    type,
    timestamp: timestampOf(change),
    data,
  });
  const before = withoutHidden(change.oldImage, hidden);
  const after = withoutHidden(change.newImage, hidden);
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
export function organizationEvents(
  organizationId: string,
  change: ItemChange,
  hidden: ReadonlySet<string> = NONE,
): WebhookEvent[] {
  const event = (type: string, data: Record<string, unknown>): WebhookEvent => ({
    id: eventId(organizationId, change.sequenceNumber, type),
    type,
    timestamp: timestampOf(change),
    data,
  });
  const before = withoutHidden(change.oldImage, hidden);
  const after = withoutHidden(change.newImage, hidden);
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

/**
 * The event of a new activity item (`<inst>#P#<person>` / `<time>#<id>`): `activity.created`
 * with the activity as recorded (`{activity_id, person_id, field_id, attributes,
 * created_at, source}`, and its value or location when it has one). Other new items of the
 * table (idempotency keys) make none.
 */
export function activityEvents(change: ItemChange): WebhookEvent[] {
  const after = change.newImage;
  if (change.eventName !== 'INSERT' || !after || typeof after.field_id !== 'string') return [];
  const id = String(after.id);
  return [
    {
      id: eventId(id, change.sequenceNumber, 'activity.created'),
      type: 'activity.created',
      timestamp: timestampOf(change),
      data: {
        activity_id: id,
        person_id: after.person_id ?? null,
        field_id: after.field_id,
        attributes: record(after.attr),
        created_at: after.created_at ?? null,
        source: after.source ?? null,
        ...(typeof after.value === 'number' ? { value: after.value } : {}),
        ...(after.location !== undefined ? { location: after.location } : {}),
      },
    },
  ];
}

/** The states of an email that make events, by the event they make. */
const EMAIL_EVENTS: Readonly<Record<string, string>> = {
  sent: 'email.sent',
  bounced: 'email.bounced',
  complained: 'email.complained',
};

/**
 * The events of a change of an email item (`<inst>#M#<message>` / `M`): entering the state
 * `sent`, `bounced` or `complained` makes `email.sent`, `email.bounced` or
 * `email.complained`, with the email as `transactional/get` shows it in short.
 */
export function emailEvents(change: ItemChange): WebhookEvent[] {
  const after = change.newImage;
  const status = typeof after?.status === 'string' ? after.status : undefined;
  const type = status === undefined ? undefined : EMAIL_EVENTS[status];
  if (!after || !type || change.oldImage?.status === status) return [];
  const messageId = String(after.message_id);
  const events = Array.isArray(after.events) ? (after.events as Record<string, unknown>[]) : [];
  const last = [...events].reverse().find((event) => event.type === status);
  return [
    {
      id: eventId(messageId, change.sequenceNumber, type),
      type,
      timestamp: timestampOf(change),
      data: {
        message_id: messageId,
        person_id: after.person_id ?? null,
        email_name: after.email_name ?? null,
        to: after.to ?? null,
        status,
        at: last?.at ?? after.updated_at ?? null,
        ...(typeof last?.detail === 'string' ? { detail: last.detail } : {}),
      },
    },
  ];
}

/**
 * The events of a change of a membership (`<inst>#P#<person>` / `A#<audience>`): becoming a
 * member makes `audience.entered`, ceasing to be one `audience.exited`
 * (`{audience_id, person_id, at}`). A membership removed with its person (erasure) or its
 * audience (deletion) makes none: `person.deleted` says the one, the audience's owner did
 * the other.
 */
export function audienceEvents(personId: string, change: ItemChange): WebhookEvent[] {
  const after = change.newImage;
  if (!after) return [];
  const was = change.oldImage?.member === true;
  const is = after.member === true;
  if (was === is) return [];
  const audienceId = String(after.audience_id);
  const type = is ? 'audience.entered' : 'audience.exited';
  return [
    {
      id: eventId(`${audienceId}#${personId}`, change.sequenceNumber, type),
      type,
      timestamp: timestampOf(change),
      data: {
        audience_id: audienceId,
        person_id: personId,
        at: (is ? after.member_from : after.left_at) ?? null,
      },
    },
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
