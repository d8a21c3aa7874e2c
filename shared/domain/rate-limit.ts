import { RateLimitedError } from './errors.js';
import type { RateLimitConfig } from './instance-config.js';
import type { Tenant } from './tenancy.js';

/**
 * Per-API-key rate limits (docs/api.md, Rate limits): a token bucket per key that refills at
 * `requests_per_second` and holds at most `burst` tokens; each request takes one.
 *
 * The bucket lives in a shared store as one number, its **TAT** (theoretical arrival time,
 * GCRA): the moment the bucket would be full again. At time `now` it holds
 * `burst − (TAT − now) · R` tokens, or `burst` when `TAT ≤ now` (or there is no bucket).
 * Taking `n` tokens moves the TAT `n / R` later. Times are integer microseconds, so that
 * the store compares exact values.
 *
 * A container does not write the store per request. It takes a **lease** of tokens with one
 * conditional write (about half a second of its own demand, at most `R / 4`, at least 1) and
 * admits requests from it locally. The write is an atomic increment of the TAT, conditioned
 * on the bucket not going below empty, so concurrent writes do not invalidate each other (a
 * write fails only when the bucket holds too few tokens, or when the container took a
 * full bucket for a partly used one or the reverse); a failed condition returns the bucket's
 * current TAT, so a container with stale knowledge corrects it without an extra read.
 * Unused leased tokens are discarded after `leaseTtlMs` (never returned), so a lease cannot
 * be saved up into a burst later. When the store says the bucket is empty, the container
 * refuses the key without touching the store until the next token is due.
 *
 * What this guarantees: every admitted request took a token the store granted, so over any
 * period the admitted requests of a key are at most `burst + R · period`, plus the tokens
 * other containers held in leases at its start (at most one lease each, gone within
 * `leaseTtlMs`), plus `R · skew` for containers whose clocks run ahead. Tokens stranded in
 * leases only ever make the limit stricter.
 *
 * If the store fails (throttled or unavailable after its retries), the key is admitted for
 * `fallbackMs` from a bucket local to the container, started from what the store last said
 * (fail open: each container then enforces the limit on its own), and the store is tried
 * again after.
 */
export type RateLimit = RateLimitConfig;

/**
 * The limit of keys whose instance sets none: well above what one client of the API
 * normally sends, low enough that a runaway client cannot take a region's capacity.
 */
export const DEFAULT_RATE_LIMIT: RateLimit = { requests_per_second: 100, burst: 200 };

/** Whose bucket: an instance and the ID of one of its keys (its hash, never the key). */
export interface BucketKey {
  instanceId: string;
  keyId: string;
}

/**
 * The highest rate one bucket item takes. Each busy container writes its bucket about twice a
 * second (a lease is ~0.5 s of its demand; more often only above `R / 2`, where a lease is
 * capped at `R / 4`), and containers grow with the rate; a
 * key allowed more is split into `ceil(R / SHARD_RATE)` buckets of an equal share of its
 * rate and burst, and each container uses one of them, so no item nears DynamoDB's 1,000
 * writes a second per partition. Within a bucket the limit is exact as above; across buckets
 * a container may be refused while another bucket of the key still has tokens (never the
 * reverse), which evens out as containers spread over the buckets.
 */
export const SHARD_RATE = 500;

/** Which of a key's buckets this container uses (chosen once per container). */
const CONTAINER_SEED = Math.floor(Math.random() * 1_000_000_000);

/** The limit and bucket of an authenticated tenant (one bucket per API key, or its share). */
export function rateLimitOf(
  tenant: Tenant,
  containerSeed = CONTAINER_SEED,
): { bucket: BucketKey; limit: RateLimit } {
  // A tenant authenticated by a key carries its hash; otherwise one bucket per data source.
  const keyId = tenant.apiKeyHash ?? `source:${tenant.dataSource.name}`;
  const limit = tenant.instance.rate_limit ?? DEFAULT_RATE_LIMIT;
  const shards = Math.ceil(limit.requests_per_second / SHARD_RATE);
  if (shards <= 1) return { bucket: { instanceId: tenant.instance.id, keyId }, limit };
  return {
    bucket: { instanceId: tenant.instance.id, keyId: `${keyId}#${containerSeed % shards}` },
    limit: {
      requests_per_second: limit.requests_per_second / shards,
      burst: Math.max(1, Math.floor(limit.burst / shards)),
    },
  };
}

