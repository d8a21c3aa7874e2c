import { describe, expect, it } from '@jest/globals';
import {
  CONFIRM_WINDOW_MS,
  deliverEmail,
  MailerError,
  SEND_LEASE_MS,
  settleUndelivered,
  type DeliveryPorts,
  type Mailer,
  type SendConfirmations,
  type PreparedEmail,
} from '../../../shared/domain/email/deliver.js';
import { applySesEvent, type SesEvent } from '../../../shared/domain/email/delivery-events.js';
import type { OutgoingEmail } from '../../../shared/domain/email/messages.js';
import { RetryLaterError, retryAfterMs } from '../../../shared/lib/retry-later.js';
import { withDeadline } from '../../../shared/lib/time-budget.js';
import { MemoryEmailStore, TEST_MESSAGE, eventPortsOf, testRecord } from './memory-email-store.js';

/**
 * The email worker's rule against the emails table in memory (the same conditional moves),
 * a fake SES and a fake clock, so that each interleaving the review found is played step by
 * step: a send whose outcome is unknown, a duplicate delivery on the last receive, a call
 * started without time to finish, a crash before the call, an event that overtakes the worker.
 */
const MESSAGE = TEST_MESSAGE;
const T0 = 1_800_000_000_000;

const record = testRecord();

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

type Outcome = string | MailerError | (() => Promise<string>);

/** SES answering each call with the next outcome (an ID, an error, or a call of its own). */
function fakeSes(...outcomes: Outcome[]): Mailer & { calls: number } {
  const fake = {
    calls: 0,
    callMaxMs: 0,
    prepare: (outgoing: OutgoingEmail): Promise<PreparedEmail> =>
      Promise.resolve({
        raw: Buffer.from('raw'),
        from: outgoing.from.address,
        to: outgoing.to,
        cc: [],
      }),
    send: () => {
      const outcome = outcomes[fake.calls] ?? 'ses-id';
      fake.calls += 1;
      if (typeof outcome === 'function') return outcome();
      return outcome instanceof MailerError ? Promise.reject(outcome) : Promise.resolve(outcome);
    },
  };
  return fake;
}

/** SES's events as far as they have been applied, and a probe that moves them on. */
function confirmations(through?: number, deadLettered = 0) {
  const state = { through, deadLettered, probes: 0 };
  const port: SendConfirmations = {
    eventsThrough: () => Promise.resolve(state.through),
    deadLetteredEvents: () => Promise.resolve(state.deadLettered),
    probe: () => {
      state.probes += 1;
      return Promise.resolve();
    },
  };
  return Object.assign(state, { port });
}

