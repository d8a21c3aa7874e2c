import { describe, expect, it } from '@jest/globals';
import {
  applyIngest,
  type IngestMessage,
  type IngestPorts,
} from '../../../shared/domain/ingest/ingest.js';
import type { RequestStore, StartedAs } from '../../../shared/domain/ingest/request-status.js';
import { testTenant } from '../fixtures.js';

const message: IngestMessage = {
  v: 1,
  request_id: 'r1',
  instance_id: 'i1',
  data_source: 'Web',
  kind: 'activities-create',
  accepted_at: '2026-11-28T10:00:00.000Z',
  records: 1,
  body: { activities: [] },
};

/**
 * Ports whose tenant read and request start each wait until the other has begun: applying
 * gets past them only if it makes both calls before awaiting either.
 */
function meetingPorts(started: StartedAs) {
  const called: string[] = [];
  const applied: string[] = [];
  let bothCalled = () => {};
  const together = new Promise<void>((resolve) => (bothCalled = resolve));
  const meet = async (name: string) => {
    called.push(name);
    if (called.length === 2) bothCalled();
    let timer: NodeJS.Timeout | undefined;
    const alone = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`${name} waited alone`));
      }, 2000);
    });
    await Promise.race([together, alone]).finally(() => {
      clearTimeout(timer);
    });
  };
  const requests = {
    start: async () => {
      await meet('start');
      return started;
    },
    ledger: () => ({}),
    finish: () => Promise.resolve(true),
  } as unknown as RequestStore;
  const ports = {
    requests,
    tenantOf: async () => {
      await meet('tenant');
      return testTenant();
    },
    apply: {
      'activities-create': () => {
        applied.push(message.request_id);
        return Promise.resolve({ activities: [] });
      },
    },
    requeue: () => Promise.resolve(),
  } as unknown as IngestPorts;
  return { ports, called, applied };
}

describe('applying a queued request', () => {
  it('reads its tenant while it marks the request started: one round trip before the records, not two', async () => {
    const { ports, called, applied } = meetingPorts('first');
    await applyIngest(message, ports);
    expect(called.sort()).toEqual(['start', 'tenant']);
    expect(applied).toEqual(['r1']);
  });

  it('applies nothing of a request an earlier delivery finished, though its tenant was read', async () => {
    const { ports, called, applied } = meetingPorts('done');
    await applyIngest(message, ports);
    expect(called.sort()).toEqual(['start', 'tenant']);
    expect(applied).toEqual([]);
  });
});