/**
 * One conditional write to a bucket. `from: 'full'` (the caller believes there is no bucket
 * or its TAT is at most `nowUs`): the TAT becomes `nowUs + costUs`. `from: 'partial'` (the
 * caller believes the TAT is after `nowUs`): the TAT grows by `costUs`, provided it is after
 * `nowUs` and at most `maxTatUs` (so the bucket does not go below empty). After `forgetAfterUs`
 * the bucket is full whatever happens to it, so the store may drop it (an absent bucket is
 * a full one).
 */
export interface TakeRequest {
  from: 'full' | 'partial';
  nowUs: number;
  costUs: number;
  maxTatUs: number;
  forgetAfterUs: number;
}

/** The TAT after a write that was made, or the current one (`undefined`: no bucket) if not. */
export type TakeResult =
  { taken: true; tatUs: number } | { taken: false; tatUs: number | undefined };

/** The shared store of buckets: one conditional write per call, no reads. */
export interface RateLimitStore {
  take(bucket: BucketKey, request: TakeRequest): Promise<TakeResult>;
}

export type Admission = { admitted: true } | { admitted: false; retryAfterSeconds: number };

export interface RateLimiterOptions {
  /** The container's clock (epoch milliseconds). */
  now?: () => number;
  /** How long leased tokens may be used before they are discarded. */
  leaseTtlMs?: number;
  /** Conditional writes one lease may make (each failure tells the current TAT). */
  maxAttempts?: number;
  /** How long a key is admitted from the local bucket alone after the store failed. */
  fallbackMs?: number;
  /** Told when the store fails (the limiter then fails open for `fallbackMs`). */
  onStoreFailure?: (error: unknown, bucket: BucketKey) => void;
  /** Keys a container keeps state for; the least recently used go first. */
  maxKeys?: number;
}

const US_PER_MS = 1_000;
const US_PER_S = 1_000_000;
/**
 * A lease is about this much of the container's demand: a container that sends a key's
 * requests one after the other (a client at c=1 sends 5-10 a second) writes the bucket once
 * per several requests, not once each. Within the lease's life (`leaseTtlMs`, 1 s).
 */
const LEASE_SPAN_S = 0.5;
/** The largest lease, as seconds of the key's rate: what one container can strand. */
const MAX_LEASE_S = 0.25;

/** The arithmetic of one limit, in integer microseconds. */
class Bucket {
  /** How far ahead of now the TAT may be: the time `burst` tokens take to refill. */
  readonly windowUs: number;

  constructor(readonly limit: RateLimit) {
    this.windowUs = Math.ceil((limit.burst * US_PER_S) / limit.requests_per_second);
  }

  /** What `n` tokens cost (rounded up: never cheaper than the rate). */
  cost(n: number): number {
    return Math.ceil((n * US_PER_S) / this.limit.requests_per_second);
  }

  /** Whole tokens available at `nowUs` for a bucket at `tatUs`. */
  available(tatUs: number | undefined, nowUs: number): number {
    if (tatUs === undefined || tatUs <= nowUs) return this.limit.burst;
    const room = nowUs + this.windowUs - tatUs;
    return room <= 0
      ? 0
      : Math.min(this.limit.burst, Math.floor((room * this.limit.requests_per_second) / US_PER_S));
  }

  /** Microseconds until one token is available (0 if one is). */
  untilOneToken(tatUs: number | undefined, nowUs: number): number {
    if (tatUs === undefined) return 0;
    return Math.max(0, tatUs + this.cost(1) - this.windowUs - nowUs);
  }

  /** The largest lease: a quarter of a second of the rate, at least one token. */
  get maxLease(): number {
    return Math.max(1, Math.floor(this.limit.requests_per_second * MAX_LEASE_S));
  }
}

/**
 * Requests a container saw for one key per second, over the last quarter of a second (a
 * sliding window approximated by two fixed ones): short, so that leases follow a burst.
 */
class DemandMeter {
  private static readonly WINDOW_MS = 250;
  private windowStart = 0;
  private current = 0;
  private previous = 0;

  record(nowMs: number): void {
    this.roll(nowMs);
    this.current += 1;
  }

  rate(nowMs: number): number {
    this.roll(nowMs);
    const window = DemandMeter.WINDOW_MS;
    const into = (nowMs - this.windowStart) / window;
    return ((this.previous * (1 - into) + this.current) * 1_000) / window;
  }

