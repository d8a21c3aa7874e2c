import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Item } from '../shared/adapters/dynamo-helpers.js';
import type { FieldValue } from '../shared/domain/fields/field-values.js';
import { normalizeKey } from '../shared/domain/merge/field-changes.js';
import { REGIONS } from '../shared/domain/regions.js';
import { QUEUES, queueName, tableName, type TableName } from '../shared/resources.js';

/**
 * The soak's consistency check (`npm run soak`, bench/soak.ts): reads the soak stack's tables
 * whole (consistent scans, never the indexes, so nothing depends on what the code under test
 * maintains) and the queues' depths, and writes nothing. Each finding names its items.
 */
export const FINAL_EMAIL_STATES = ['sent', 'failed', 'bounced', 'complained', 'suppressed'];

/** What the soak sent, for the check to find again. */
export interface Sent {
  asyncRequestIds: Set<string>;
  messageIds: Map<string, string>;
}

export interface CheckReport {
  people: number;
  subscribers: number;
  claims: number;
  organizations: number;
  organizationClaims: number;
  memberships: number;
  activities: number;
  activityKeys: number;
  asyncRequests: Record<string, number>;
  /** Failed as a 400 when applied: every record refused (a key value taken meanwhile). */
  asyncRefused: number;
  emails: Record<string, number>;
  suppressed: number;
  queueDepths: Record<string, number>;
  dlqDepths: Record<string, number>;
  problems: string[];
}

function scanInstance(
  db: DynamoDBDocumentClient,
  table: TableName,
  instanceId: string,
): Promise<Item[]> {
  return scanPrefix(db, table, `${instanceId}#`);
}

