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

  /**
   * `work` when a slot of `key` is free within `waitMs`; `undefined` (and `work` not run)
   * when none was.
   */
  async tryRun<T>(
    key: string,
    work: () => Promise<T>,
    waitMs: number,
  ): Promise<{ value: T } | undefined> {
    const state = this.keys.get(key);
    if (state && state.running >= this.limit) {
      const queue = state.waiting;
      let entry: (() => void) | undefined;
      const got = await new Promise<boolean>((resolve) => {
        entry = () => {
          resolve(true);
        };
        queue.push(entry);
        setTimeout(() => {
          resolve(false);
        }, waitMs).unref();
      });
      if (!got) {
        const at = queue.indexOf(entry as () => void);
        if (at >= 0) {
          queue.splice(at, 1);
          return undefined;
        }
        // Handed a slot as the wait ended: it is ours (`running` was kept for us).
      }
      return { value: await this.runHeld(key, work) };
    }
    return { value: await this.run(key, work) };
  }

  /** `work` in a slot already handed over to the caller. */
  private async runHeld<T>(key: string, work: () => Promise<T>): Promise<T> {
    const state = this.keys.get(key);
    try {
      return await work();
    } finally {
      const next = state?.waiting.shift();
      if (next) next();
      else if (state) {
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
