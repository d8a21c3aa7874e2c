import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { mergedKeys, type ShardRead } from '../../../shared/adapters/sharded-index.js';
import { compareKeys } from '../../../shared/domain/people/field-index.js';

/**
 * Shards of sorted keys (a key in one shard only, as a sort key ending in an ID is), read as
 * the store reads them, counting the keys handed out.
 */
function shardsOf(keys: string[][]) {
  const seen = new Set<string>();
  const sorted = keys.map((shard) =>
    [...new Set(shard)].filter((key) => !seen.has(key) && Boolean(seen.add(key))).sort(compareKeys),
  );
  const served = { keys: 0, reads: 0 };
  const read: ShardRead = (shard, after, count) => {
    const rest = (sorted[shard] ?? []).filter(
      (key) => after === undefined || compareKeys(key, after) > 0,
    );
    served.reads += 1;
    served.keys += Math.min(count, rest.length);
    return Promise.resolve({ keys: rest.slice(0, count), more: rest.length > count });
  };
  return { sorted, served, read };
}

async function take(stream: AsyncGenerator<string>, count: number): Promise<string[]> {
  const taken: string[] = [];
  for await (const key of stream) {
    taken.push(key);
    if (taken.length === count) break;
  }
  return taken;
}

describe('mergedKeys', () => {
  it('yields every shard’s keys once, in order, from any position', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.string({ minLength: 1, maxLength: 4 }), { maxLength: 40 }), {
          minLength: 1,
          maxLength: 16,
        }),
        fc.option(fc.string({ minLength: 1, maxLength: 4 }), { nil: undefined }),
        async (keys, after) => {
          const { sorted, read } = shardsOf(keys);
          const expected = [...new Set(sorted.flat())]
            .sort(compareKeys)
            .filter((key) => after === undefined || compareKeys(key, after) > 0);
          const all = await take(mergedKeys(read, sorted.length, after, compareKeys, 2), 1e6);
          expect(all).toEqual(expected);
        },
      ),
    );
  });

  it('reads about what it yields, not every shard’s page', async () => {
    const keys = Array.from({ length: 16 }, (_, shard) =>
      Array.from({ length: 5_000 }, (_, n) => `k${String(n * 16 + shard).padStart(8, '0')}`),
    );
    const { served, read } = shardsOf(keys);
    const first = await take(mergedKeys(read, 16, undefined, compareKeys, 5), 50);
    expect(first).toEqual(Array.from({ length: 50 }, (_, n) => `k${String(n).padStart(8, '0')}`));
    // 16 shards × 5 keys first, each refilled once (10 more): far from 16 × 51.
    expect(served.keys).toBeLessThanOrEqual(16 * 15);
  });
});
