import { describe, expect, it } from '@jest/globals';
import { Pacer } from '../../../shared/lib/pacer.js';

/** A pacer on a clock that only moves when told; each wait asked for is noted, not slept. */
function pacerAt(perSecond: number) {
  let clock = 1_000_000;
  const waits: number[] = [];
  const pacer = new Pacer(
    perSecond,
    () => clock,
    (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
  );
  return {
    waits,
    advance: (ms: number) => {
      clock += ms;
    },
    take: async (count: number) => {
      for (let n = 0; n < count; n += 1) await pacer.wait();
    },
  };
}

describe('Pacer', () => {
  it("lets one second's worth go at once, then spaces the rest at the rate", async () => {
    const pacer = pacerAt(4);
    await pacer.take(6);
    // Four at once (one second of 4 a second), then one every 250 ms.
    expect(pacer.waits).toEqual([250, 500]);
  });

  it('never passes the rate over a sustained run', async () => {
    const pacer = pacerAt(10);
    await pacer.take(30);
    // Ten at once, then the other 20 at 100 ms each: 30 calls over 2 s, never more than
    // 10 + 10 in any second.
    expect(pacer.waits).toHaveLength(20);
    expect(pacer.waits.at(-1)).toBe(2000);
  });

  it('refills its burst only as time passes', async () => {
    const pacer = pacerAt(4);
    await pacer.take(4);
    pacer.advance(500); // two slots' worth
    await pacer.take(3);
    expect(pacer.waits).toEqual([250]);
  });

  it('spaces every call under one a second (no burst)', async () => {
    const pacer = pacerAt(0.5);
    await pacer.take(3);
    expect(pacer.waits).toEqual([2000, 4000]);
  });
});
