import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import {
  ActivitiesNotWrittenError,
  type ActivityStore,
  type ActivityToWrite,
  type KeyState,
} from '../domain/activities/record-activities.js';
import { runBounded } from '../lib/bounded.js';
import { batchGet, batchWrite, cancellationCodes, isConditionFailure } from './dynamo-helpers.js';
import { TransactionBatcher } from './transaction-batcher.js';

/**
 * Activities (see docs/data-model.md): `<inst>#P#<person>` / `<created_at>#<id>` items, and
 * `<inst>#KEY#<key>` / `KEY` items that make a client's activity `key` record once. A key is
 * claimed (`pending`, with the claiming request's token and lease) before anything of its
 * activity happens, and marked `done` with what it recorded in the same transaction that
 * writes the activity. Activities without a key are written 25 to a batch.
 */
const KeyItem = z.object({
  key: z.string(),
  /** Absent on keys recorded before claims existed: those are done. */
  status: z.enum(['pending', 'done']).optional(),
  token: z.string().optional(),
  lease_until: z.number().optional(),
  activity_id: z.string().optional(),
  person_id: z.string().optional(),
  person_status: z.enum(['created', 'merged', 'skipped', 'by-id', 'invalid']).optional(),
});

/** The item of an activity: on its person's timeline, ordered by time. */
export function activityItem(instanceId: string, activity: ActivityToWrite) {
  return {
    pk: `${instanceId}#P#${activity.person_id}`,
    sk: `${activity.created_at}#${activity.id}`,
    ...activity,
  };
}

const keyOf = (instanceId: string, key: string) => ({ pk: `${instanceId}#KEY#${key}`, sk: 'KEY' });

/** How many keys are claimed, and keyed activities written, at once. */
const CONCURRENCY = 16;

/** Batches of a request's activities in flight together (100 activities make 4). */
const WRITES_AT_ONCE = 4;

export class DynamoActivityStore implements ActivityStore {
  /** Keyed activities (each with its key) of one request share transactions. */
  private readonly transactions: TransactionBatcher;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { activities: string; people: string },
    private readonly now: () => number = Date.now,
  ) {
    this.transactions = new TransactionBatcher(db);
  }

  async readKeys(instanceId: string, keys: string[]) {
    const items = await batchGet(
      this.db,
      this.tables.activities,
      keys.map((key) => keyOf(instanceId, key)),
      true,
    );
    const states = new Map<string, KeyState>();
    const now = this.now();
    for (const item of items) {
      const parsed = KeyItem.parse(item);
      if (parsed.status === 'pending') {
        // A claim whose request died (its lease ran out) is free to take.
        if ((parsed.lease_until ?? 0) >= now) states.set(parsed.key, { kind: 'pending' });
        continue;
      }
      if (parsed.activity_id && parsed.person_id && parsed.person_status) {
        states.set(parsed.key, {
          kind: 'done',
          recorded: {
            activity_id: parsed.activity_id,
            person_id: parsed.person_id,
            person_status: parsed.person_status,
          },
        });
      }
    }
    return states;
  }

  async claimKeys(instanceId: string, keys: string[], token: string, leaseUntil: number) {
    const states = new Map<string, KeyState>();
    const held: string[] = [];
    const run = await runBounded(keys, CONCURRENCY, async (key) => {
      try {
        await this.db.send(
          new PutCommand({
            TableName: this.tables.activities,
            Item: {
              ...keyOf(instanceId, key),
              key,
              status: 'pending',
              token,
              lease_until: leaseUntil,
            },
            ConditionExpression:
              'attribute_not_exists(pk) OR (#status = :pending AND lease_until < :now)',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':pending': 'pending', ':now': this.now() },
          }),
        );
        states.set(key, { kind: 'claimed' });
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        held.push(key);
      }
    });
    if (run.failure) {
      const mine = keys.filter((key) => states.has(key));
      await this.releaseKeys(instanceId, mine, token).catch(() => undefined);
      throw run.failure.error;
    }
    const current =
      held.length > 0 ? await this.readKeys(instanceId, held) : new Map<string, KeyState>();
    for (const key of held) states.set(key, current.get(key) ?? { kind: 'pending' });
    return states;
  }

  async releaseKeys(instanceId: string, keys: string[], token: string) {
    const run = await runBounded(keys, CONCURRENCY, async (key) => {
      try {
        await this.db.send(
          new DeleteCommand({
            TableName: this.tables.activities,
            Key: keyOf(instanceId, key),
            ConditionExpression: '#token = :token AND #status = :pending',
            ExpressionAttributeNames: { '#token': 'token', '#status': 'status' },
            ExpressionAttributeValues: { ':token': token, ':pending': 'pending' },
          }),
        );
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
      }
    });
    if (run.failure) throw run.failure.error;
  }

  async write(instanceId: string, activities: ActivityToWrite[], token: string) {
    const item = (activity: ActivityToWrite) => activityItem(instanceId, activity);
    const unkeyed = activities.filter((a) => a.key === undefined);
    const keyed = activities.filter((a) => a.key !== undefined);
    const written = new Set<ActivityToWrite>();
    const bySk = new Map(unkeyed.map((a) => [`${a.created_at}#${a.id}`, a]));
    const lost: string[] = [];
    try {
      // A request's batches at once (4 for 100 activities): one round trip, not four.
      await batchWrite(
        this.db,
        this.tables.activities,
        unkeyed.map((a) => ({ PutRequest: { Item: item(a) } })),
        (done) => {
          for (const request of done) {
            if (!('PutRequest' in request)) continue;
            const activity = bySk.get(String(request.PutRequest.Item.sk));
            if (activity) written.add(activity);
          }
        },
        WRITES_AT_ONCE,
      );
      // Every keyed activity at once: the batcher makes a few transactions of them.
      const run = await runBounded(keyed, keyed.length, async (activity) => {
        const key = activity.key ?? '';
        try {
          await this.transactions.write({
            items: [
              { Put: { TableName: this.tables.activities, Item: item(activity) } },
              {
                Update: {
                  TableName: this.tables.activities,
                  Key: keyOf(instanceId, key),
                  UpdateExpression:
                    'SET #status = :done, activity_id = :activity, person_id = :person, person_status = :personStatus REMOVE #token, lease_until',
                  ConditionExpression: '#token = :token AND #status = :pending',
                  ExpressionAttributeNames: { '#status': 'status', '#token': 'token' },
                  ExpressionAttributeValues: {
                    ':done': 'done',
                    ':pending': 'pending',
                    ':token': token,
                    ':activity': activity.id,
                    ':person': activity.person_id,
                    ':personStatus': activity.person_status,
                  },
                },
              },
            ],
          });
          written.add(activity);
        } catch (error) {
          // The key is no longer ours (our lease ran out and another request took it).
          if (cancellationCodes(error)?.[1] !== 'ConditionalCheckFailed') throw error;
          lost.push(key);
        }
      });
      if (run.failure) throw run.failure.error;
    } catch (error) {
      throw new ActivitiesNotWrittenError(
        activities.filter((a) => !written.has(a)),
        error,
      );
    }
    return lost;
  }
}
