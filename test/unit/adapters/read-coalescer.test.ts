import { describe, expect, it } from '@jest/globals';
import { BatchGetCommand, GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchGet } from '../../../shared/adapters/dynamo-helpers.js';
import { coalesceReads } from '../../../shared/adapters/read-coalescer.js';

type Key = Record<string, unknown>;

/**
 * A client that answers BatchGetItem as DynamoDB does (refusing a key named twice), leaves
 * the keys `unprocessed` names unprocessed once, and fails every call while `failing`.
 */
function fakeDb(items: Key[], options: { unprocessed?: string[]; failing?: boolean } = {}) {
  const calls: { table: string; keys: Key[]; consistent: boolean }[] = [];
  const others: unknown[] = [];
  const leftOnce = new Set(options.unprocessed ?? []);
  const id = (key: Key) => `${String(key.pk)}|${String(key.sk)}`;
  const db = {
    send: (command: unknown) => {
      if (!(command instanceof BatchGetCommand)) {
        others.push(command);
        return Promise.resolve({ Item: { pk: 'other' } });
      }
      const [table, request] = Object.entries(command.input.RequestItems ?? {})[0] ?? [];
      const keys = (request?.Keys ?? []) as Key[];
      calls.push({ table: table ?? '', keys, consistent: request?.ConsistentRead === true });
      if (options.failing) return Promise.reject(new Error('throttled'));
      const ids = keys.map(id);
      if (new Set(ids).size !== ids.length) {
        return Promise.reject(new Error('Provided list of item keys contains duplicates'));
      }
      const left = keys.filter((key) => leftOnce.delete(id(key)));
      const found = items.filter(
        (item) => ids.includes(id(item)) && !left.some((key) => id(key) === id(item)),
      );
      return Promise.resolve({
        Responses: { [table ?? '']: found },
        UnprocessedKeys: left.length > 0 ? { [table ?? '']: { Keys: left } } : {},
      });
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, calls, others };
}

const person = (n: number) => ({ pk: `i#P#${n}`, sk: 'P', name: `Person ${n}` });
const keyOf = (n: number) => ({ pk: `i#P#${n}`, sk: 'P' });
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('coalesceReads', () => {
  it('merges reads made side by side into one call, each caller getting only its own items', async () => {
    const { db, calls } = fakeDb(range(0, 30).map(person));
    const shared = coalesceReads(db, 5);
    const [a, b, c] = await Promise.all([
      batchGet(shared, 't', range(0, 10).map(keyOf), true),
      batchGet(shared, 't', range(10, 20).map(keyOf), true),
      // Overlaps both: each key is read once, and answered to everyone who asked.
      batchGet(shared, 't', [...range(5, 15), 40].map(keyOf), true),
    ]);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.keys).toHaveLength(21);
    expect(a.map((item) => item.name)).toEqual(range(0, 10).map((n) => `Person ${n}`));
    expect(b.map((item) => item.name)).toEqual(range(10, 20).map((n) => `Person ${n}`));
    expect(c.map((item) => item.name)).toEqual(range(5, 15).map((n) => `Person ${n}`));
  });

  it('never answers a strongly consistent read from an eventually consistent one, nor mixes tables', async () => {
    const { db, calls } = fakeDb(range(0, 4).map(person));
    const shared = coalesceReads(db, 5);
    await Promise.all([
      batchGet(shared, 't', [keyOf(0)], true),
      batchGet(shared, 't', [keyOf(1)], false),
      batchGet(shared, 'u', [keyOf(2)], true),
      batchGet(shared, 't', [keyOf(3)], true),
    ]);
    expect(calls.map((call) => [call.table, call.consistent, call.keys.length]).sort()).toEqual([
      ['t', false, 1],
      ['t', true, 2],
      ['u', true, 1],
    ]);
  });

  it('starts another call past 100 keys', async () => {
    const { db, calls } = fakeDb(range(0, 150).map(person));
    const shared = coalesceReads(db, 5);
    const answers = await Promise.all([
      batchGet(shared, 't', range(0, 60).map(keyOf), true),
      batchGet(shared, 't', range(60, 120).map(keyOf), true),
      batchGet(shared, 't', range(120, 150).map(keyOf), true),
    ]);
    expect(calls.map((call) => call.keys.length)).toEqual([60, 90]);
    expect(answers.map((items) => items.length)).toEqual([60, 60, 30]);
  });

  it('gives each caller back its own unprocessed keys, which it asks for again', async () => {
    const { db, calls } = fakeDb(range(0, 4).map(person), {
      unprocessed: ['i#P#1|P', 'i#P#2|P'],
    });
    const shared = coalesceReads(db, 5);
    const [a, b] = await Promise.all([
      batchGet(shared, 't', [keyOf(0), keyOf(1)], true),
      batchGet(shared, 't', [keyOf(2), keyOf(3)], true),
    ]);
    expect(a.map((item) => item.name).sort()).toEqual(['Person 0', 'Person 1']);
    expect(b.map((item) => item.name).sort()).toEqual(['Person 2', 'Person 3']);
    // Each caller asked again for its own unprocessed key alone (after its own backoff).
    expect(calls[0]?.keys).toHaveLength(4);
    expect(
      calls
        .slice(1)
        .flatMap((call) => call.keys.map((key) => key.pk))
        .sort(),
    ).toEqual(['i#P#1', 'i#P#2']);
  });

  it('fails every caller of a failed call, and no other', async () => {
    const failing = fakeDb([], { failing: true });
    const shared = coalesceReads(failing.db, 5);
    const results = await Promise.allSettled([
      batchGet(shared, 't', [keyOf(0)], true),
      batchGet(shared, 't', [keyOf(1)], true),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(failing.calls).toHaveLength(1);
  });

  it('passes anything else straight to the client', async () => {
    const { db, calls, others } = fakeDb([]);
    const shared = coalesceReads(db, 5);
    await shared.send(new GetCommand({ TableName: 't', Key: keyOf(0) }));
    await shared.send(
      new BatchGetCommand({
        RequestItems: { t: { Keys: [keyOf(0)], ProjectionExpression: 'pk' } },
      }),
    );
    expect(others).toHaveLength(1);
    // The projected read was not merged: it went alone, as it was.
    expect(calls).toHaveLength(1);
  });
});
