import { describe, expect, it } from '@jest/globals';
import { deliveryBatches } from '../../../shared/adapters/delivery-queue.js';
import type { DeliveryMessage } from '../../../shared/domain/webhooks/delivery.js';

const message = (n: number, padding = 0): DeliveryMessage => ({
  instance_id: 'acme',
  webhook_id: '0123456789abcdef01234567',
  event: {
    id: `msg_${String(n).padStart(32, '0')}`,
    type: 'person.created',
    timestamp: '2026-11-24T12:00:00.000Z',
    data: { person_id: String(n), pad: 'x'.repeat(padding) },
  },
});

describe('deliveryBatches', () => {
  it('puts at most 10 messages in a batch, in order', () => {
    const batches = deliveryBatches(Array.from({ length: 23 }, (_, n) => message(n)));
    expect(batches.map((batch) => batch.length)).toEqual([10, 10, 3]);
    expect(
      batches.flat().map((body) => (JSON.parse(body) as DeliveryMessage).event.data.person_id),
    ).toEqual(Array.from({ length: 23 }, (_, n) => String(n)));
  });

  it('keeps each batch under SQS 256 KB, whatever the events weigh', () => {
    const batches = deliveryBatches(Array.from({ length: 10 }, (_, n) => message(n, 60_000)));
    expect(batches.length).toBeGreaterThan(1);
    for (const batch of batches) {
      expect(batch.reduce((sum, body) => sum + Buffer.byteLength(body), 0)).toBeLessThan(
        256 * 1024,
      );
    }
    expect(batches.flat()).toHaveLength(10);
  });
});
