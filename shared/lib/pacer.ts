import { sleep } from './time-budget.js';

/**
 * Spaces calls at most `perSecond` a second (in this container): each caller reserves the
 * next free slot and waits for it. With N containers at most, each paced at rate/N, the
 * whole stays under the rate.
 */
export class Pacer {
  private next = 0;
  private readonly intervalMs: number;

  constructor(
    perSecond: number,
    private readonly now: () => number = Date.now,
  ) {
    this.intervalMs = 1000 / perSecond;
  }

  async wait(): Promise<void> {
    const now = this.now();
    const slot = Math.max(now, this.next);
    this.next = slot + this.intervalMs;
    if (slot > now) await sleep(slot - now);
  }
}