/** A table's items whose partition key starts with `prefix` (a consistent scan). */
export async function scanPrefix(
  db: DynamoDBDocumentClient,
  table: TableName,
  prefix: string,
): Promise<Item[]> {
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(
      new ScanCommand({
        TableName: tableName('default', table),
        ConsistentRead: true,
        FilterExpression: 'begins_with(pk, :prefix)',
        ExpressionAttributeValues: { ':prefix': prefix },
        ExclusiveStartKey: start,
      }),
    );
    items.push(...((page.Items ?? []) as Item[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

const sum = (items: Item[], attribute: string) =>
  items.reduce((total, item) => total + Number(item[attribute] ?? 0), 0);

const fieldsOf = (item: Item) => (item.fields ?? {}) as Record<string, FieldValue>;

/**
 * Claims against holders, both ways: every claim's owner exists and holds the value, and
 * every key value a record holds is claimed by that record.
 */
function checkClaims(
  kind: 'person' | 'organization',
  records: Map<string, Item>,
  claims: Item[],
  keyFields: readonly string[],
  instanceId: string,
  problems: string[],
): void {
  const byPk = new Map(claims.map((claim) => [String(claim.pk), claim]));
  for (const claim of claims) {
    const field = String(claim.field);
    const owner = records.get(String(claim.owner_id));
    if (!owner) {
      problems.push(`claim ${String(claim.pk)}: its ${kind} ${String(claim.owner_id)} is missing`);
      continue;
    }
    const held = fieldsOf(owner)[field];
    const normalized = held === undefined ? undefined : normalizeKey(field, held);
    if (normalized !== String(claim.value)) {
      problems.push(
        `claim ${String(claim.pk)}: ${kind} ${String(claim.owner_id)} holds ${JSON.stringify(held)}, not the claimed value`,
      );
    }
  }
  for (const [id, record] of records) {
    for (const field of keyFields) {
      const held = fieldsOf(record)[field];
      if (held === undefined) continue;
      const normalized = normalizeKey(field, held);
      if (normalized === undefined || normalized === '') continue;
      const claim = byPk.get(`${instanceId}#K#${field}#${normalized}`);
      if (!claim) problems.push(`${kind} ${id}: ${field} ${JSON.stringify(held)} has no claim`);
      else if (claim.owner_id !== id) {
        problems.push(
          `${kind} ${id}: ${field} ${JSON.stringify(held)} is claimed by ${String(claim.owner_id)}`,
        );
      }
    }
  }
}

/**
 * A queued request the worker refused as a whole, as the synchronous call would have (a 400:
 * every record invalid, say its member number went to another person after it was
 * accepted), recorded `failed` with its reason and not retried (docs/api.md). The soak's
 * traffic makes such races on purpose; any other failure (five attempts, the dead-letter
 * queue) is an inconsistency.
 */
function refusedAsSent(request: Item): boolean {
  const failure = request.failure as { code?: unknown; error?: unknown } | undefined;
  return failure?.code === 400 && typeof failure.error === 'string';
}

async function queueDepth(sqs: SQSClient, name: string): Promise<number> {
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages ?? 0) +
    Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

/** Messages in every queue and every dead-letter queue of every region. */
export async function queueDepths(sqs: SQSClient) {
  const queues: Record<string, number> = {};
  const dlqs: Record<string, number> = {};
  for (const region of REGIONS) {
    for (const queue of QUEUES) {
      queues[queueName(region, queue.name)] = await queueDepth(sqs, queueName(region, queue.name));
      dlqs[queueName(region, queue.name, true)] = await queueDepth(
        sqs,
        queueName(region, queue.name, true),
      );
    }
  }
  return { queues, dlqs };
}

const count = (values: string[]) => {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
};

/** Whether the queues have drained: no async request nor email left to move. */
export async function pending(
  db: DynamoDBDocumentClient,
  sqs: SQSClient,
  instanceId: string,
): Promise<string[]> {
  const [requests, emails, depths] = await Promise.all([
    scanInstance(db, 'requests', instanceId),
    scanInstance(db, 'emails', instanceId),
    queueDepths(sqs),
  ]);
  const open = requests.filter(
    (item) => item.sk === 'REQ' && item.status !== 'done' && item.status !== 'failed',
  );
  const unsent = emails.filter(
    (item) => item.sk === 'M' && !FINAL_EMAIL_STATES.includes(String(item.status)),
  );
  const busy = Object.entries(depths.queues).filter(([, depth]) => depth > 0);
  return [
    ...(open.length ? [`${open.length} async requests not finished`] : []),
    ...(unsent.length ? [`${unsent.length} emails not in a final state`] : []),
    ...busy.map(([queue, depth]) => `${queue}: ${depth} messages`),
  ];
}

export async function checkConsistency(
  db: DynamoDBDocumentClient,
  sqs: SQSClient,
  instanceId: string,
  sent: Sent,
): Promise<CheckReport> {
  const problems: string[] = [];
  const [config, peopleItems, organizationItems, activityItems, requestItems, emailItems] =
    await Promise.all([
      scanInstance(db, 'config', instanceId),
      scanInstance(db, 'people', instanceId),
      scanInstance(db, 'organizations', instanceId),
      scanInstance(db, 'activities', instanceId),
      scanInstance(db, 'requests', instanceId),
      scanInstance(db, 'emails', instanceId),
    ]);

  // People, their counters and claims.
  const schema = config.find((item) => item.sk === 'SCHEMA');
  const uniqueFields = Object.keys(schema?.key_fields ?? {});
  const personKeyFields = ['str::email', 'str::ei', ...uniqueFields];
  const people = new Map(
    peopleItems.filter((item) => item.sk === 'P').map((item) => [String(item.id), item]),
  );
  for (const [id, person] of people) {
    if (person.pk !== `${instanceId}#P#${id}`)
      problems.push(`person ${id}: stored under ${String(person.pk)}`);
  }
  const subscribers = [...people.values()].filter((p) => fieldsOf(p)['bol::p'] === true).length;
  const peopleCounters = peopleItems.filter((item) => item.pk === `${instanceId}#C`);
  const contacts = sum(peopleCounters, 'contacts');
  if (contacts !== people.size) {
    problems.push(`counter contacts says ${contacts}, the table holds ${people.size} people`);
  }
  const countedSubscribers = sum(peopleCounters, 'subscribers');
  if (countedSubscribers !== subscribers) {
    problems.push(`counter subscribers says ${countedSubscribers}, counted ${subscribers}`);
  }
  const personClaims = peopleItems.filter((item) => item.sk === 'K');
  checkClaims('person', people, personClaims, personKeyFields, instanceId, problems);

  // Organizations, their counter, claims and member counts.
  const organizations = new Map(
    organizationItems.filter((item) => item.sk === 'O').map((item) => [String(item.id), item]),
  );
  const organizationCounter = sum(
    organizationItems.filter((item) => item.pk === `${instanceId}#C`),
    'organizations',
  );
  if (organizationCounter !== organizations.size) {
    problems.push(
      `counter organizations says ${organizationCounter}, the table holds ${organizations.size}`,
    );
  }
  const organizationClaims = organizationItems.filter((item) => item.sk === 'K');
  checkClaims(
    'organization',
    organizations,
    organizationClaims,
    ['str:o:name', 'str:o:website'],
    instanceId,
    problems,
  );
  const members = new Map<string, number>();
  for (const [id, person] of people) {
    if (typeof person.organization_id !== 'string') continue;
    if (!organizations.has(person.organization_id)) {
      problems.push(`person ${id}: member of missing organization ${person.organization_id}`);
    }
    members.set(person.organization_id, (members.get(person.organization_id) ?? 0) + 1);
  }
  for (const [id, organization] of organizations) {
    const counted = members.get(id) ?? 0;
    const stored = Number(organization.members ?? 0);
    if (counted !== stored) {
      problems.push(`organization ${id}: members says ${stored}, ${counted} people link to it`);
    }
  }

  // Activity keys: every claim finished, pointing at the activity it recorded.
  const keys = activityItems.filter((item) => item.sk === 'KEY');
  const activities = activityItems.filter((item) => item.sk !== 'KEY');
  const activityIds = new Set(activities.map((item) => `${String(item.pk)}/${String(item.id)}`));
  for (const key of keys) {
    if (key.status !== undefined && key.status !== 'done') {
      problems.push(`activity key ${String(key.key)}: left ${JSON.stringify(key.status)}`);
    } else if (
      key.person_status !== 'invalid' &&
      !activityIds.has(`${instanceId}#P#${String(key.person_id)}/${String(key.activity_id)}`)
    ) {
      problems.push(
        `activity key ${String(key.key)}: activity ${String(key.activity_id)} of ${String(key.person_id)} is missing`,
      );
    }
  }
  for (const activity of activities) {
    const personId = String(activity.pk).slice(`${instanceId}#P#`.length);
    if (!people.has(personId)) {
      problems.push(`activity ${String(activity.id)}: its person ${personId} is missing`);
    }
  }

  // Asynchronous requests: every accepted one found and done.
  const requests = new Map(
    requestItems
      .filter((item) => item.sk === 'REQ')
      .map((item) => [String(item.pk).slice(`${instanceId}#REQ#`.length), item]),
  );
  let refused = 0;
  for (const id of sent.asyncRequestIds) {
    const request = requests.get(id);
    if (!request) problems.push(`async request ${id}: accepted, but no record of it`);
    else if (request.status === 'failed' && refusedAsSent(request)) refused += 1;
    else if (request.status !== 'done') {
      problems.push(
        `async request ${id}: ${String(request.status)} ${JSON.stringify(request.failure ?? '')}`,
      );
    }
  }

  // Emails: every one the API answered with a message ID, in a final state; the simulator's
  // bounces and complaints applied.
  const emails = new Map(
    emailItems
      .filter((item) => item.sk === 'M')
      .map((item) => [String(item.pk).slice(`${instanceId}#M#`.length), item]),
  );
  for (const [id, email] of emails) {
    const status = String(email.status);
    if (!FINAL_EMAIL_STATES.includes(status)) problems.push(`email ${id}: left ${status}`);
  }
  for (const [id, to] of sent.messageIds) {
    const email = emails.get(id);
    if (!email) {
      problems.push(`email ${id} (to ${to}): answered with a message ID, but no record of it`);
      continue;
    }
    const status = String(email.status);
    const expected = to.startsWith('bounce+')
      ? ['bounced', 'suppressed']
      : to.startsWith('complaint+')
        ? ['complained', 'suppressed']
        : ['sent', 'suppressed'];
    if (!expected.includes(status)) {
      const why = typeof email.error === 'string' ? ` (${email.error})` : '';
      problems.push(`email ${id} (to ${to}): ${status}${why}, expected ${expected.join(' or ')}`);
    }
  }

  const depths = await queueDepths(sqs);
  for (const [queue, depth] of Object.entries(depths.dlqs)) {
    if (depth > 0) problems.push(`dead-letter queue ${queue}: ${depth} messages`);
  }
  for (const [queue, depth] of Object.entries(depths.queues)) {
    if (depth > 0) problems.push(`queue ${queue}: ${depth} messages left`);
  }

  return {
    people: people.size,
    subscribers,
    claims: personClaims.length,
    organizations: organizations.size,
    organizationClaims: organizationClaims.length,
    memberships: [...members.values()].reduce((a, b) => a + b, 0),
    activities: activities.length,
    activityKeys: keys.length,
    asyncRefused: refused,
    asyncRequests: count([...requests.values()].map((item) => String(item.status))),
    emails: count([...emails.values()].map((item) => String(item.status))),
    suppressed: emailItems.filter((item) => item.sk === 'SUP').length,
    queueDepths: depths.queues,
    dlqDepths: depths.dlqs,
    problems,
  };
}
