import { describe, expect, it } from '@jest/globals';
import {
  deliverEmail,
  MailerError,
  SEND_LEASE_MS,
  settleUndelivered,
  type DeliveryStore,
  type Mailer,
} from '../../../shared/domain/email/deliver.js';
import type {
  EmailRecord,
  EmailState,
  OutgoingEmail,
} from '../../../shared/domain/email/messages.js';
import { RetryLaterError, retryAfterMs } from '../../../shared/lib/retry-later.js';

/** The email worker's rule, against an in-memory store with the same conditional moves. */
const MESSAGE = '0123456789abcdef01234567';

function memoryStore(record: EmailRecord, suppressed: string[] = []) {
  const state = { record: { ...record }, activities: 0 };
  const store: DeliveryStore = {
    get: () => Promise.resolve(new Map([[MESSAGE, { ...state.record }]])),
    suppressed: (_instance, addresses) =>
      Promise.resolve(new Set(addresses.filter((a) => suppressed.includes(a)))),
    claim: (_i, _m, attempt, now) => {
      if (state.record.status !== 'queued') return Promise.resolve(false);
      state.record = { ...state.record, status: 'sending', attempt, sending_at: now };
      return Promise.resolve(true);
    },
    release: (_i, _m, attempt) => {
      if (state.record.status === 'sending' && state.record.attempt === attempt) {
        state.record = { ...state.record, status: 'queued' };
      }
      return Promise.resolve();
    },
    markSent: (_i, _m, attempt, ses) => {
      if (state.record.status !== 'sending' || state.record.attempt !== attempt) {
        return Promise.resolve(false);
      }
      state.record = { ...state.record, status: 'sent', ses_message_id: ses };
      state.activities += 1;
      return Promise.resolve(true);
    },
    move: (_i, _m, from: EmailState[], to: EmailState, extra) => {
      if (!from.includes(state.record.status)) return Promise.resolve(false);
      state.record = {
        ...state.record,
        status: to,
        ...(extra?.error ? { error: extra.error } : {}),
      };
      return Promise.resolve(true);
    },
  };
  return { store, state };
}

const record: EmailRecord = {
  instance_id: 'demo',
  message_id: MESSAGE,
  request_id: 'r',
  person_id: 'p'.repeat(24),
  email_name: 'hello',
  to: 'ann@example.com',
  status: 'queued',
  links: [],
  events: [],
  created_at: '',
  updated_at: '',
};

const email: OutgoingEmail = {
  from: { address: 'a@x.example' },
  to: 'ann@example.com',
  cc: [],
  subject: 's',
  html: 'h',
  text: 't',
  headers: {},
  attachments: [],
};
const job = { v: 1 as const, instance_id: 'demo', message_id: MESSAGE, email };

function mailer(...outcomes: (string | MailerError)[]): Mailer & { calls: number } {
  const fake = {
    calls: 0,
    send: () => {
      const outcome = outcomes[fake.calls] ?? 'ses-id';
      fake.calls += 1;
      return outcome instanceof MailerError ? Promise.reject(outcome) : Promise.resolve(outcome);
    },
  };
  return fake;
}

const pace = () => Promise.resolve();

