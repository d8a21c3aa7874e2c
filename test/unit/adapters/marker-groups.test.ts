import { describe, expect, it } from '@jest/globals';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { MarkerGroups } from '../../../shared/adapters/marker-groups.js';

type Item = { pk: string; sk: string; outcomes: Record<string, unknown>; expires_at: number };

/** A client that records each BatchWriteItem's items and fails the calls naming `bad`. */
function fakeDb() {
  const calls: Item[][] = [];
  const db = {
    send: (command: unknown) => {
      if (!(command instanceof BatchWriteCommand)) return Promise.reject(new Error('unexpected'));
      const requests = command.input.RequestItems?.requests ?? [];
      const items = requests.map((request) => request.PutRequest?.Item as Item);
      calls.push(items);
      if (items.some((item) => item.pk.includes('bad'))) {
        return Promise.reject(new Error('throttled'));
      }
      return Promise.resolve({ UnprocessedItems: {} });
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, calls };
}

const created = (id: string) => ({ id, status: 'created' as const });

describe('marker groups', () => {
  it("puts a moment's markers of one request as one item, its requests' items 25 a call", async () => {
    const { db, calls } = fakeDb();
    const groups = new MarkerGroups(db, 'requests');
    const puts = [
      groups.put('inst', { requestId: 'r1', index: 0, outcome: created('p0') }),
      groups.put('inst', { requestId: 'r2', index: 4, outcome: created('p4') }),
      groups.put('inst', { requestId: 'r1', index: 7, outcome: created('p7') }),
      groups.put('other', { requestId: 'r1', index: 0, outcome: created('q0') }),
    ];
    await Promise.all(puts);
    expect(calls).toHaveLength(1);
    const items = calls[0] as Item[];
    expect(items.map((item) => item.pk)).toEqual(['inst#REQ#r1', 'inst#REQ#r2', 'other#REQ#r1']);
    expect(items.every((item) => item.sk.startsWith('R#G#'))).toBe(true);
    expect(new Set(items.map((item) => item.sk)).size).toBe(3);
    expect(items.map((item) => item.outcomes)).toEqual([
      { 0: created('p0'), 7: created('p7') },
      { 4: created('p4') },
      { 0: created('q0') },
    ]);
    // Kept as long as the request's other ledger items (21 days).
    const days = ((items[0]?.expires_at ?? 0) - Date.now() / 1000) / 86_400;
    expect(Math.round(days)).toBe(21);
  });

  it('settles each put with the call that carried it, and a later moment in a call of its own', async () => {
    const { db, calls } = fakeDb();
    const groups = new MarkerGroups(db, 'requests');
    const requests = Array.from({ length: 30 }, (_, i) => (i === 27 ? 'bad' : `r${i}`));
    const settled = await Promise.allSettled(
      requests.flatMap((requestId) =>
        [0, 1].map((index) =>
          groups.put('inst', { requestId, index, outcome: created(`${requestId}-${index}`) }),
        ),
      ),
    );
    expect(calls.map((call) => call.length)).toEqual([25, 5]);
    // The first call's markers are written; the second call failed, and so did each of its.
    expect(settled.slice(0, 50).every((result) => result.status === 'fulfilled')).toBe(true);
    expect(settled.slice(50).map((result) => result.status)).toEqual(Array(10).fill('rejected'));

    await groups.put('inst', { requestId: 'later', index: 3, outcome: created('l3') });
    expect(calls.at(-1)?.map((item) => item.outcomes)).toEqual([{ 3: created('l3') }]);
  });
});