  private roll(nowMs: number): void {
    const window = DemandMeter.WINDOW_MS;
    const elapsed = nowMs - this.windowStart;
    if (elapsed < window) return;
    const adjacent = elapsed < 2 * window;
    this.previous = adjacent ? this.current : 0;
    this.current = 0;
    this.windowStart = adjacent ? this.windowStart + window : nowMs;
  }
}

interface KeyState {
  /** Tokens leased to this container, usable until `leaseUntilMs`. */
  leased: number;
  leaseUntilMs: number;
  /** The TAT the store last reported (`undefined`: none known, taken as no bucket). */
  tatUs: number | undefined;
  /** The store said the bucket is empty: refused locally until then. */
  emptyUntilMs: number;
  /** The store failed: admitted from `localTatUs` alone until then. */
  fallbackUntilMs: number;
  localTatUs: number | undefined;
  demand: DemandMeter;
  /** A lease being taken (one at a time per key). */
  taking: Promise<void> | undefined;
}

/**
 * The rate limiter of one container (one per Lambda container; each function of the local
 * stack has its own, as on AWS): leases, the empty-until cache and the fallback per key.
 */
export class RateLimiter {
  private readonly keys = new Map<string, KeyState>();
  private readonly now: () => number;
  private readonly leaseTtlMs: number;
  private readonly maxAttempts: number;
  private readonly fallbackMs: number;
  private readonly maxKeys: number;

  constructor(
    private readonly store: RateLimitStore,
    private readonly options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.leaseTtlMs = options.leaseTtlMs ?? 1_000;
    this.maxAttempts = options.maxAttempts ?? 4;
    this.fallbackMs = options.fallbackMs ?? 1_000;
    this.maxKeys = options.maxKeys ?? 10_000;
  }

  /**
   * How long this container already knows the bucket to be empty (0: not known so), without
   * touching the store: for refusing work before it is done.
   */
  knownEmptyMs(bucket: BucketKey): number {
    const state = this.keys.get(`${bucket.instanceId}\u0000${bucket.keyId}`);
    return state ? Math.max(0, state.emptyUntilMs - this.now()) : 0;
  }

  /**
   * Charges `tokens` more to the key for work its request has done (its time beyond what the
   * admission token paid for): from this container's lease first, then in the shared bucket,
   * past empty if need be (a debt the key's next requests wait out). It refuses nothing, the
   * work being done; a store that fails leaves the charge unpaid (logged by the caller).
   */
  async charge(bucket: BucketKey, limit: RateLimit, tokens: number): Promise<void> {
    if (tokens <= 0) return;
    const math = new Bucket(limit);
    const state = this.stateOf(bucket);
    const fromLease = Math.min(state.leased, tokens);
    state.leased -= fromLease;
    const owed = tokens - fromLease;
    if (owed <= 0) return;
    const nowMs = this.now();
    const nowUs = Math.floor(nowMs * US_PER_MS);
    const costUs = math.cost(owed);
    for (let attempt = 0; attempt < this.maxAttempts; attempt += 1) {
      const full = state.tatUs === undefined || state.tatUs <= nowUs;
      const result = await this.store.take(bucket, {
        from: full ? 'full' : 'partial',
        nowUs,
        costUs,
        maxTatUs: Number.MAX_SAFE_INTEGER,
        forgetAfterUs: Math.max(nowUs, state.tatUs ?? 0) + costUs + math.windowUs,
      });
      state.tatUs = result.tatUs;
      if (result.taken) {
        // In debt: refused here without a write until it is paid.
        if (math.available(state.tatUs, nowUs) < 1) {
          state.emptyUntilMs =
            nowMs + Math.ceil(math.untilOneToken(state.tatUs, nowUs) / US_PER_MS);
        }
        return;
      }
    }
  }

  /** Admits a request of the key or throws `RateLimitedError` (429 with `Retry-After`). */
  async admit(bucket: BucketKey, limit: RateLimit): Promise<void> {
    const admission = await this.check(bucket, limit);
    if (!admission.admitted) throw new RateLimitedError(admission.retryAfterSeconds, limit);
  }

