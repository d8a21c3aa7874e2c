/**
 * A small bounded cache with per-entry expiry, for read-mostly lookups kept in a Lambda
 * container (API keys, instance configuration). The oldest entry goes first when it is full.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly pending = new Map<string, Promise<V>>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Forgets every entry (loads under way still land). */
  clear(): void {
    this.entries.clear();
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expires: this.now() + ttlMs });
  }

  /**
   * The loader's value, cached anew whatever the cache holds; concurrent reloads of one key
   * share a single load.
   */
  async reload(key: string, ttlMs: number | ((value: V) => number), load: () => Promise<V>) {
    this.entries.delete(key);
    return this.getOrLoad(key, ttlMs, load);
  }

  /**
   * The cached value, or the loader's. Concurrent misses for one key share a single load;
   * `ttlMs` may depend on the value (shorter for "not found", say).
   */
  async getOrLoad(key: string, ttlMs: number | ((value: V) => number), load: () => Promise<V>) {
    const entry = this.entries.get(key);
    if (entry && entry.expires > this.now()) return entry.value;
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const loading = load().then(
      (value) => {
        this.pending.delete(key);
        this.set(key, value, typeof ttlMs === 'number' ? ttlMs : ttlMs(value));
        return value;
      },
      (error: unknown) => {
        this.pending.delete(key);
        throw error;
      },
    );
    this.pending.set(key, loading);
    return loading;
  }
}
