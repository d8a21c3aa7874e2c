/**
 * A version number read at most once every `everyMs` (one read in flight at a time), and the
 * caches that must be dropped when it moves: a change made anywhere (a key revoked, a
 * signing key rotated) reaches every warm container within `everyMs` of its next request,
 * for one small read per container per interval.
 */
export class VersionWatch {
  private version: number | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly read: () => Promise<number>,
    private readonly everyMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Calls `drop` whenever the version is seen to move. */
  onChange(drop: () => void): void {
    this.listeners.push(drop);
  }

  /** Reads the version if the last read is older than the interval. */
  async check(): Promise<void> {
    if (this.now() - this.checkedAt < this.everyMs) return;
    this.reading ??= this.read()
      .then((version) => {
        if (this.version !== undefined && version !== this.version) {
          for (const drop of this.listeners) drop();
        }
        this.version = version;
        this.checkedAt = this.now();
      })
      .finally(() => {
        this.reading = undefined;
      });
    await this.reading;
  }
}
