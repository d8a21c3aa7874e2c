import { describe, expect, it } from '@jest/globals';
import { fc, test } from '@fast-check/jest';
import { idTime, isId, newId } from '../../../shared/domain/ids.js';

describe('IDs', () => {
  it('are 24 lowercase hex characters', () => {
    for (let i = 0; i < 1000; i += 1) expect(newId()).toMatch(/^[0-9a-f]{24}$/);
  });

  it('sort in the order they were made, within one millisecond too', () => {
    const now = Date.now();
    const ids = Array.from({ length: 5000 }, () => newId(now));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  let latest = 0;
  test.prop([fc.array(fc.integer({ min: 0, max: 10 ** 6 }), { minLength: 2, maxLength: 50 })])(
    'carry their creation time and sort by it',
    (gaps) => {
      // Ahead of every ID made so far (IDs never go back in time), however long the tests
      // before this one took.
      latest = Math.max(latest, Date.now() + 1000);
      const times = gaps.map((gap) => (latest += gap));
      const ids = times.map((time) => newId(time));
      expect(ids.map((id) => idTime(id).getTime())).toEqual(times);
      for (let i = 1; i < ids.length; i += 1)
        expect((ids[i - 1] ?? '') < (ids[i] ?? '')).toBe(true);
    },
  );

  it('recognises IDs', () => {
    expect(isId(newId())).toBe(true);
    expect(isId('65a0000000000000000000C1')).toBe(false);
    expect(isId(42)).toBe(false);
  });
});
