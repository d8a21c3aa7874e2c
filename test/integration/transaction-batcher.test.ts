import { describe, expect, it } from '@jest/globals';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient, NO_FAULTS } from '../../shared/adapters/aws-clients.js';
import { cancellationCodes } from '../../shared/adapters/dynamo-helpers.js';
import {
  TransactionBatcher,
  type TransactionPart,
} from '../../shared/adapters/transaction-batcher.js';
import { ServiceUnavailableError } from '../../shared/domain/errors.js';
import { withDeadline } from '../../shared/lib/time-budget.js';
import { tableName } from '../../shared/resources.js';
import { stackDb } from './stack.js';

/**
 * Records sharing transactions (`TransactionBatcher`) against DynamoDB Local: each record
 * is applied whole or not at all, a failed condition is that record's alone, the others are
 * written all the same, and a request makes a few calls for many records. Under the faults
 * project, conflicts and throttling meet these transactions too: the outcomes must not change.
 */
const PEOPLE = tableName('default', 'people');
const { base, db } = stackDb(process.env.CDP_FAULTS ?? '');
const plain = stackDb('').db;
const run = `batcher-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

/** A client of the test stack that counts the calls it makes. */
function counted(faults = process.env.CDP_FAULTS ?? '') {
  const calls: string[] = [];
  const client = new DynamoDBClient({ endpoint: base.config.endpoint, maxAttempts: 1 });
  client.middlewareStack.add(
    (next, context) => (args) => {
      calls.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'countCalls' },
  );
  return { calls, db: createDocumentClient(client, faults) };
}

/** A record: an item and its claim, the claim put only if free. */
function record(name: string): TransactionPart {
  return {
    items: [
      { Put: { TableName: PEOPLE, Item: { pk: `${run}#R#${name}`, sk: 'R', name } } },
      {
        Put: {
          TableName: PEOPLE,
          Item: { pk: `${run}#K#${name}`, sk: 'K', owner: name },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    counters: [{ table: PEOPLE, pk: `${run}#C`, add: { records: 1 } }],
  };
}

async function exists(pk: string, sk: string) {
  const { Item } = await plain.send(
    new GetCommand({ TableName: PEOPLE, Key: { pk, sk }, ConsistentRead: true }),
  );
  return Item !== undefined;
}

async function counted_records() {
  const { Items = [] } = await plain.send(
    new QueryCommand({
      TableName: PEOPLE,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `${run}#C` },
      ConsistentRead: true,
    }),
  );
  return Items.reduce((sum, item) => sum + Number(item.records ?? 0), 0);
}

