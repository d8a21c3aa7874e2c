import { describe, expect, it } from '@jest/globals';
import { timeframeRange, TIMEFRAMES } from '../../../shared/domain/people/timeframes.js';

// Wednesday 2026-04-15 10:30 UTC (20:30 in Sydney, 03:30 in Los Angeles).
const NOW = Date.parse('2026-04-15T10:30:00.000Z');

describe('timeframeRange', () => {
  it('ends rolling periods now and counts them back in hours', () => {
    expect(timeframeRange('last-24-hours', NOW, 'UTC')).toEqual({
      from: '2026-04-14T10:30:00.000Z',
    });
    expect(timeframeRange('last-7-days', NOW, 'Australia/Sydney')).toEqual({
      from: '2026-04-08T10:30:00.000Z',
    });
    expect(timeframeRange('all', NOW, 'UTC')).toEqual({});
  });

  it("reckons calendar periods in the instance's time zone", () => {
    expect(timeframeRange('today', NOW, 'UTC')).toEqual({ from: '2026-04-15T00:00:00.000Z' });
    // Sydney is 10 hours ahead in April (standard time): its day began at 14:00 UTC.
    expect(timeframeRange('today', NOW, 'Australia/Sydney')).toEqual({
      from: '2026-04-14T14:00:00.000Z',
    });
    // Los Angeles is 7 hours behind (daylight time): 03:30 on the 15th there; the 14th began at 07:00 UTC.
    expect(timeframeRange('yesterday', NOW, 'America/Los_Angeles')).toEqual({
      from: '2026-04-14T07:00:00.000Z',
      to: '2026-04-15T07:00:00.000Z',
    });
    // Weeks begin on Monday (the 13th).
    expect(timeframeRange('this-week', NOW, 'UTC')).toEqual({ from: '2026-04-13T00:00:00.000Z' });
    expect(timeframeRange('last-month', NOW, 'UTC')).toEqual({
      from: '2026-03-01T00:00:00.000Z',
      to: '2026-04-01T00:00:00.000Z',
    });
    expect(timeframeRange('last-quarter', NOW, 'UTC')).toEqual({
      from: '2026-01-01T00:00:00.000Z',
      to: '2026-04-01T00:00:00.000Z',
    });
    expect(timeframeRange('this-year', NOW, 'Europe/Paris')).toEqual({
      from: '2025-12-31T23:00:00.000Z',
    });
  });

  it('crosses a daylight-saving change and a year boundary', () => {
    // Sydney's daylight time ended on 5 April 2026: March began at UTC+11.
    expect(timeframeRange('last-month', NOW, 'Australia/Sydney')).toEqual({
      from: '2026-02-28T13:00:00.000Z',
      to: '2026-03-31T13:00:00.000Z',
    });
    const january = Date.parse('2026-01-10T12:00:00.000Z');
    expect(timeframeRange('last-month', january, 'UTC')).toEqual({
      from: '2025-12-01T00:00:00.000Z',
      to: '2026-01-01T00:00:00.000Z',
    });
    expect(timeframeRange('last-quarter', january, 'UTC')).toEqual({
      from: '2025-10-01T00:00:00.000Z',
      to: '2026-01-01T00:00:00.000Z',
    });
  });

  it('gives every period a range that ends no later than now and begins before it', () => {
    for (const timeframe of TIMEFRAMES) {
      const { from, to } = timeframeRange(timeframe, NOW, 'Pacific/Auckland');
      if (from !== undefined) expect(Date.parse(from)).toBeLessThan(NOW);
      if (to !== undefined) expect(Date.parse(to)).toBeLessThanOrEqual(NOW);
    }
  });
});