function ports(
  store: MemoryEmailStore,
  mailer: Mailer,
  clock: { now: number },
  events = confirmations(),
): DeliveryPorts {
  return {
    store,
    mailer,
    pace: () => Promise.resolve(),
    now: () => clock.now,
    confirmations: events.port,
    confirmWindowMs: CONFIRM_WINDOW_MS,
  };
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

function sesEvent(type: string, extra: Partial<SesEvent> = {}): SesEvent {
  return {
    eventType: type,
    mail: {
      messageId: 'ses-id',
      timestamp: new Date(T0).toISOString(),
      tags: { cdp_message: [`demo_${MESSAGE}`] },
    },
    ...extra,
  };
}

describe('deliverEmail', () => {
  it('sends a queued email once, and a redelivery sends nothing', async () => {
    const store = new MemoryEmailStore(record);
    const ses = fakeSes();
    const clock = { now: T0 };
    expect(await deliverEmail(job, ports(store, ses, clock))).toBe('sent');
    expect(await deliverEmail(job, ports(store, ses, clock))).toBe('done-before');
    expect(ses.calls).toBe(1);
    expect(store.record(MESSAGE)).toMatchObject({ status: 'sent', ses_message_id: 'ses-id' });
    expect(store.activitiesOf('act::s')).toHaveLength(1);
  });

  it('gives a refused send back to the queue, and sends it on the next delivery', async () => {
    const store = new MemoryEmailStore(record);
    const ses = fakeSes(new MailerError('refused', 'throttled'));
    const clock = { now: T0 };
    const error = await failure(deliverEmail(job, ports(store, ses, clock)));
    expect((error as Error).message).toBe('throttled');
    // The queue's own backoff: nothing asks it to wait longer.
    expect(retryAfterMs(error)).toBe(0);
    expect(store.record(MESSAGE).status).toBe('queued');
    expect(await deliverEmail(job, ports(store, ses, clock))).toBe('sent');
    expect(ses.calls).toBe(2);
  });

  it('fails a rejected email without retrying it', async () => {
    const store = new MemoryEmailStore(record);
    const ses = fakeSes(new MailerError('rejected', 'SES: MessageRejected'));
    expect(await deliverEmail(job, ports(store, ses, { now: T0 }))).toBe('failed');
    expect(store.record(MESSAGE)).toMatchObject({
      status: 'failed',
      error: 'SES: MessageRejected',
    });
  });

  it('does not send to an address suppressed after the email was queued', async () => {
    const store = new MemoryEmailStore(record);
    await store.suppress('demo', 'Ann@Example.com', 'bounce');
    const ses = fakeSes();
    expect(await deliverEmail(job, ports(store, ses, { now: T0 }))).toBe('suppressed');
    expect(store.record(MESSAGE)).toMatchObject({
      status: 'suppressed',
      error: 'the address was put on the suppression list after the email was queued',
    });
    expect(ses.calls).toBe(0);
    expect(store.activitiesOf('act::s')).toHaveLength(0);
  });

  it('claims a queued email without reading it first, the suppression list read meanwhile', async () => {
    const store = new MemoryEmailStore(record);
    // The claim answers only once the suppression list has been asked too: asking it after
    // the claim never ends (the test fails by its timeout).
    let asked!: () => void;
    const suppressionAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const claim = store.claim.bind(store);
    const suppressed = store.suppressed.bind(store);
    store.claim = async (...args) => {
      await suppressionAsked;
      return claim(...args);
    };
    const addresses: string[][] = [];
    store.suppressed = (instanceId, asking) => {
      addresses.push(asking);
      asked();
      return suppressed(instanceId, asking);
    };
    let reads = 0;
    const get = store.get.bind(store);
    store.get = (...args) => {
      reads += 1;
      return get(...args);
    };
    const ses = fakeSes();
    expect(await deliverEmail(job, ports(store, ses, { now: T0 }))).toBe('sent');
    expect(addresses).toEqual([['ann@example.com']]);
    // The claim answered with the record: sent and recorded without a read.
    expect(reads).toBe(0);
    expect(ses.calls).toBe(1);
    expect(store.record(MESSAGE)).toMatchObject({ status: 'sent', ses_message_id: 'ses-id' });
    expect(store.activitiesOf('act::s')).toHaveLength(1);
  });

  it('gives a claimed email back when the suppression list cannot be read: nothing is sent', async () => {
    const store = new MemoryEmailStore(record);
    const down = new Error('store down (suppressed)');
    const suppressed = store.suppressed.bind(store);
    store.suppressed = () => Promise.reject(down);
    const ses = fakeSes();
    expect(await failure(deliverEmail(job, ports(store, ses, { now: T0 })))).toBe(down);
    expect(store.record(MESSAGE).status).toBe('queued');
    expect(store.record(MESSAGE).attempt).toBeUndefined();
    expect(ses.calls).toBe(0);
    // The next delivery sends it.
    store.suppressed = suppressed;
    expect(await deliverEmail(job, ports(store, ses, { now: T0 }))).toBe('sent');
    expect(ses.calls).toBe(1);
  });

  it('builds the message before anything else waits, and a build that fails for an email not sent is no error', async () => {
    const store = new MemoryEmailStore(record);
    // A read of the record (the build failed: what does the record say?) answers only once the
    // message is being built.
    let building!: () => void;
    const buildStarted = new Promise<void>((resolve) => {
      building = resolve;
    });
    const get = store.get.bind(store);
    store.get = async (...args) => {
      await buildStarted;
      return get(...args);
    };
    const ses = fakeSes();
    const prepare = ses.prepare.bind(ses);
    ses.prepare = (outgoing) => {
      building();
      return prepare(outgoing);
    };
    expect(await deliverEmail(job, ports(store, ses, { now: T0 }))).toBe('sent');
    // Sent already: the build's failure (an attachment gone since) changes nothing.
    const broken = { ...fakeSes(), prepare: () => Promise.reject(new Error('NoSuchKey')) };
    expect(await deliverEmail(job, ports(store, broken, { now: T0 }))).toBe('done-before');
    const again = new MemoryEmailStore(record);
    await again.suppress('demo', 'ann@example.com', 'bounce');
    expect(await deliverEmail(job, ports(again, broken, { now: T0 }))).toBe('suppressed');
    expect(broken.calls).toBe(0);
  });

  it("decides on the record's own address when the job names another", async () => {
    const store = new MemoryEmailStore({ ...record, to: 'bob@example.com' });
    await store.suppress('demo', 'bob@example.com', 'complaint');
    const ses = fakeSes();
    expect(await deliverEmail(job, ports(store, ses, { now: T0 }))).toBe('suppressed');
    expect(store.record(MESSAGE).status).toBe('suppressed');
    expect(ses.calls).toBe(0);
  });

  describe('an unknown outcome: never sent again, settled by SES', () => {
    const unknown = () => new MailerError('unknown', 'SES: InternalFailure');

    it('does not send again after a 5xx; the Send event marks the email sent', async () => {
      const store = new MemoryEmailStore(record);
      const ses = fakeSes(unknown(), 'never');
      const clock = { now: T0 };
      const first = await failure(deliverEmail(job, ports(store, ses, clock)));
      // Not released: the email waits for SES's event, and its message for the window.
      expect(store.record(MESSAGE)).toMatchObject({ status: 'sending', unknown_at: T0 });
      expect(first).toBeInstanceOf(RetryLaterError);
      expect(retryAfterMs(first)).toBeGreaterThanOrEqual(CONFIRM_WINDOW_MS);
      // A redelivery within the window sends nothing and comes back at its end.
      clock.now = T0 + 120_000;
      const held = await failure(deliverEmail(job, ports(store, ses, clock)));
      expect(retryAfterMs(held)).toBeGreaterThan(CONFIRM_WINDOW_MS - 120_000);
      expect(ses.calls).toBe(1);
      // SES's Send event says it went.
      expect(await applySesEvent(sesEvent('Send'), eventPortsOf(store))).toBe('sent');
      expect(store.record(MESSAGE)).toMatchObject({ status: 'sent', ses_message_id: 'ses-id' });
      expect(store.activitiesOf('act::s')).toHaveLength(1);
      clock.now = T0 + CONFIRM_WINDOW_MS + 1;
      expect(await deliverEmail(job, ports(store, ses, clock))).toBe('done-before');
      expect(ses.calls).toBe(1);
    });

    it("sends it again only once SES's events prove it was not taken: later sends' events applied, none dead-lettered", async () => {
      const store = new MemoryEmailStore(record);
      const ses = fakeSes(unknown(), 'second-id');
      const clock = { now: T0 };
      const events = confirmations(T0 - 1);
      await failure(deliverEmail(job, ports(store, ses, clock, events)));
      // The window has passed, but no send SES took after it has had its event applied yet
      // (a quiet deployment): a probe is sent, and the email waits.
      clock.now = T0 + CONFIRM_WINDOW_MS + 1;
      const waiting = await failure(deliverEmail(job, ports(store, ses, clock, events)));
      expect(waiting).toBeInstanceOf(RetryLaterError);
      expect(events.probes).toBe(1);
      expect(store.record(MESSAGE).status).toBe('sending');
      // The probe's event is applied, but an SES event waits in the dead-letter queue: it
      // could be this email's, so still nothing is sent.
      events.through = T0 + CONFIRM_WINDOW_MS + 500;
      events.deadLettered = 1;
      await failure(deliverEmail(job, ports(store, ses, clock, events)));
      expect(ses.calls).toBe(1);
      // Nothing dead-lettered: proven not sent, and sent again, once.
      events.deadLettered = 0;
      expect(await deliverEmail(job, ports(store, ses, clock, events))).toBe('sent');
      expect(store.record(MESSAGE)).toMatchObject({ status: 'sent', ses_message_id: 'second-id' });
      expect(store.record(MESSAGE).events.map((event) => event.type)).toContain('resending');
      expect(ses.calls).toBe(2);
    });

    it('treats an attempt that died as unknown once its lease has passed', async () => {
      const store = new MemoryEmailStore({
        ...record,
        status: 'sending',
        attempt: 'dead',
        sending_at: T0,
      });
      const ses = fakeSes();
      const clock = { now: T0 + 30_000 };
      const events = confirmations();
      const held = await failure(deliverEmail(job, ports(store, ses, clock, events)));
      expect((held as Error).message).toMatch(/Another attempt/);
      expect(retryAfterMs(held)).toBeGreaterThan(SEND_LEASE_MS - 30_000);
      clock.now = T0 + SEND_LEASE_MS + 1;
      const waiting = await failure(deliverEmail(job, ports(store, ses, clock, events)));
      expect((waiting as Error).message).toMatch(/waiting for SES/);
      expect(store.record(MESSAGE).unknown_at).toBe(T0 + SEND_LEASE_MS + 1);
      expect(ses.calls).toBe(0);
      // The attempt ended with its lease: SES's events a window past that prove it.
      clock.now = T0 + SEND_LEASE_MS + CONFIRM_WINDOW_MS + 2;
      events.through = clock.now;
      expect(await deliverEmail(job, ports(store, ses, clock, events))).toBe('sent');
      expect(ses.calls).toBe(1);
    });
  });

  it('claims the email only after pacing and building it: a crash there leaves it queued', async () => {
    // The function is killed while it waits for its pacing slot, then while it reads the
    // attachments: neither promise ever settles, and nothing after it runs.
    const never = () => new Promise<never>(() => undefined);
    const store = new MemoryEmailStore(record);
    void deliverEmail(job, { ...ports(store, fakeSes(), { now: T0 }), pace: never });
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.record(MESSAGE).status).toBe('queued');
    void deliverEmail(job, ports(store, { ...fakeSes(), prepare: never }, { now: T0 }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.record(MESSAGE).status).toBe('queued');
    // A failure there is no send either: the email waits for the queue's retry.
    const missing = new Error('NoSuchKey: the attachment');
    const building = ports(
      store,
      { ...fakeSes(), prepare: () => Promise.reject(missing) },
      { now: T0 },
    );
    expect(await failure(deliverEmail(job, building))).toBe(missing);
    expect(store.record(MESSAGE).status).toBe('queued');
  });

  it('does not claim an email when a call to SES could not end before the deadline', async () => {
    const store = new MemoryEmailStore(record);
    const ses = { ...fakeSes(), callMaxMs: 20_000 };
    const error = await failure(
      withDeadline(Date.now() + 10_000, () => deliverEmail(job, ports(store, ses, { now: T0 }))),
    );
    expect((error as Error).message).toMatch(/too little of the invocation/);
    expect(store.record(MESSAGE).status).toBe('queued');
    expect(ses.calls).toBe(0);
  });

  it('records the send, its SES ID and act::s when a bounce overtook the worker', async () => {
    const store = new MemoryEmailStore(record);
    // SES takes the email, and its bounce is applied before the worker hears back.
    const ses = fakeSes(async () => {
      await applySesEvent(
        sesEvent('Bounce', {
          bounce: {
            bounceType: 'Permanent',
            bounceSubType: 'General',
            bouncedRecipients: [{ emailAddress: 'ann@example.com' }],
          },
        }),
        eventPortsOf(store),
      );
      return 'ses-id';
    });
    expect(await deliverEmail(job, ports(store, ses, { now: T0 }))).toBe('sent');
    const stored = store.record(MESSAGE);
    expect(stored).toMatchObject({ status: 'bounced', ses_message_id: 'ses-id' });
    expect(stored.events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['sent', 'bounced']),
    );
    expect(store.activitiesOf('act::s')).toHaveLength(1);
    expect(store.activitiesOf('act::b')).toHaveLength(1);
  });

  it('waits out the lease when the store fails after SES took the email', async () => {
    const store = new MemoryEmailStore(record);
    store.failNext.add('recordAcceptance');
    const error = await failure(deliverEmail(job, ports(store, fakeSes(), { now: T0 })));
    expect(store.record(MESSAGE).status).toBe('sending');
    expect(retryAfterMs(error)).toBeGreaterThan(SEND_LEASE_MS);
  });

  it('waits for a record the sending request has not written yet, and drops a job whose record never came', async () => {
    const store = new MemoryEmailStore();
    const ses = fakeSes();
    const clock = { now: Date.now() };
    const early = await failure(
      deliverEmail({ ...job, record_by: clock.now + 60_000 }, ports(store, ses, clock)),
    );
    expect(early).toBeInstanceOf(RetryLaterError);
    expect(retryAfterMs(early)).toBeGreaterThan(50_000);
    store.records.set(MESSAGE, structuredClone(record));
    expect(
      await deliverEmail({ ...job, record_by: clock.now + 60_000 }, ports(store, ses, clock)),
    ).toBe('sent');
    store.records.clear();
    expect(
      await deliverEmail({ ...job, record_by: clock.now - 60_000 }, ports(store, ses, clock)),
    ).toBe('missing');
    expect(ses.calls).toBe(1);
  });
});

