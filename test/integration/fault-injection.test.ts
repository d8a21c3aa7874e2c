import { describe, expect, it } from '@jest/globals';
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createDynamoDbClient } from '../../shared/adapters/aws-clients.js';
import { batchGet } from '../../shared/adapters/dynamo-helpers.js';
import {
  FaultInjector,
  parseFaults,
  VersionHistory,
  type FaultRates,
} from '../../shared/adapters/dynamo-faults.js';
import { ServiceUnavailableError } from '../../shared/domain/errors.js';
import { withDeadline } from '../../shared/lib/time-budget.js';
import { tableName } from '../../shared/resources.js';
import { stackDb } from './stack.js';

/**
 * The fault injector (CDP_FAULTS) and the retries every DynamoDB call gets, against the test
 * stack's DynamoDB Local: a scratch partition of the people table.
 */
stackDb();
const TABLE = tableName('default', 'people');
let n = 0;
const scratch = () => ({ pk: `faults#${Date.now().toString(36)}#${(n += 1)}`, sk: 'X' });

/** A clock that moves only when told, so a loaded machine's slow calls do not close a window. */
function manualClock() {
  let at = 0;
  return { now: () => at, advance: (ms: number) => void (at += ms) };
}

function client(rates: Partial<FaultRates>, now: () => number = Date.now) {
  const base = createDynamoDbClient();
  const db = createDocumentClient(base, '');
  const injector = new FaultInjector(
    { conflict: 0, throttle: 0, stale: 0, windowMs: 1000, ...rates },
    Math.random,
    now,
    new VersionHistory(),
  ).install(base);
  return { db, injector };
}

describe('CDP_FAULTS', () => {
  it('reads rates, a window and a table filter, and names what is wrong', () => {
    expect(parseFaults('conflict=0.2,throttle=0.1,stale=0.3')).toEqual({
      conflict: 0.2,
      throttle: 0.1,
      stale: 0.3,
      windowMs: 1000,
    });
    expect(parseFaults(' stale=1 , window=250, only=people ')).toEqual({
      conflict: 0,
      throttle: 0,
      stale: 1,
      windowMs: 250,
      only: 'people',
    });
    expect(() => parseFaults('throttle=2')).toThrow(/^CDP_FAULTS: throttle: /);
    expect(() => parseFaults('slow=0.1')).toThrow(/^CDP_FAULTS: /);
    expect(() => parseFaults('throttle')).toThrow(/"throttle" is not name=value/);
  });
});

describe('throttling', () => {
  it('is retried until the call succeeds', async () => {
    const { db, injector } = client({ throttle: 0.5 });
    const key = scratch();
    await db.send(new PutCommand({ TableName: TABLE, Item: { ...key, v: 1 } }));
    for (let i = 0; i < 20; i += 1) {
      const { Item } = await db.send(new GetCommand({ TableName: TABLE, Key: key }));
      expect(Item?.v).toBe(1);
    }
    expect(injector.counts.throttled).toBeGreaterThan(0);
  });

  it('becomes a 503 error once the time budget is spent', async () => {
    const { db, injector } = client({ throttle: 1 });
    const started = Date.now();
    // 1.5 s: backoffs from 25 ms doubling leave room for several attempts even on a loaded machine.
    const error = await withDeadline(started + 1500, () =>
      db.send(new GetCommand({ TableName: TABLE, Key: scratch() })),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(injector.counts.throttled).toBeGreaterThan(3);
  });

  it('leaves batch keys unprocessed, and batch reads ask for them again', async () => {
    const { db, injector } = client({ throttle: 1 });
    const keys = Array.from({ length: 10 }, scratch);
    const { db: plain } = stackDb();
    for (const key of keys)
      await plain.send(new PutCommand({ TableName: TABLE, Item: { ...key, v: key.pk } }));
    const items = await batchGet(db, TABLE, keys, true);
    expect(items.map((item) => item.v).sort()).toEqual(keys.map((key) => key.pk).sort());
    expect(injector.counts.unprocessed).toBeGreaterThan(0);
  });
});

describe('transaction conflicts', () => {
  it('are retried, and a retried transaction applies once', async () => {
    const { db, injector } = client({ conflict: 0.5 });
    const key = scratch();
    for (let i = 0; i < 20; i += 1) {
      await db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: TABLE,
                Key: key,
                UpdateExpression: 'ADD counted :one',
                ExpressionAttributeValues: { ':one': 1 },
              },
            },
          ],
        }),
      );
      await db.send(
        new UpdateCommand({
          TableName: TABLE,
          Key: key,
          UpdateExpression: 'ADD single :one',
          ExpressionAttributeValues: { ':one': 1 },
        }),
      );
    }
    const { Item } = await db.send(
      new GetCommand({ TableName: TABLE, Key: key, ConsistentRead: true }),
    );
    expect(Item).toMatchObject({ counted: 20, single: 20 });
    expect(injector.counts.conflicts).toBeGreaterThan(0);
  });
});

describe('stale reads', () => {
  it('return the version before a recent write to eventually consistent reads only', async () => {
    const clock = manualClock();
    const { db, injector } = client({ stale: 1, windowMs: 300 }, clock.now);
    const key = scratch();
    const eventual = async () =>
      (await db.send(new GetCommand({ TableName: TABLE, Key: key }))).Item;
    const consistent = async () =>
      (await db.send(new GetCommand({ TableName: TABLE, Key: key, ConsistentRead: true }))).Item;

    await db.send(
      new PutCommand({
        TableName: TABLE,
        Item: { ...key, v: 1 },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    expect(await eventual()).toBeUndefined(); // created a moment ago: not there yet
    expect(await consistent()).toMatchObject({ v: 1 });
    clock.advance(301);
    expect(await eventual()).toMatchObject({ v: 1 });

    await db.send(
      new UpdateCommand({
        TableName: TABLE,
        Key: key,
        UpdateExpression: 'SET v = :v',
        ExpressionAttributeValues: { ':v': 2 },
      }),
    );
    expect(await eventual()).toMatchObject({ v: 1 });
    expect(await consistent()).toMatchObject({ v: 2 });
    clock.advance(301);
    expect(await eventual()).toMatchObject({ v: 2 });
    expect(injector.counts.stale).toBe(2);
  });

  it('apply to batch reads too', async () => {
    const { db } = client({ stale: 1 }, manualClock().now);
    const key = scratch();
    await db.send(
      new PutCommand({
        TableName: TABLE,
        Item: { ...key, v: 1 },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    expect(await batchGet(db, TABLE, [key], false)).toEqual([]);
    expect(await batchGet(db, TABLE, [key], true)).toEqual([{ ...key, v: 1 }]);
  });
});
