import { describe, expect, it } from '@jest/globals';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchGet } from '../../../shared/adapters/dynamo-helpers.js';

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
