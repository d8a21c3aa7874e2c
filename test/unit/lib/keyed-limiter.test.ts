import { describe, expect, it } from '@jest/globals';
import { KeyedLimiter } from '../../../shared/lib/keyed-limiter.js';

/** A call that ends when told to. */
function held() {
  let end: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  return { ended, end };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedLimiter', () => {
  it('runs at most the limit per key at once, the others in turn as calls end', async () => {
    const limiter = new KeyedLimiter(2);
    const calls = Array.from({ length: 5 }, () => held());
    const started: number[] = [];
    const runs = calls.map((call, n) =>
      limiter.run('a', async () => {
        started.push(n);
        await call.ended;
        return n;
      }),
    );
    await tick();
    expect(started).toEqual([0, 1]);
    expect(limiter.running('a')).toBe(2);
    calls[1]?.end();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    expect(limiter.running('a')).toBe(2);
    for (const call of calls) call.end();
    await expect(Promise.all(runs)).resolves.toEqual([0, 1, 2, 3, 4]);
    expect(limiter.running('a')).toBe(0);
  });

  it('keeps keys apart, and frees a slot when a call fails', async () => {
    const limiter = new KeyedLimiter(1);
    const slow = held();
    const first = limiter.run('a', () => slow.ended);
    let other = false;
    await limiter.run('b', () => {
      other = true;
      return Promise.resolve();
    });
    expect(other).toBe(true);
    slow.end();
    await first;
    await expect(limiter.run('a', () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    await expect(limiter.run('a', () => Promise.resolve('again'))).resolves.toBe('again');
    expect(limiter.running('a')).toBe(0);
  });

  it('tryRun: runs in a slot freed within the wait, gives up (running nothing) past it', async () => {
    const limiter = new KeyedLimiter(1);
    const slow = held();
    const first = limiter.run('a', () => slow.ended);
    let ran = 0;
    const work = () => {
      ran += 1;
      return Promise.resolve('done');
    };
    await expect(limiter.tryRun('a', work, 30)).resolves.toBeUndefined();
    expect(ran).toBe(0);
    const waiting = limiter.tryRun('a', work, 5_000);
    slow.end();
    await first;
    await expect(waiting).resolves.toEqual({ value: 'done' });
    expect(ran).toBe(1);
    expect(limiter.running('a')).toBe(0);
    await expect(limiter.tryRun('a', work, 0)).resolves.toEqual({ value: 'done' });
  });
});
