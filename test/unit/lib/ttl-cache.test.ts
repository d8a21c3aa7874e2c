import { describe, expect, it } from '@jest/globals';
import { TtlCache } from '../../../shared/lib/ttl-cache.js';

describe('TtlCache', () => {
  it('expires entries after their time to live', () => {
    let now = 0;
    const cache = new TtlCache<string>(10, () => now);
    cache.set('a', 'A', 100);
    now = 99;
    expect(cache.get('a')).toBe('A');
    now = 100;
    expect(cache.get('a')).toBeUndefined();
  });

  it('holds at most its size, dropping the oldest', () => {
    const cache = new TtlCache<number>(2);
    cache.set('a', 1, 1000);
    cache.set('b', 2, 1000);
    cache.set('c', 3, 1000);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3]);
  });

  it('shares one load between concurrent misses and uses a value-dependent TTL', async () => {
    let now = 0;
    let loads = 0;
    const cache = new TtlCache<string | null>(10, () => now);
    const load = () => {
      loads += 1;
      return Promise.resolve(null);
    };
    const ttl = (value: string | null) => (value === null ? 5 : 100);
    await Promise.all([cache.getOrLoad('k', ttl, load), cache.getOrLoad('k', ttl, load)]);
    expect(loads).toBe(1);
    now = 4;
    await cache.getOrLoad('k', ttl, load);
    expect(loads).toBe(1);
    now = 5;
    await cache.getOrLoad('k', ttl, load);
    expect(loads).toBe(2);
  });

  it('does not cache a failed load', async () => {
    const cache = new TtlCache<string>(10);
    await expect(
      cache.getOrLoad('k', 100, () => Promise.reject(new Error('down'))),
    ).rejects.toThrow('down');
    await expect(cache.getOrLoad('k', 100, () => Promise.resolve('up'))).resolves.toBe('up');
  });
});
