import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { RateLimitedError } from '../../../shared/domain/errors.js';
import {
  DEFAULT_RATE_LIMIT,
  RateLimiter,
  SHARD_RATE,
  rateLimitOf,
  type BucketKey,
  type RateLimit,
  type TakeRequest,
} from '../../../shared/domain/rate-limit.js';
import { testTenant } from '../fixtures.js';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';

function clock(start = 1_700_000_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const key: BucketKey = { instanceId: 'acme', keyId: 'a'.repeat(64) };

async function admitted(limiter: RateLimiter, limit: RateLimit, count: number, bucket = key) {
  let yes = 0;
  for (let i = 0; i < count; i += 1) {
    if ((await limiter.check(bucket, limit)).admitted) yes += 1;
  }
  return yes;
}

describe('the rate limiter', () => {
  it('admits the burst, then refuses with Retry-After until a token is due', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 10, burst: 20 };
    expect(await admitted(limiter, limit, 20)).toBe(20);
    expect(await limiter.check(key, limit)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    await expect(limiter.admit(key, limit)).rejects.toThrow(RateLimitedError);
    await expect(limiter.admit(key, limit)).rejects.toMatchObject({
      retryAfterSeconds: 1,
      message:
        'Rate limit exceeded: this API key may make 10 requests per second (bursts of 20); retry after 1 second',
    });
    // The bucket granted exactly the burst: nothing left, and no token was lost either.
    expect(store.tokens(key, limit, time.now())).toBeCloseTo(0, 6);
  });

  it('refills at the rate: one token per 1/R seconds, never above the burst', async () => {
    const time = clock();
    const limiter = new RateLimiter(new MemoryRateLimitStore(), { now: time.now });
    const limit = { requests_per_second: 10, burst: 20 };
    expect(await admitted(limiter, limit, 25)).toBe(20);
    time.advance(99);
    expect((await limiter.check(key, limit)).admitted).toBe(false);
    time.advance(1);
    expect(await admitted(limiter, limit, 3)).toBe(1);
    time.advance(500);
    expect(await admitted(limiter, limit, 10)).toBe(5);
    time.advance(60_000);
    expect(await admitted(limiter, limit, 30)).toBe(20);
  });

  it('says how long to wait: whole seconds, at least 1, longer after the limit was lowered', async () => {
    const time = clock();
    const limiter = new RateLimiter(new MemoryRateLimitStore(), { now: time.now });
    const slow = { requests_per_second: 1, burst: 3 };
    expect(await admitted(limiter, slow, 3)).toBe(3);
    expect(await limiter.check(key, slow)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    time.advance(400);
    expect(await limiter.check(key, slow)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    time.advance(600);
    expect((await limiter.check(key, slow)).admitted).toBe(true);

    // A bucket emptied under a generous limit, then read under a strict one: the TAT is 10 s
    // ahead, and the strict bucket holds one second, so the next token is 10 s away.
    const other = { ...key, keyId: 'b'.repeat(64) };
    const generous = { requests_per_second: 10, burst: 100 };
    const fresh = new RateLimiter(new MemoryRateLimitStore(), { now: time.now });
    expect(await admitted(fresh, generous, 100, other)).toBe(100);
    expect(await fresh.check(other, { requests_per_second: 1, burst: 1 })).toEqual({
      admitted: false,
      retryAfterSeconds: 10,
    });
  });

  it("charges a request's cost to its key: long requests empty the bucket, past empty, and others wait it out", async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 10, burst: 20 };
    // One request admitted, then charged for 8 s of work (32 tokens of 250 ms): the bucket is
    // 13 tokens in debt.
    expect(await admitted(limiter, limit, 1)).toBe(1);
    await limiter.charge(key, limit, 32);
    expect(await limiter.check(key, limit)).toEqual({ admitted: false, retryAfterSeconds: 2 });
    // Another container, which knew nothing of it, is refused by the store too.
    const other = new RateLimiter(store, { now: time.now });
    expect((await other.check(key, limit)).admitted).toBe(false);
    time.advance(1_400);
    expect((await limiter.check(key, limit)).admitted).toBe(true);
  });

  it('leases half a second of the demand, from two tokens at first to a quarter of the rate', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 1000, burst: 2000 };
    const tokensOf = (request: TakeRequest, rate = 1000) =>
      Math.round((request.costUs * rate) / 1e6);
    expect(await admitted(limiter, limit, 1)).toBe(1);
    // One request in the demand's quarter-second window: 4 a second, half a second of it.
    expect(store.calls.map((c) => tokensOf(c.request))).toEqual([2]);
    // 1500 requests a second for three seconds: leases grow to the cap of R/4 = 250 tokens.
    const burstSecond = async () => {
      for (let ms = 0; ms < 1000; ms += 2) {
        time.advance(2);
        expect(await admitted(limiter, limit, 3)).toBe(3);
      }
    };
    await burstSecond();
    await burstSecond();
    const before = store.calls.length;
    await burstSecond();
    const sizes = store.calls.map((c) => tokensOf(c.request));
    expect(Math.max(...sizes)).toBe(250);
    expect(sizes.every((size) => size >= 1 && size <= 250)).toBe(true);
    // Once the demand is known, 6 writes for 1500 requests: one per 250 tokens.
    expect(store.calls.length - before).toBeLessThanOrEqual(7);

    // A client sending one request after the other, 8 a second (a c=1 client of 100 activities
    // a request): a write per 4 to 8 requests, where a 100 ms lease wrote for every one.
    const steady = new MemoryRateLimitStore();
    const steadyLimiter = new RateLimiter(steady, { now: time.now });
    for (let i = 0; i < 80; i += 1) {
      time.advance(125);
      expect(await admitted(steadyLimiter, limit, 1)).toBe(1);
    }
    // (The demand is read over the last quarter of a second, so it runs a little ahead.)
    const steadySizes = steady.calls.map((c) => tokensOf(c.request));
    expect(steadySizes.slice(1).every((size) => size >= 4 && size <= 8)).toBe(true);
    expect(steady.calls.length).toBeLessThanOrEqual(20);

    // A slow rate still leases whole tokens: at least one.
    const slow = new MemoryRateLimitStore();
    const slowLimiter = new RateLimiter(slow, { now: time.now });
    expect(await admitted(slowLimiter, { requests_per_second: 5, burst: 5 }, 5)).toBe(5);
    expect(slow.calls.map((c) => tokensOf(c.request, 5))).toEqual([1, 1, 1, 1, 1]);
  });

  it('never leases more than the bucket holds', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 1000, burst: 1000 };
    // Another container took all but 7 tokens.
    store.tats.set('acme/' + key.keyId, time.now() * 1000 + 993_000);
    // 50 at once: the demand asks for 100 tokens a lease, the bucket has 7.
    const answers = await Promise.all(Array.from({ length: 50 }, () => limiter.check(key, limit)));
    expect(answers.filter((a) => a.admitted)).toHaveLength(7);
    expect(store.calls.map((c) => [c.request.from, c.request.costUs, c.result?.taken])).toEqual([
      ['full', 2_000, false], // believed full; the failed write tells the TAT
      ['partial', 7_000, true],
    ]);
    expect(store.tokens(key, limit, time.now())).toBeCloseTo(0, 6);
  });

  it('discards leased tokens after a second, so they cannot add to a later burst', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 100, burst: 100 };
    // Busy for a while: leases reach 25 tokens.
    for (let i = 0; i < 100; i += 1) {
      time.advance(10);
      await limiter.check(key, limit);
    }
    const calls = store.calls.length;
    expect((await limiter.check(key, limit)).admitted).toBe(true); // from the lease
    expect(store.calls.length).toBe(calls);
    // Idle: the bucket refills, and the rest of the lease expires.
    time.advance(5_000);
    expect(await admitted(limiter, limit, 150)).toBe(100);
    expect(store.calls.length).toBeGreaterThan(calls);
  });

  it('refuses from its cache while the bucket is empty, without asking the store', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 2, burst: 2 };
    expect(await admitted(limiter, limit, 3)).toBe(2);
    const calls = store.calls.length;
    for (let i = 0; i < 100; i += 1) {
      time.advance(4);
      expect(await limiter.check(key, limit)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    }
    expect(store.calls.length).toBe(calls);
    time.advance(100); // 500 ms after the bucket emptied: one token is due
    expect((await limiter.check(key, limit)).admitted).toBe(true);
    expect(store.calls.length).toBe(calls + 1);
  });

  it('corrects stale knowledge from the failed write itself, without a read', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const a = new RateLimiter(store, { now: time.now });
    const b = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 1, burst: 3 };
    expect(await admitted(a, limit, 1)).toBe(1);
    // B believes the bucket full; its write fails and brings the TAT, then its take applies.
    expect(await admitted(b, limit, 1)).toBe(1);
    expect(store.calls.slice(1).map((c) => [c.request.from, c.result?.taken])).toEqual([
      ['full', false],
      ['partial', true],
    ]);
    // A still believes one token is left, but B took it: A learns the bucket is empty from
    // its failed write and refuses, then refuses from its cache.
    expect(await admitted(b, limit, 1)).toBe(1);
    const before = store.calls.length;
    expect(await a.check(key, limit)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    expect(store.calls.length).toBe(before + 1);
    expect(await a.check(key, limit)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    expect(store.calls.length).toBe(before + 1);
  });

  it('gives up a lease after a bounded number of lost races and refuses that request', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now, maxAttempts: 4 });
    const limit = { requests_per_second: 10, burst: 10 };
    store.tats.set(`acme/${key.keyId}`, time.now() * 1000 + 500_000); // half full: we try
    let attempts = 0;
    store.before = (bucket) => {
      attempts += 1;
      // Before each of our writes someone else empties the bucket, and by the time the
      // answer is back, a token looks due again.
      store.tats.set(`${bucket.instanceId}/${bucket.keyId}`, time.now() * 1000 + 1_000_000);
      time.advance(600);
    };
    expect(await limiter.check(key, limit)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    expect(attempts).toBe(4);
    expect(store.calls.every((c) => c.result?.taken === false)).toBe(true);
  });

  it('admits from a local bucket while the store fails, started from what the store said', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const failures: unknown[] = [];
    const limiter = new RateLimiter(store, {
      now: time.now,
      fallbackMs: 1_000,
      onStoreFailure: (error) => failures.push(error),
    });
    const limit = { requests_per_second: 10, burst: 10 };
    expect(await admitted(limiter, limit, 6)).toBe(6);
    store.failure = new Error('throttled');
    const calls = store.calls.length;
    // The store last said about 4 tokens were left: the local bucket starts there.
    expect(await admitted(limiter, limit, 10)).toBeLessThanOrEqual(5);
    expect(failures).toHaveLength(1);
    expect(store.calls.length).toBe(calls + 1); // the store is left alone meanwhile
    time.advance(500);
    expect(await admitted(limiter, limit, 10)).toBe(5); // it refills at the rate
    time.advance(600);
    store.failure = undefined;
    expect((await limiter.check(key, limit)).admitted).toBe(true);
    expect(store.calls.length).toBe(calls + 2); // back to the store after fallbackMs
  });

  it('admits without any bucket it knows of when the store fails at once (fails open)', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    store.failure = new Error('unavailable');
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 5, burst: 8 };
    expect(await admitted(limiter, limit, 20)).toBe(8);
  });

  it('takes one lease at a time per key for concurrent requests of a container', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limiter = new RateLimiter(store, { now: time.now });
    const limit = { requests_per_second: 1000, burst: 2000 };
    const answers = await Promise.all(Array.from({ length: 200 }, () => limiter.check(key, limit)));
    expect(answers.every((a) => a.admitted)).toBe(true);
    // The first lease is two tokens; then the demand asks for up to 250 at a time.
    expect(store.calls.length).toBeLessThanOrEqual(12);
    // 200 tokens used; what is left of the last lease stays with the container.
    const leased = 2000 - store.tokens(key, limit, time.now());
    expect(leased).toBeGreaterThanOrEqual(200);
    expect(leased).toBeLessThan(200 + 250);
  });

  it('keeps keys apart', async () => {
    const time = clock();
    const limiter = new RateLimiter(new MemoryRateLimitStore(), { now: time.now });
    const limit = { requests_per_second: 1, burst: 2 };
    expect(await admitted(limiter, limit, 3)).toBe(2);
    expect(await admitted(limiter, limit, 3, { ...key, keyId: 'other' })).toBe(2);
    expect(await admitted(limiter, limit, 3, { ...key, instanceId: 'globex' })).toBe(2);
  });

  it('containers sharing one store never admit more than the bucket allows', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          rate: fc.integer({ min: 1, max: 500 }),
          extra: fc.integer({ min: 0, max: 500 }),
          containers: fc.integer({ min: 1, max: 5 }),
          steps: fc.array(
            fc.record({
              container: fc.nat(4),
              requests: fc.integer({ min: 1, max: 30 }),
              advanceMs: fc.integer({ min: 0, max: 300 }),
            }),
            { minLength: 1, maxLength: 60 },
          ),
        }),
        async ({ rate, extra, containers, steps }) => {
          const limit = { requests_per_second: rate, burst: rate + extra };
          const time = clock();
          const start = time.now();
          const store = new MemoryRateLimitStore();
          const fleet = Array.from(
            { length: containers },
            () => new RateLimiter(store, { now: time.now }),
          );
          let admittedSoFar = 0;
          for (const step of steps) {
            const limiter = fleet[step.container % containers];
            if (!limiter) throw new Error('no container');
            // The requests of a step arrive at once, interleaving their store calls.
            const answers = await Promise.all(
              Array.from({ length: step.requests }, () => limiter.check(key, limit)),
            );
            admittedSoFar += answers.filter((a) => a.admitted).length;
            const elapsedS = (time.now() - start) / 1000;
            // The bucket started full, no lease was out: burst + R·t bounds every admission.
            expect(admittedSoFar).toBeLessThanOrEqual(limit.burst + rate * elapsedS + 1e-9);
            time.advance(step.advanceMs);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('wastes little of the bucket: a busy fleet gets close to the limit', async () => {
    const time = clock();
    const store = new MemoryRateLimitStore();
    const fleet = Array.from({ length: 4 }, () => new RateLimiter(store, { now: time.now }));
    const limit = { requests_per_second: 200, burst: 200 };
    let admittedCount = 0;
    for (let ms = 0; ms < 10_000; ms += 5) {
      time.advance(5);
      for (const limiter of fleet) {
        if ((await limiter.check(key, limit)).admitted) admittedCount += 1;
      }
    }
    // 10 s at 200/s plus the burst is the most; stranded lease tokens cost only a little.
    expect(admittedCount).toBeLessThanOrEqual(200 + 200 * 10);
    expect(admittedCount).toBeGreaterThan(0.9 * (200 + 200 * 10));
  });
});