describe('records sharing transactions', () => {
  it('writes many records in a few calls, and sums their counters', async () => {
    const { calls, db: countingDb } = counted();
    const batcher = new TransactionBatcher(countingDb);
    const names = Array.from({ length: 60 }, (_, i) => `many-${i}`);
    await Promise.all(names.map((name) => batcher.write(record(name))));
    for (const name of names) {
      expect(await exists(`${run}#R#${name}`, 'R')).toBe(true);
      expect(await exists(`${run}#K#${name}`, 'K')).toBe(true);
    }
    expect(await counted_records()).toBe(60);
    // 60 records of 2 items, and a counter per transaction: at most 100 items a call. Faults
    // may cancel and retry some calls; without them, exactly two transactions.
    const transactions = calls.filter((name) => name === 'TransactWriteItemsCommand').length;
    if (!process.env.CDP_FAULTS) expect(transactions).toBe(2);
    else expect(transactions).toBeGreaterThanOrEqual(2);
  });

  it('fails a record whose condition fails, alone and whole; writes the others', async () => {
    // Someone else holds the claim of `taken`.
    await plain.send(
      new PutCommand({
        TableName: PEOPLE,
        Item: { pk: `${run}#K#taken`, sk: 'K', owner: 'someone else' },
      }),
    );
    const before = await counted_records();
    const batcher = new TransactionBatcher(db);
    const names = ['free-1', 'taken', 'free-2', 'free-3'];
    const outcomes = await Promise.all(
      names.map((name) =>
        batcher.write(record(name)).then(
          () => 'written',
          (error: unknown) => cancellationCodes(error),
        ),
      ),
    );
    expect(outcomes).toEqual([
      'written',
      // The record's own cancellation: its item, then its claim that failed.
      ['None', 'ConditionalCheckFailed'],
      'written',
      'written',
    ]);
    expect(await exists(`${run}#R#taken`, 'R')).toBe(false);
    for (const name of ['free-1', 'free-2', 'free-3']) {
      expect(await exists(`${run}#R#${name}`, 'R')).toBe(true);
    }
    // The refused record's counter was not added.
    expect(await counted_records()).toBe(before + 3);
  });

  it('writes two records naming one item one after the other', async () => {
    const batcher = new TransactionBatcher(db);
    const shared = (value: string): TransactionPart => ({
      items: [
        {
          Update: {
            TableName: PEOPLE,
            Key: { pk: `${run}#S`, sk: 'S' },
            UpdateExpression: 'ADD #v :v',
            ExpressionAttributeNames: { '#v': 'values' },
            ExpressionAttributeValues: { ':v': new Set([value]) },
          },
        },
      ],
    });
    await Promise.all([batcher.write(shared('a')), batcher.write(shared('b'))]);
    const { Item } = await plain.send(
      new GetCommand({ TableName: PEOPLE, Key: { pk: `${run}#S`, sk: 'S' }, ConsistentRead: true }),
    );
    expect(Item?.values).toEqual(new Set(['a', 'b']));
  });

  it('fails only the record the store refuses for its shape', async () => {
    const batcher = new TransactionBatcher(db);
    const tooLarge: TransactionPart = {
      items: [
        {
          Put: {
            TableName: PEOPLE,
            Item: { pk: `${run}#R#huge`, sk: 'R', blob: 'x'.repeat(410 * 1024) },
          },
        },
      ],
    };
    const outcomes = await Promise.all(
      [record('beside-huge'), tooLarge].map((part) =>
        batcher.write(part).then(
          () => 'written',
          (error: unknown) => (error instanceof Error ? error.name : 'unknown'),
        ),
      ),
    );
    expect(outcomes[0]).toBe('written');
    expect(outcomes[1]).not.toBe('written');
    expect(await exists(`${run}#R#beside-huge`, 'R')).toBe(true);
    expect(await exists(`${run}#R#huge`, 'R')).toBe(false);
  });

  it('starts no transaction after the store failed for the request', async () => {
    // Its own faults only: a conflict injected at random into the first transaction (the
    // fault-injected run, `CDP_FAULTS`) retries a record outside it, and which records the
    // scripted outage then stops is no longer the one the test states.
    const { calls, db: countingDb } = counted(NO_FAULTS);
    let throttled = false;
    countingDb.middlewareStack.add(
      (next) => async (args) => {
        if (throttled) {
          const error = new Error('Injected: the request rate is too high');
          error.name = 'ThrottlingException';
          throw error;
        }
        const result = await next(args);
        throttled = true;
        return result;
      },
      { step: 'initialize', name: 'throttleAfterFirst', priority: 'low' },
    );
    const batcher = new TransactionBatcher(countingDb, { maxItems: 10, maxInFlight: 1 });
    const names = Array.from({ length: 12 }, (_, i) => `down-${i}`);
    // 3 s: the first transaction answers in time even on a loaded machine; the throttle
    // switch, not the clock, decides which records are written.
    const outcomes = await withDeadline(Date.now() + 3_000, () =>
      Promise.all(
        names.map((name) =>
          batcher.write(record(name)).then(
            () => 'written',
            (error: unknown) => (error instanceof ServiceUnavailableError ? 'unavailable' : error),
          ),
        ),
      ),
    );
    // Four records a transaction (2 items each and a counter); the first transaction went
    // through, the second met the store down until the deadline, the third was never sent.
    expect(outcomes).toEqual([
      ...Array.from({ length: 4 }, () => 'written'),
      ...Array.from({ length: 8 }, () => 'unavailable'),
    ]);
    for (const [i, name] of names.entries()) {
      expect(await exists(`${run}#R#${name}`, 'R')).toBe(i < 4);
    }
    expect(calls.filter((name) => name === 'TransactWriteItemsCommand').length).toBeGreaterThan(1);
  });
});
