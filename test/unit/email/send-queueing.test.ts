import { describe, expect, it } from '@jest/globals';
import { ServiceUnavailableError } from '../../../shared/domain/errors.js';
import { MaybeQueuedError } from '../../../shared/domain/ingest/ingest.js';
import { NOT_QUEUED, sendTransactional } from '../../../shared/domain/email/send.js';
import { MemoryPeopleStore } from '../people/memory-people-store.js';
import { ASSET, sendContext } from './send-context.js';

/**
 * Queueing and recording the emails of a send when the queue or the emails table fails:
 * an entry is answered `queued` only if its message is in the queue and its record says so,
 * and no record says `queued` without a message behind it (item 6).
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
