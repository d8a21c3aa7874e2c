import { describe, expect, it } from '@jest/globals';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CoalescedPuts } from '../../../shared/adapters/coalesced-puts.js';

/** A client that records each BatchWriteItem's keys and fails the calls that carry `bad`. */
function fakeDb() {
  const calls: string[][] = [];
  const db = {
    send: (command: unknown) => {
      if (!(command instanceof BatchWriteCommand)) return Promise.reject(new Error('unexpected'));
      const requests = command.input.RequestItems?.requests ?? [];
      const keys = requests.map((request) => String(request.PutRequest?.Item?.pk));
      calls.push(keys);
      if (keys.includes('bad')) return Promise.reject(new Error('throttled'));
      return Promise.resolve({ UnprocessedItems: {} });
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, calls };
}

describe('coalesced puts', () => {
  it('sends the puts of one moment together, 25 a call, each settling with its call', async () => {
    const { db, calls } = fakeDb();
    const puts = new CoalescedPuts(db, 'requests');
    const keys = Array.from({ length: 30 }, (_, i) => (i === 27 ? 'bad' : `k${i}`));
    const settled = await Promise.allSettled(keys.map((pk) => puts.put({ pk, sk: 'R' })));
    expect(calls.map((call) => call.length)).toEqual([25, 5]);
    expect(calls.flat()).toEqual(keys);
    // The first call's puts are written; the second call failed, and so did each of its puts.
    expect(settled.slice(0, 25).every((result) => result.status === 'fulfilled')).toBe(true);
    expect(settled.slice(25).map((result) => result.status)).toEqual(Array(5).fill('rejected'));

    // A put of a later moment goes in a call of its own.
    await puts.put({ pk: 'later', sk: 'R' });
    expect(calls.at(-1)).toEqual(['later']);
  });
});
