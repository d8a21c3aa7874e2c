import { describe, expect, it } from '@jest/globals';
import { IngestWorkerEnv } from '../../../shared/config/env.js';

const atOnce = IngestWorkerEnv.shape.INGEST_MESSAGES_AT_ONCE;

describe('INGEST_MESSAGES_AT_ONCE', () => {
  it('applies two messages of a batch at once unless set', () => {
    expect(atOnce.parse(undefined)).toBe(2);
  });

  it('takes a number from 1 to 10, `true` (all at once) or `false` (one after the other)', () => {
    expect(atOnce.parse('1')).toBe(1);
    expect(atOnce.parse('10')).toBe(10);
    expect(atOnce.parse('true')).toBe(true);
    expect(atOnce.parse('false')).toBe(false);
  });

  it('refuses anything else', () => {
    for (const value of ['0', '11', '2.5', 'yes', '']) {
      expect(atOnce.safeParse(value).success).toBe(false);
    }
  });
});
