import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LastSeenStore } from '../domain/activities/last-seen.js';
import { conditionally, ExpressionBuilder } from './dynamo-helpers.js';
import { personKey } from './people-store.js';

/** Last seen on the person item (`fields.tme::last-seen`, `fields.geo::last-seen`). */
export class DynamoLastSeenStore implements LastSeenStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { people: string },
  ) {}

  touch(instanceId: string, personId: string, at: string, place?: string): Promise<boolean> {
    const x = new ExpressionBuilder();
    const field = (id: string) => `${x.name('fields')}.${x.name(id)}`;
    const set = [`${field('tme::last-seen')} = ${x.value(at)}`];
    if (place) set.push(`${field('geo::last-seen')} = ${x.value({ name: place })}`);
    const newer = x.value(at);
    // One conditional update, not read-then-write: the stored time decides, so a late or
    // repeated activity of the stream never moves last seen back. Never on an archived
    // person (erasure archives first), nor on a deleted one.
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.people,
        Key: personKey(instanceId, personId),
        // The version moves too, so a whole-state write planned before this one fails.
        UpdateExpression: `SET ${set.join(', ')} ADD ${x.name('version')} ${x.value(1)}`,
        ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(${x.name('archived_at')}) AND (attribute_not_exists(${field('tme::last-seen')}) OR ${field('tme::last-seen')} < ${newer})`,
        ExpressionAttributeNames: x.names,
        ExpressionAttributeValues: x.values,
      }),
    );
  }
}
