import { sleep } from './time-budget.js';

/**
 * Keeps calls under `perSecond` a second (in this container), as a token bucket holding one
 * second of the rate (GCRA, "virtual scheduling"): up to that many calls go at once after a
 * quiet second, and then each waits for its slot, one interval after the one before it. A
 * sustained run never passes the rate; a burst is at most one second's worth, which is what a
 * rate per second allows (SES: "short bursts"). With N containers at most, each paced at rate/N,
 * the whole keeps to the rate.
 */
export class Pacer {
  /** When the next call would go if the calls were evenly spaced (the theoretical arrival). */
  private next = 0;
  private readonly intervalMs: number;
  /** How far ahead of its even slot a call may go: the bucket's capacity less one. */
  private readonly toleranceMs: number;

  constructor(
    perSecond: number,
    private readonly now: () => number = Date.now,
    private readonly pause: (ms: number) => Promise<void> = sleep,
  ) {
    this.intervalMs = 1000 / perSecond;
    const burst = Math.max(1, Math.floor(perSecond));
    this.toleranceMs = (burst - 1) * this.intervalMs;
  }

  async wait(): Promise<void> {
    const now = this.now();
    const even = Math.max(now, this.next);
    this.next = even + this.intervalMs;
    const slot = even - this.toleranceMs;
    if (slot > now) await this.pause(slot - now);
  }
}