  /** Whether a request of the key may go ahead; takes its token if so. */
  async check(bucket: BucketKey, limit: RateLimit): Promise<Admission> {
    const math = new Bucket(limit);
    const state = this.stateOf(bucket);
    state.demand.record(this.now());
    for (;;) {
      const now = this.now();
      if (state.leased > 0 && now < state.leaseUntilMs) {
        state.leased -= 1;
        return { admitted: true };
      }
      state.leased = 0; // expired tokens are discarded, never returned
      if (now < state.emptyUntilMs) return refused(state.emptyUntilMs - now);
      if (now < state.fallbackUntilMs) return admitLocally(state, math, now);
      if (state.taking) {
        await state.taking;
        continue;
      }
      state.taking = this.takeLease(bucket, state, math)
        .catch((error: unknown) => {
          this.options.onStoreFailure?.(error, bucket);
          state.fallbackUntilMs = this.now() + this.fallbackMs;
          // Started from what the store last said, and never refilled by a later failure.
          state.localTatUs = latest(state.localTatUs, state.tatUs);
        })
        .finally(() => {
          state.taking = undefined;
        });
      await state.taking;
    }
  }

  /**
   * Takes a lease from the store: leased tokens, or the time the bucket is empty until.
   * Each failed condition brings the current TAT, so the next attempt is exact; after
   * `maxAttempts` (other containers kept emptying the bucket meanwhile) the key is refused
   * for a millisecond, which sends the next request back to the store.
   */
  private async takeLease(bucket: BucketKey, state: KeyState, math: Bucket): Promise<void> {
    // One `now` for the attempts while the bucket has room: a full bucket's take that another
    // container beat to it (its TAT now after this `now`) is retried as a partial one against
    // the same `now`, which it then passes, instead of racing the other writers' clocks again
    // (a later `now` could find the bucket full again and lose the same way). An older `now`
    // only makes the bucket look emptier, never fuller; when it looks empty, the clock is read
    // again before the key is refused.
    let nowMs = this.now();
    let nowUs = Math.floor(nowMs * US_PER_MS);
    for (let attempt = 0; attempt < this.maxAttempts; attempt += 1) {
      let available = math.available(state.tatUs, nowUs);
      if (available < 1 && this.now() > nowMs) {
        nowMs = this.now();
        nowUs = Math.floor(nowMs * US_PER_MS);
        available = math.available(state.tatUs, nowUs);
      }
      if (available < 1) {
        state.emptyUntilMs = nowMs + Math.ceil(math.untilOneToken(state.tatUs, nowUs) / US_PER_MS);
        return;
      }
      const wanted = Math.ceil(state.demand.rate(nowMs) * LEASE_SPAN_S);
      const count = Math.min(available, math.maxLease, Math.max(1, wanted));
      const cost = math.cost(count);
      const full = state.tatUs === undefined || state.tatUs <= nowUs;
      const result = await this.store.take(bucket, {
        from: full ? 'full' : 'partial',
        nowUs,
        costUs: cost,
        maxTatUs: nowUs + math.windowUs - cost,
        forgetAfterUs: nowUs + math.windowUs,
      });
      state.tatUs = result.tatUs;
      if (result.taken) {
        state.leased = count;
        state.leaseUntilMs = nowMs + this.leaseTtlMs;
        return;
      }
    }
    state.emptyUntilMs = this.now() + 1;
  }

  private stateOf(bucket: BucketKey): KeyState {
    const id = `${bucket.instanceId}\u0000${bucket.keyId}`;
    let state = this.keys.get(id);
    if (state) {
      this.keys.delete(id); // most recently used last
    } else {
      state = {
        leased: 0,
        leaseUntilMs: 0,
        tatUs: undefined,
        emptyUntilMs: 0,
        fallbackUntilMs: 0,
        localTatUs: undefined,
        demand: new DemandMeter(),
        taking: undefined,
      };
      if (this.keys.size >= this.maxKeys) {
        const oldest = this.keys.keys().next();
        if (!oldest.done) this.keys.delete(oldest.value);
      }
    }
    this.keys.set(id, state);
    return state;
  }
}

function refused(waitMs: number): Admission {
  return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1_000)) };
}

/** The fallback while the store fails: the same bucket, kept by this container alone. */
function admitLocally(state: KeyState, math: Bucket, nowMs: number): Admission {
  const nowUs = Math.floor(nowMs * US_PER_MS);
  if (math.available(state.localTatUs, nowUs) < 1) {
    return refused(math.untilOneToken(state.localTatUs, nowUs) / US_PER_MS);
  }
  state.localTatUs = (latest(state.localTatUs, nowUs) ?? nowUs) + math.cost(1);
  return { admitted: true };
}

function latest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  return b === undefined ? a : Math.max(a, b);
}
