import { TtlCache } from '../../lib/ttl-cache.js';
import { claimId, type ClaimHints, type ClaimKey } from './merge-engine.js';

/** Hints a container keeps at most (about 150 bytes each). */
const MAX_HINTS = 20_000;
/** How long a hint is kept unless a later read or write replaces or drops it. */
const HINT_TTL_MS = 10 * 60_000;

/**
 * The owners of key values a container has seen, per instance, for `ClaimHints`: a merge that
 * finds every key value of its records here reads no claim, only the records (which it reads
 * anyway, and which confirm or contradict each hint). Kept only for `covered` fields.
 */
export class ClaimHintCache {
  private readonly owners: TtlCache<string>;

  constructor(
    private readonly covered: ReadonlySet<string>,
    maxEntries = MAX_HINTS,
    private readonly ttlMs = HINT_TTL_MS,
    now: () => number = Date.now,
  ) {
    this.owners = new TtlCache(maxEntries, now);
  }

  /** The hints of one instance. */
  of(instanceId: string): ClaimHints {
    const entry = (key: ClaimKey) => `${instanceId}\u0000${claimId(key.field, key.value)}`;
    return {
      get: (key) => (this.covered.has(key.field) ? this.owners.get(entry(key)) : undefined),
      set: (key, owner) => {
        if (this.covered.has(key.field)) this.owners.set(entry(key), owner, this.ttlMs);
      },
      delete: (key) => {
        this.owners.delete(entry(key));
      },
    };
  }
}
