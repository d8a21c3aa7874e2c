/**
 * At most `limit` calls at once per key, in the process: a call over the limit waits for one
 * of its key's to end (first come, first served). Keys with nothing running or waiting take
 * no memory.
 */
export class KeyedLimiter {
  private readonly keys = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(private readonly limit: number) {}

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    let state = this.keys.get(key);
    if (!state) {
      state = { running: 0, waiting: [] };
      this.keys.set(key, state);
    }
    if (state.running >= this.limit) {
      const queue = state.waiting;
      // The slot is handed over by the call that ends (`running` stays as it is).
      await new Promise<void>((resolve) => queue.push(resolve));
    } else {
      state.running += 1;
    }
    try {
      return await work();
    } finally {
      const next = state.waiting.shift();
      if (next) next();
      else {
        state.running -= 1;
        if (state.running === 0) this.keys.delete(key);
      }
    }
  }

  /** Calls of a key running now (for tests). */
  running(key: string): number {
    return this.keys.get(key)?.running ?? 0;
  }
}
