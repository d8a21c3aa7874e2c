import { describe, expect, it } from '@jest/globals';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { gunzipSync } from 'node:zlib';
import { MarkerGroups } from '../../../shared/adapters/marker-groups.js';

type Item = { pk: string; sk: string; outcomes_gz: Uint8Array; expires_at: number };

/** A group's outcomes by record index (gzipped JSON in the item). */
const outcomesOf = (item: Item | undefined) =>
  item && (JSON.parse(gunzipSync(item.outcomes_gz).toString('utf8')) as unknown);

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
  it("puts a request's held markers as one item when it is released, the moment's requests 25 a call", async () => {
    const { db, calls } = fakeDb();
    const groups = new MarkerGroups(db, 'requests');
    groups.hold('inst', { requestId: 'r1', index: 0, outcome: created('p0') });
    groups.hold('inst', { requestId: 'r2', index: 4, outcome: created('p4') });
    groups.hold('inst', { requestId: 'r1', index: 7, outcome: created('p7') });
    groups.hold('other', { requestId: 'r1', index: 0, outcome: created('q0') });
    // Held: nothing is written until a request is released.
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toHaveLength(0);
    await Promise.all([groups.release('inst', 'r1'), groups.release('other', 'r1')]);
    expect(calls).toHaveLength(1);
    const items = calls[0] as Item[];
    expect(items.map((item) => item.pk)).toEqual(['inst#REQ#r1', 'other#REQ#r1']);
    expect(items.every((item) => item.sk.startsWith('R#G#'))).toBe(true);
    expect(new Set(items.map((item) => item.sk)).size).toBe(2);
    expect(items.map(outcomesOf)).toEqual([
      { 0: created('p0'), 7: created('p7') },
      { 0: created('q0') },
    ]);
    // Kept as long as the request's other ledger items (21 days).
    const days = ((items[0]?.expires_at ?? 0) - Date.now() / 1000) / 86_400;
    expect(Math.round(days)).toBe(21);

    // r2 still held; once released, alone; released again (nothing held), no call.
    await groups.release('inst', 'r2');
    expect(calls.at(-1)?.map(outcomesOf)).toEqual([{ 4: created('p4') }]);
    await groups.release('inst', 'r2');
    await groups.release('inst', 'never-held');
    expect(calls).toHaveLength(2);
  });

  it("settles a release with nothing held with the request's put in flight", async () => {
    const { db } = fakeDb();
    const groups = new MarkerGroups(db, 'requests');
    // Two deliveries of one request in one container: the first to finish takes both's
    // markers; the other, released meanwhile, settles with that put (here, its failure).
    groups.hold('inst', { requestId: 'bad', index: 0, outcome: created('p0') });
    groups.hold('inst', { requestId: 'bad', index: 1, outcome: created('p1') });
    const first = groups.release('inst', 'bad');
    const second = groups.release('inst', 'bad');
    await expect(first).rejects.toThrow('throttled');
    await expect(second).rejects.toThrow('throttled');
    // Once settled, nothing is in flight for it any more.
    await expect(groups.release('inst', 'bad')).resolves.toBeUndefined();
  });

  it('settles each release with the call that carried it', async () => {
    const { db, calls } = fakeDb();
    const groups = new MarkerGroups(db, 'requests');
    const requests = Array.from({ length: 30 }, (_, i) => (i === 27 ? 'bad' : `r${i}`));
    for (const requestId of requests) {
      for (const index of [0, 1]) {
        groups.hold('inst', { requestId, index, outcome: created(`${requestId}-${index}`) });
      }
    }
    const settled = await Promise.allSettled(
      requests.map((requestId) => groups.release('inst', requestId)),
    );
    expect(calls.map((call) => call.length)).toEqual([25, 5]);
    expect(outcomesOf(calls[0]?.[0])).toEqual({ 0: created('r0-0'), 1: created('r0-1') });
    // The first call's markers are written; the second call failed, and so did each of its.
    expect(settled.slice(0, 25).every((result) => result.status === 'fulfilled')).toBe(true);
    expect(settled.slice(25).map((result) => result.status)).toEqual(Array(5).fill('rejected'));
  });
});
