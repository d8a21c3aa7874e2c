import {
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type {
  ActivityStore,
  ActivityToWrite,
  RecordedKey,
} from '../domain/activities/record-activities.js';
import { batchGet, batchWrite, cancellationCodes, ExpressionBuilder } from './dynamo-helpers.js';
import { personKey } from './people-store.js';

/**
 * Activities (see docs/data-model.md): `<inst>#P#<person>` / `<created_at>#<id>` items, and
 * `<inst>#KEY#<key>` / `KEY` items that make a client's idempotency key record once.
 * Activities without a key are written 25 to a batch; keyed ones each in a transaction
 * with their key, so a retry can never record twice.
 */
const KeyItem = z.object({
  activity_id: z.string(),
  person_id: z.string(),
  person_status: z.enum(['created', 'merged', 'skipped', 'by-id', 'invalid']),
});

const keyOf = (instanceId: string, key: string) => ({ pk: `${instanceId}#KEY#${key}`, sk: 'KEY' });

export class DynamoActivityStore implements ActivityStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { activities: string; people: string },
  ) {}

  async findKeys(instanceId: string, keys: string[]) {
    const items = await batchGet(
      this.db,
      this.tables.activities,
      keys.map((key) => keyOf(instanceId, key)),
      true,
    );
    const found = new Map<string, RecordedKey>();
    for (const item of items) found.set(String(item.key), KeyItem.parse(item));
    return found;
  }

  async write(instanceId: string, activities: ActivityToWrite[]) {
    const item = (activity: ActivityToWrite) => ({
      pk: `${instanceId}#P#${activity.person_id}`,
      sk: `${activity.created_at}#${activity.id}`,
      ...activity,
    });
    await batchWrite(
      this.db,
      this.tables.activities,
      activities.filter((a) => a.key === undefined).map((a) => ({ PutRequest: { Item: item(a) } })),
    );
    const taken = new Map<string, RecordedKey>();
    const keyed = activities.filter((a) => a.key !== undefined);
    const queue = [...keyed];
    await Promise.all(
      Array.from({ length: Math.min(16, queue.length) }, async () => {
        for (let activity = queue.shift(); activity; activity = queue.shift()) {
          const key = activity.key ?? '';
          try {
            await this.db.send(
              new TransactWriteCommand({
                TransactItems: [
                  { Put: { TableName: this.tables.activities, Item: item(activity) } },
                  {
                    Put: {
                      TableName: this.tables.activities,
                      Item: {
                        ...keyOf(instanceId, key),
                        key,
                        activity_id: activity.id,
                        person_id: activity.person_id,
                        person_status: activity.person_status,
                      },
                      ConditionExpression: 'attribute_not_exists(pk)',
                    },
                  },
                ],
              }),
            );
          } catch (error) {
            if (!cancellationCodes(error)?.includes('ConditionalCheckFailed')) throw error;
            const first = (await this.findKeys(instanceId, [key])).get(key);
            if (first) taken.set(key, first);
          }
        }
      }),
    );
    return taken;
  }

  async touch(instanceId: string, personId: string, at: string, place?: string) {
    const x = new ExpressionBuilder();
    const field = (id: string) => `${x.name('fields')}.${x.name(id)}`;
    const set = [`${field('tme::last-seen')} = ${x.value(at)}`];
    if (place) set.push(`${field('geo::last-seen')} = ${x.value({ name: place })}`);
    const newer = x.value(at);
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tables.people,
          Key: personKey(instanceId, personId),
          UpdateExpression: `SET ${set.join(', ')}`,
          ConditionExpression: `attribute_exists(pk) AND (attribute_not_exists(${field('tme::last-seen')}) OR ${field('tme::last-seen')} < ${newer})`,
          ExpressionAttributeNames: x.names,
          ExpressionAttributeValues: x.values,
        }),
      );
    } catch (error) {
      // A later touch is already recorded: last seen never moves back.
      if (!(error instanceof Error && error.name === 'ConditionalCheckFailedException'))
        throw error;
    }
  }
}