describe('settleUndelivered (the last delivery failed too)', () => {
  it('leaves an email a live attempt holds to that attempt', async () => {
    const store = new MemoryEmailStore(record);
    const clock = { now: T0 };
    // Attempt A claims the email and calls SES, which is slow to answer.
    let answer: (outcome: MailerError) => void = () => undefined;
    const slow = fakeSes(
      () =>
        new Promise<string>((_resolve, reject) => {
          answer = reject;
        }),
    );
    const first = failure(deliverEmail(job, ports(store, slow, clock)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.record(MESSAGE).status).toBe('sending');
    // A duplicate delivery of the same message, on its last receive, fails: the email is held.
    clock.now = T0 + 5_000;
    const duplicate = await failure(deliverEmail(job, ports(store, fakeSes(), clock)));
    expect(duplicate).toBeInstanceOf(RetryLaterError);
    expect(
      await settleUndelivered(
        job,
        { store, confirmations: confirmations().port },
        'held',
        () => clock.now,
      ),
    ).toBe('dead-letter');
    expect(store.record(MESSAGE).status).toBe('sending');
    // SES then refuses A's call: nothing went, and the email is still there to be sent.
    answer(new MailerError('refused', 'throttled'));
    await first;
    expect(store.record(MESSAGE).status).toBe('queued');
    expect(store.record(MESSAGE).error).toBeUndefined();
  });

  it('leaves an email whose outcome is unknown sending, for SES or a redrive to settle: never failed on a guess', async () => {
    const unknown = {
      ...record,
      status: 'sending' as const,
      attempt: 'a',
      sending_at: T0,
      unknown_at: T0 + 1,
    };
    const store = new MemoryEmailStore(unknown);
    const settle = (events: ReturnType<typeof confirmations>, at: number) =>
      settleUndelivered(
        job,
        { store, confirmations: events.port, confirmWindowMs: CONFIRM_WINDOW_MS },
        'timeout',
        () => at,
      );
    expect(await settle(confirmations(), T0 + 2)).toBe('dead-letter');
    expect(store.record(MESSAGE).status).toBe('sending');
    expect(store.record(MESSAGE).events.at(-1)?.detail).toMatch(/whether SES took it is unknown/);
    // With SES's events proving it was not taken, it is given back: a redrive sends it.
    const later = T0 + CONFIRM_WINDOW_MS + 10;
    expect(await settle(confirmations(later), later)).toBe('dead-letter');
    expect(store.record(MESSAGE).status).toBe('queued');
  });

  it('keeps a queued email queued for a redrive, and dead-letters its message', async () => {
    const store = new MemoryEmailStore(record);
    expect(
      await settleUndelivered(job, { store, confirmations: confirmations().port }, 'SES refused'),
    ).toBe('dead-letter');
    expect(store.record(MESSAGE).status).toBe('queued');
    expect(store.record(MESSAGE).events.at(-1)?.type).toBe('dead_lettered');
  });

  it('leaves an email in a final state alone', async () => {
    const store = new MemoryEmailStore({ ...record, status: 'sent' });
    expect(await settleUndelivered(job, { store, confirmations: confirmations().port }, 'x')).toBe(
      'settled',
    );
    expect(store.record(MESSAGE).status).toBe('sent');
  });
});