describe('deliverEmail', () => {
  it('sends a queued email once, and a redelivery sends nothing', async () => {
    const { store, state } = memoryStore(record);
    const ses = mailer();
    expect(await deliverEmail(job, { store, mailer: ses, pace })).toBe('sent');
    expect(await deliverEmail(job, { store, mailer: ses, pace })).toBe('done-before');
    expect(ses.calls).toBe(1);
    expect(state.record).toMatchObject({ status: 'sent', ses_message_id: 'ses-id' });
    expect(state.activities).toBe(1);
  });

  it('gives a refused send back to the queue, and sends it on the next delivery', async () => {
    const { store, state } = memoryStore(record);
    const ses = mailer(new MailerError('refused', 'throttled'));
    await expect(deliverEmail(job, { store, mailer: ses, pace })).rejects.toThrow('throttled');
    expect(state.record.status).toBe('queued');
    expect(await deliverEmail(job, { store, mailer: ses, pace })).toBe('sent');
    expect(ses.calls).toBe(2);
  });

  it('fails a rejected email without retrying it', async () => {
    const { store, state } = memoryStore(record);
    const ses = mailer(new MailerError('rejected', 'SES: MessageRejected'));
    expect(await deliverEmail(job, { store, mailer: ses, pace })).toBe('failed');
    expect(state.record).toMatchObject({ status: 'failed', error: 'SES: MessageRejected' });
  });

  it('never sends again an email whose send attempt had an unknown outcome', async () => {
    let now = 1_000_000;
    const { store, state } = memoryStore(record);
    const ses = mailer(new MailerError('unknown', 'timeout'));
    const unknown = await deliverEmail(job, { store, mailer: ses, pace, now: () => now }).catch(
      (error: unknown) => error,
    );
    expect(state.record.status).toBe('sending');
    // The next delivery must not come before the lease has passed (or it could be the last).
    expect(unknown).toBeInstanceOf(RetryLaterError);
    expect(retryAfterMs(unknown)).toBeGreaterThan(SEND_LEASE_MS);
    // Within the attempt's lease: not touched, and asked to come back once it has passed.
    const held = await deliverEmail(job, {
      store,
      mailer: ses,
      pace,
      now: () => now + 30_000,
    }).catch((error: unknown) => error);
    expect(held).toBeInstanceOf(RetryLaterError);
    expect((held as Error).message).toMatch(/Another attempt/);
    expect(retryAfterMs(held)).toBeGreaterThan(SEND_LEASE_MS - 30_000);
    expect(retryAfterMs(held)).toBeLessThanOrEqual(SEND_LEASE_MS - 30_000 + 5_000);
    now += SEND_LEASE_MS + 1;
    expect(await deliverEmail(job, { store, mailer: ses, pace, now: () => now })).toBe('failed');
    expect(state.record.error).toMatch(/outcome is unknown/);
    expect(ses.calls).toBe(1);
  });

  it('does not send to an address suppressed after the email was queued', async () => {
    const { store, state } = memoryStore(record, ['ann@example.com']);
    const ses = mailer();
    expect(await deliverEmail(job, { store, mailer: ses, pace })).toBe('suppressed');
    expect(state.record.status).toBe('suppressed');
    expect(ses.calls).toBe(0);
  });

  it('waits out the lease when the store fails after SES took the email', async () => {
    const { store, state } = memoryStore(record);
    const failing = { ...store, markSent: () => Promise.reject(new Error('store down')) };
    const error = await deliverEmail(job, { store: failing, mailer: mailer(), pace }).catch(
      (cause: unknown) => cause,
    );
    expect(state.record.status).toBe('sending');
    expect(retryAfterMs(error)).toBeGreaterThan(SEND_LEASE_MS);
  });

  it('retries a refused send with the queue backoff when the email was given back', async () => {
    const { store } = memoryStore(record);
    const error = await deliverEmail(job, {
      store,
      mailer: mailer(new MailerError('refused', 'throttled')),
      pace,
    }).catch((cause: unknown) => cause);
    expect(retryAfterMs(error)).toBe(0);
  });
});

describe('settleUndelivered (the last delivery failed too)', () => {
  it('fails an email an attempt left sending, with an unknown outcome: no dead letter', async () => {
    const { store, state } = memoryStore({ ...record, status: 'sending', sending_at: Date.now() });
    expect(await settleUndelivered(job, store, 'timeout')).toBe('settled');
    expect(state.record).toMatchObject({ status: 'failed' });
    expect(state.record.error).toMatch(/outcome is unknown/);
  });

  it('keeps a queued email queued for a redrive, and dead-letters its message', async () => {
    const { store, state } = memoryStore(record);
    expect(await settleUndelivered(job, store, 'SES refused')).toBe('dead-letter');
    expect(state.record.status).toBe('queued');
  });

  it('leaves an email in a final state alone', async () => {
    const { store, state } = memoryStore({ ...record, status: 'sent' });
    expect(await settleUndelivered(job, store, 'x')).toBe('settled');
    expect(state.record.status).toBe('sent');
  });
});
