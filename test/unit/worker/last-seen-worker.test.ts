import { describe, expect, it } from '@jest/globals';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBRecord } from 'aws-lambda';
import { latestTouch, type LastSeenStore } from '../../../shared/domain/activities/last-seen.js';
import { lastSeenWorker } from '../../../shared/worker/last-seen-runtime.js';
import { keepsStreamRecord, STREAM_WORKERS } from '../../../shared/workers.js';

const ALICE = 'a'.repeat(24);
const BOB = 'b'.repeat(24);
const context = { getRemainingTimeInMillis: () => 30_000 } as unknown as Context;

/** People's last seen, moved as the DynamoDB store's condition does (forward only). */
class MemoryLastSeen implements LastSeenStore {
  readonly seen = new Map<string, { at: string; place?: string }>();
  calls = 0;
  failFor: string | undefined;

  touch(instanceId: string, personId: string, at: string, place?: string) {
    this.calls += 1;
    if (personId === this.failFor) return Promise.reject(new Error('throttled'));
    const key = `${instanceId}/${personId}`;
    const current = this.seen.get(key);
    if (current && current.at >= at) return Promise.resolve(false);
    this.seen.set(key, { at, ...(place ? { place } : { place: current?.place }) });
    return Promise.resolve(true);
  }
}

let sequence = 0;
function record(
  person: string,
  created: string,
  image: Record<string, unknown> = { touch: true },
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE' = 'INSERT',
): DynamoDBRecord {
  sequence += 1;
  const keys = { pk: `shop#P#${person}`, sk: `${created}#${sequence}` };
  return {
    eventName,
    dynamodb: {
      Keys: marshall(keys),
      NewImage: marshall({ ...keys, created_at: created, ...image }),
      SequenceNumber: String(sequence),
      ApproximateCreationDateTime: 1,
    },
  } as unknown as DynamoDBRecord;
}

const run = (store: LastSeenStore, records: DynamoDBRecord[]) =>
  lastSeenWorker(store)({ Records: records }, context);

describe('last seen from the activities stream', () => {
  it('takes the latest touch of a person and its place, whatever the order', () => {
    expect(
      latestTouch([
        { created_at: '2026-01-02T00:00:00.000Z', touch: true, location: { city: 'Lyon' } },
        {
          created_at: '2026-01-03T00:00:00.000Z',
          touch: true,
          location: { city: 'Sydney', region: 'New South Wales', country: 'Australia' },
        },
        { created_at: '2026-01-04T00:00:00.000Z' },
        { created_at: '2026-01-01T00:00:00.000Z', touch: true },
      ]),
    ).toEqual({ at: '2026-01-03T00:00:00.000Z', place: 'Sydney, New South Wales, Australia' });
    expect(latestTouch([{ created_at: '2026-01-04T00:00:00.000Z' }, undefined])).toBeUndefined();
  });

  it('moves each person once per batch, to their latest touch; untracked changes are ignored', async () => {
    const store = new MemoryLastSeen();
    const answer = await run(store, [
      record(ALICE, '2026-01-02T00:00:00.000Z', { touch: true, location: { city: 'Lyon' } }),
      record(BOB, '2026-01-05T00:00:00.000Z'),
      record(ALICE, '2026-01-01T00:00:00.000Z'),
      record(ALICE, '2026-01-09T00:00:00.000Z', {}),
      record(BOB, '2026-01-08T00:00:00.000Z', { touch: true }, 'MODIFY'),
    ]);
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(store.calls).toBe(2);
    expect(store.seen.get(`shop/${ALICE}`)).toEqual({
      at: '2026-01-02T00:00:00.000Z',
      place: 'Lyon',
    });
    expect(store.seen.get(`shop/${BOB}`)).toEqual({ at: '2026-01-05T00:00:00.000Z' });
  });

  it('never goes back: a redelivered batch and a late older touch leave last seen as it was', async () => {
    const store = new MemoryLastSeen();
    const newer = record(ALICE, '2026-01-03T00:00:00.000Z', {
      touch: true,
      location: { city: 'Lyon' },
    });
    await run(store, [newer]);
    await run(store, [newer, record(ALICE, '2026-01-01T00:00:00.000Z')]);
    await run(store, [record(ALICE, '2026-01-02T00:00:00.000Z', { touch: true })]);
    expect(store.seen.get(`shop/${ALICE}`)).toEqual({
      at: '2026-01-03T00:00:00.000Z',
      place: 'Lyon',
    });
  });

  it('reports the first record of a person whose move failed, so the batch is retried from it', async () => {
    const store = new MemoryLastSeen();
    store.failFor = BOB;
    const records = [
      record(ALICE, '2026-01-02T00:00:00.000Z'),
      record(BOB, '2026-01-03T00:00:00.000Z'),
      record(BOB, '2026-01-04T00:00:00.000Z'),
    ];
    const answer = await run(store, records);
    expect(answer).toEqual({
      batchItemFailures: [{ itemIdentifier: records[1]?.dynamodb?.SequenceNumber }],
    });
    expect(store.seen.get(`shop/${ALICE}`)).toEqual({ at: '2026-01-02T00:00:00.000Z' });
  });

  it("is fed only the activities table's new touches (Lambda's event filter and the local poller agree)", () => {
    const worker = STREAM_WORKERS.find((w) => w.function === 'last-seen-worker');
    expect(worker).toMatchObject({ table: 'activities', insertedWith: 'touch' });
    if (!worker) return;
    expect(keepsStreamRecord(worker, record(ALICE, '2026-01-02T00:00:00.000Z'))).toBe(true);
    expect(keepsStreamRecord(worker, record(ALICE, '2026-01-02T00:00:00.000Z', {}))).toBe(false);
    expect(
      keepsStreamRecord(
        worker,
        record(ALICE, '2026-01-02T00:00:00.000Z', { touch: true }, 'MODIFY'),
      ),
    ).toBe(false);
  });
});
