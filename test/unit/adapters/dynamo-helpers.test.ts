import { describe, expect, it } from '@jest/globals';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchGet, batchWrite } from '../../../shared/adapters/dynamo-helpers.js';

/** A client that answers BatchGetItem as DynamoDB does, refusing a key named twice. */
function fakeDb(items: Record<string, unknown>[]) {
  const sent: unknown[][] = [];
  const db = {
    send: (command: {
      input: { RequestItems: Record<string, { Keys: Record<string, unknown>[] }> };
    }) => {
      const [table, request] = Object.entries(command.input.RequestItems)[0] ?? [];
      const keys = request?.Keys ?? [];
      sent.push(keys);
      const ids = keys.map((key) => `${String(key.pk)}|${String(key.sk)}`);
      if (new Set(ids).size !== ids.length) {
        return Promise.reject(new Error('Provided list of item keys contains duplicates'));
      }
      const found = items.filter((item) => ids.includes(`${String(item.pk)}|${String(item.sk)}`));
      return Promise.resolve({ Responses: { [table ?? '']: found } });
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, sent };
}

describe('batchGet', () => {
  it('reads a key named twice once (DynamoDB refuses duplicates in a batch)', async () => {
    const { db, sent } = fakeDb([{ pk: 'a', sk: 'P', name: 'Ann' }]);
    const items = await batchGet(db, 't', [
      { pk: 'a', sk: 'P' },
      { sk: 'P', pk: 'a' },
      { pk: 'b', sk: 'P' },
    ]);
    expect(items).toEqual([{ pk: 'a', sk: 'P', name: 'Ann' }]);
    expect(sent).toEqual([
      [
        { pk: 'a', sk: 'P' },
        { pk: 'b', sk: 'P' },
      ],
    ]);
  });
});

describe('batchWrite', () => {
  const puts = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ PutRequest: { Item: { pk: `p${i}`, sk: 'A' } } }));

  /** Answers each call after a turn of the event loop; call `failAt` (1-based) fails. */
  function writingDb(failAt?: number) {
    let calls = 0;
    let inFlight = 0;
    let most = 0;
    const db = {
      send: async () => {
        calls += 1;
        const call = calls;
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        if (call === failAt) throw new Error('store unavailable');
        return {};
      },
    } as unknown as DynamoDBDocumentClient;
    return { db, calls: () => calls, most: () => most };
  }

  it('writes one batch of 25 after the other unless asked for more at once', async () => {
    const one = writingDb();
    await batchWrite(one.db, 't', puts(100));
    expect([one.calls(), one.most()]).toEqual([4, 1]);
    const four = writingDb();
    const written: unknown[] = [];
    await batchWrite(four.db, 't', puts(100), (done) => written.push(...done), 4);
    expect([four.calls(), four.most(), written.length]).toEqual([4, 4, 100]);
  });

  it('stops starting batches at the first failure and reports exactly what was written', async () => {
    const db = writingDb(2);
    const written: { PutRequest: { Item: { pk: string } } }[] = [];
    await expect(
      batchWrite(db.db, 't', puts(150), (done) => written.push(...(done as typeof written)), 2),
    ).rejects.toThrow('store unavailable');
    // Batches 1 and 2 ran together; 1 was written and its place taken by 3; 2 failed; 3
    // finished (written); 4 to 6 never started.
    expect(db.calls()).toBe(3);
    expect(written.map((w) => w.PutRequest.Item.pk)).toEqual([
      ...Array.from({ length: 25 }, (_, i) => `p${i}`),
      ...Array.from({ length: 25 }, (_, i) => `p${50 + i}`),
    ]);
  });
});
