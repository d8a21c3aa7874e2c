import { describe, expect, it } from '@jest/globals';
import { slicesOf } from '../../../shared/lib/bounded.js';

describe('slicesOf', () => {
  it('cuts items into slices of the size, the last one shorter, none when empty', () => {
    expect(slicesOf([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(slicesOf([1, 2, 3, 4], 2)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(slicesOf([], 25)).toEqual([]);
  });
});
