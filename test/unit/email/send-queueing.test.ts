import { describe, expect, it } from '@jest/globals';
import { ServiceUnavailableError } from '../../../shared/domain/errors.js';
import { MaybeQueuedError } from '../../../shared/domain/ingest/ingest.js';
import { NOT_QUEUED, sendTransactional } from '../../../shared/domain/email/send.js';
import { MemoryPeopleStore } from '../people/memory-people-store.js';
import { ASSET, sendContext } from './send-context.js';

/**
 * Queueing and recording the emails of a send when the queue or the emails table fails:
 * an entry is answered `queued` only if its message is in the queue and its record says so,
 * and no record says `queued` without a message behind it.
 */
const emails = [
  { fields: { 'str::email': 'ann@example.com' } },
  { fields: { 'str::email': 'bob@example.com' } },
];

async function refusal(promise: Promise<unknown>): Promise<ServiceUnavailableError> {
  const error = await promise.then(
    () => undefined,
    (cause: unknown) => cause,
  );
  expect(error).toBeInstanceOf(ServiceUnavailableError);
  return error as ServiceUnavailableError;
}

describe('transactional send: the queue and the store failing', () => {
  it('answers emails the queue refused as not applied, and records none of them queued, even when the store fails too', async () => {
    const { ports, records, jobs } = sendContext(new MemoryPeopleStore(), {
      queue: { send: () => Promise.reject(new ServiceUnavailableError('queue down')) },
    });
    let storeCalls = 0;
    const failingStore = {
      ...ports,
      emails: {
        ...ports.emails,
        create: (...args: Parameters<typeof ports.emails.create>) => {
          storeCalls += 1;
          return ports.emails.create(...args);
        },
      },
    };
    const error = await refusal(sendTransactional({ asset: ASSET, emails }, failingStore));
    expect(error.details?.map((detail) => detail.status)).toEqual(['not_applied', 'not_applied']);
    expect(jobs).toEqual([]);
    expect([...records.values()].filter((record) => record.status === 'queued')).toEqual([]);
    expect(storeCalls).toBeLessThanOrEqual(1);
  });

  it('records an email whose queueing is uncertain as failed, so that a message behind it sends nothing', async () => {
    const { ports, records } = sendContext(new MemoryPeopleStore(), {
      queue: {
        send: (jobs, done) => {
          done(jobs[0]?.message_id ?? '');
          return Promise.reject(new MaybeQueuedError('the queue did not confirm the request'));
        },
      },
    });
    const error = await refusal(sendTransactional({ asset: ASSET, emails }, ports));
    expect(error.details).toEqual([
      expect.objectContaining({ index: 0, status: 'queued', message_id: expect.any(String) }),
      expect.objectContaining({ index: 1, status: 'not_applied' }),
    ]);
    const stored = [...records.values()];
    expect(stored.map((record) => record.status).sort()).toEqual(['failed', 'queued']);
    expect(stored.find((record) => record.status === 'failed')?.error).toBe(NOT_QUEUED);
  });

  it('answers not applied when the records cannot be written, though the messages were queued', async () => {
    const { ports, jobs } = sendContext(new MemoryPeopleStore(), {
      emails: { create: () => Promise.reject(new ServiceUnavailableError('store down')) },
    });
    const before = Date.now();
    const error = await refusal(sendTransactional({ asset: ASSET, emails }, ports));
    expect(error.details?.map((detail) => detail.status)).toEqual(['not_applied', 'not_applied']);
    // Those messages name the moment after which the worker drops them (never sent).
    expect(jobs).toHaveLength(2);
    for (const job of jobs) expect(job.record_by).toBeGreaterThan(before);
  });
});

describe('transactional send: chunks queued while the next are built', () => {
  const many = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ fields: { 'str::email': `p${i}@example.com` } }));

  it('builds the next chunk while the queue still holds the first one open', async () => {
    const calls: number[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { ports, jobs, records } = sendContext(new MemoryPeopleStore(), {
      queue: {
        send: async (queued, done) => {
          calls.push(queued.length);
          // The first chunk's queueing waits until a later chunk has reached the queue.
          if (calls.length === 1) await held;
          else release();
          jobs.push(...queued);
          for (const job of queued) done(job.message_id);
        },
      },
    });
    const answer = await sendTransactional({ asset: ASSET, emails: many(60) }, ports);
    expect(calls).toEqual([25, 25, 10]);
    expect(answer.emails.every((entry) => entry.email_status === 'queued')).toBe(true);
    expect(jobs).toHaveLength(60);
    expect([...records.values()].filter((record) => record.status === 'queued')).toHaveLength(60);
  });

  it('answers each entry as its own chunk ended when one chunk fails among others', async () => {
    let call = 0;
    const { ports, jobs, records } = sendContext(new MemoryPeopleStore(), {
      queue: {
        send: async (queued, done) => {
          call += 1;
          // The second chunk is refused after the third has been built and started.
          if (call === 2) {
            await new Promise((resolve) => setTimeout(resolve, 20));
            throw new ServiceUnavailableError('queue down');
          }
          jobs.push(...queued);
          for (const job of queued) done(job.message_id);
        },
      },
    });
    const error = await refusal(sendTransactional({ asset: ASSET, emails: many(60) }, ports));
    const statuses = error.details?.map((detail) => detail.status) ?? [];
    expect(statuses.slice(0, 25)).toEqual(Array.from({ length: 25 }, () => 'queued'));
    expect(statuses.slice(25, 50)).toEqual(Array.from({ length: 25 }, () => 'not_applied'));
    // Whatever became of the third chunk, the answer and the store agree on each entry.
    const queuedIds = new Set(jobs.map((job) => job.message_id));
    for (const detail of error.details ?? []) {
      const id = detail.message_id;
      if (detail.status === 'queued') {
        expect(queuedIds.has(String(id))).toBe(true);
        expect(records.get(String(id))?.status).toBe('queued');
      } else expect(id).toBeUndefined();
    }
    expect([...records.values()].filter((record) => record.status === 'queued')).toHaveLength(
      statuses.filter((status) => status === 'queued').length,
    );
  });
});

describe('transactional send: attachments', () => {
  it('stores an attachment every recipient shares once per request, and every email names that one copy', async () => {
    const stored: Buffer[][] = [];
    const { ports, jobs } = sendContext(new MemoryPeopleStore(), {
      queue: {
        putAttachments: (_instanceId, contents) => {
          stored.push(contents);
          return Promise.resolve(contents.map((_, i) => `attachments/${i}`));
        },
      },
    });
    const content = Buffer.from('%PDF-1.4 an invoice').toString('base64');
    const recipients = Array.from({ length: 20 }, (_, i) => ({
      fields: { 'str::email': `r${i}@example.com` },
    }));
    await sendTransactional(
      {
        asset: {
          ...ASSET,
          attachments: [{ filename: 'invoice.pdf', content_type: 'application/pdf', content }],
        },
        emails: recipients,
      },
      ports,
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]?.map((buffer) => buffer.toString('base64'))).toEqual([content]);
    expect(jobs).toHaveLength(20);
    for (const job of jobs) {
      expect(job.email?.attachments.map((attachment) => attachment.key)).toEqual(['attachments/0']);
    }
  });
});