describe('the limit of a tenant', () => {
  it('is the instance setting, or the default, with a bucket per API key', () => {
    const tenant = testTenant();
    expect(rateLimitOf({ ...tenant, apiKeyHash: 'f'.repeat(64) })).toEqual({
      bucket: { instanceId: tenant.instance.id, keyId: 'f'.repeat(64) },
      limit: DEFAULT_RATE_LIMIT,
    });
    const limited = {
      ...tenant,
      instance: { ...tenant.instance, rate_limit: { requests_per_second: 5, burst: 9 } },
      apiKeyHash: 'e'.repeat(64),
    };
    expect(rateLimitOf(limited).limit).toEqual({ requests_per_second: 5, burst: 9 });
  });

  it('splits a key allowed more than one bucket can take into shares, one per container', () => {
    const tenant = testTenant();
    const busy = {
      ...tenant,
      instance: {
        ...tenant.instance,
        rate_limit: { requests_per_second: 10_000, burst: 20_000 },
      },
      apiKeyHash: 'a'.repeat(64),
    };
    const shards = Math.ceil(10_000 / SHARD_RATE);
    const seen = new Set<string>();
    for (let seed = 0; seed < 100; seed += 1) {
      const { bucket, limit } = rateLimitOf(busy, seed);
      seen.add(bucket.keyId);
      expect(limit).toEqual({ requests_per_second: 10_000 / shards, burst: 20_000 / shards });
      expect(limit.requests_per_second).toBeLessThanOrEqual(SHARD_RATE);
    }
    // Every share is a bucket of its own; together they allow the key's rate and no more.
    expect([...seen].sort()).toEqual(
      Array.from({ length: shards }, (_, n) => `${'a'.repeat(64)}#${n}`).sort(),
    );
    // A container keeps its share.
    expect(rateLimitOf(busy, 7).bucket).toEqual(rateLimitOf(busy, 7).bucket);
  });

  it('does not refuse a full bucket because other containers keep taking tokens meanwhile', async () => {
    // 5000/s: a token costs 200 µs. While each write of this container is on its way (5 ms),
    // another container takes a token at its later clock, so a take "from full" fails.
    const time = clock();
    const store = new MemoryRateLimitStore();
    const limit = { requests_per_second: 5000, burst: 10_000 };
    store.before = (bucket) => {
      time.advance(5);
      const id = `${bucket.instanceId}/${bucket.keyId}`;
      const nowUs = time.now() * 1000;
      store.tats.set(id, Math.max(store.tats.get(id) ?? 0, nowUs) + 200);
    };
    const limiter = new RateLimiter(store, { now: time.now });
    for (let i = 0; i < 20; i += 1) {
      expect(await limiter.check(key, limit)).toEqual({ admitted: true });
      time.advance(100);
    }
  });
});
