import { describe, expect, it } from '@jest/globals';
import { CachedTenantDirectory } from '../../../shared/adapters/config-store.js';
import { hashApiKey } from '../../../shared/domain/api-keys.js';
import { TooManyUnknownKeysError, UnknownApiKeyError } from '../../../shared/domain/errors.js';
import { RateLimiter } from '../../../shared/domain/rate-limit.js';
import type { ApiKeyRecord, TenantDirectory } from '../../../shared/domain/tenancy.js';
import { authenticateLimited, unknownKeyLimit } from '../../../shared/http/api-runtime.js';
import { VersionWatch } from '../../../shared/lib/version-watch.js';
import { testTenant } from '../fixtures.js';
import { MemoryRateLimitStore } from '../domain/memory-rate-limit-store.js';

/**
 * Keys one by one: an address trying keys no one holds is refused before they cost
 * a read; a key revoked stops working in a warm container within the keys-version interval.
 */
const VALID = 'a-valid-key-of-at-least-thirty-two-characters';
const tenant = testTenant();

function directory(keys = new Map([[hashApiKey(VALID), 'acme']])) {
  const lookups: string[] = [];
  let version = 0;
  const inner: TenantDirectory = {
    findApiKey: (hash) => {
      lookups.push(hash);
      const instance = keys.get(hash);
      const record: ApiKeyRecord | undefined = instance
        ? { key_hash: hash, instance_id: instance, data_source: 'Web', home_region: 'default' }
        : undefined;
      return Promise.resolve(record);
    },
    getInstance: () => Promise.resolve(tenant.instance),
  };
  const clock = { now: 0 };
  const versions = new VersionWatch(
    () => Promise.resolve(version),
    2_000,
    () => clock.now,
  );
  const cached = new CachedTenantDirectory(inner, 60_000, 300_000, versions);
  return {
    cached,
    lookups,
    keys,
    clock,
    bump: () => {
      version += 1;
    },
  };
}

const STILL = Date.parse('2026-11-28T12:00:00Z');

function ports(cached: CachedTenantDirectory) {
  return {
    settings: {
      region: 'default' as const,
      baseUrls: { default: 'http://d', au: 'http://a', eu: 'http://e' },
      directory: cached,
    },
    directory: cached,
    // A clock that stands still: a stall of the machine must not refill a token mid-test.
    limiter: new RateLimiter(new MemoryRateLimitStore(), { now: () => STILL }),
    unknownKeys: new RateLimiter(new MemoryRateLimitStore(), { now: () => STILL }),
    unknownKeyLimit: unknownKeyLimit(60),
  };
}

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (error: unknown) => (error as Error).constructor.name,
  );

describe('unknown keys per address', () => {
  it('refuses an address past 60 unknown keys, before any more reads, and no one else', async () => {
    const { cached, lookups } = directory();
    const limited = ports(cached);
    // A valid key this container has seen before passes whatever the address does.
    expect(await outcome(authenticateLimited(VALID, '10.0.0.1', limited))).toBe('ok');
    const tries: string[] = [];
    for (let i = 0; i < 62; i += 1) {
      tries.push(
        await outcome(authenticateLimited(`guess-${i}-${'x'.repeat(32)}`, '10.0.0.1', limited)),
      );
    }
    expect(tries.slice(0, 60)).toEqual(Array(60).fill(UnknownApiKeyError.name));
    expect(tries.slice(60)).toEqual(Array(2).fill(TooManyUnknownKeysError.name));
    const reads = lookups.length;
    // Refused from memory now: no read for another unknown key from that address.
    expect(
      await outcome(authenticateLimited(`guess-again-${'x'.repeat(32)}`, '10.0.0.1', limited)),
    ).toBe(TooManyUnknownKeysError.name);
    expect(lookups).toHaveLength(reads);
    expect(await outcome(authenticateLimited(VALID, '10.0.0.1', limited))).toBe('ok');
    expect(await outcome(authenticateLimited(`guess-${'y'.repeat(32)}`, '10.0.0.2', limited))).toBe(
      UnknownApiKeyError.name,
    );
  });

  it('caches an unknown key for minutes, and forgets keys as soon as the keys version moves', async () => {
    const { cached, lookups, keys, clock, bump } = directory(new Map());
    const limited = ports(cached);
    expect(await outcome(authenticateLimited(VALID, undefined, limited))).toBe(
      UnknownApiKeyError.name,
    );
    clock.now = 60_000;
    expect(await outcome(authenticateLimited(VALID, undefined, limited))).toBe(
      UnknownApiKeyError.name,
    );
    expect(lookups).toHaveLength(1);
    // The key is minted (the version moves): a container that met it unknown sees it now.
    keys.set(hashApiKey(VALID), 'acme');
    bump();
    clock.now = 63_000;
    expect(await outcome(authenticateLimited(VALID, undefined, limited))).toBe('ok');
    // Revoked: refused on the first request after the next check (2 s), not after a minute.
    keys.clear();
    bump();
    clock.now = 64_000;
    expect(await outcome(authenticateLimited(VALID, undefined, limited))).toBe('ok');
    clock.now = 65_500;
    expect(await outcome(authenticateLimited(VALID, undefined, limited))).toBe(
      UnknownApiKeyError.name,
    );
  });
});
