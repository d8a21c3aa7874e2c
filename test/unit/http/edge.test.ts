import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  EDGE_MAX_BODY_BYTES,
  GATEWAY_MAX_HEADER_BYTES,
  LAMBDA_MAX_EVENT_BYTES,
  numbersAbove,
} from '../../../shared/edge.js';
import { proxyEvent } from '../../../local/http-adapter.js';

describe('the WAF pattern of numbers above a limit', () => {
  it('matches exactly the numbers above the limit, with or without leading zeros', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 100_000_000 }),
        fc.nat({ max: 3 }),
        (limit, value, zeros) => {
          const pattern = new RegExp(numbersAbove(limit));
          expect(pattern.test('0'.repeat(zeros) + String(value))).toBe(value > limit);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('is exact at the edge limit', () => {
    const pattern = new RegExp(numbersAbove(EDGE_MAX_BODY_BYTES));
    expect(pattern.test(String(EDGE_MAX_BODY_BYTES))).toBe(false);
    expect(pattern.test(String(EDGE_MAX_BODY_BYTES + 1))).toBe(true);
    expect(pattern.test('12345678901234')).toBe(true);
    expect(pattern.test('4500000 ')).toBe(false);
    // WAF takes patterns of at most 512 characters.
    expect(numbersAbove(EDGE_MAX_BODY_BYTES).length).toBeLessThanOrEqual(512);
  });
});

describe('the edge limit', () => {
  it('always fits a Lambda invocation: the largest body, base64, with the largest headers', () => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    // Headers up to the gateway's cap, of characters JSON escapes the most.
    headers['x-padding'] = '"'.repeat(GATEWAY_MAX_HEADER_BYTES);
    const event = proxyEvent({
      method: 'POST',
      url: '/v1/transactional/send?x=' + '%22'.repeat(500),
      headers,
      body: Buffer.alloc(EDGE_MAX_BODY_BYTES, 0x01),
      requestId: 'r',
      resource: '/v1/transactional/send',
    });
    expect(Buffer.byteLength(JSON.stringify(event))).toBeLessThan(LAMBDA_MAX_EVENT_BYTES);
  });
});
