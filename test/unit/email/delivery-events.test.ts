import { describe, expect, it } from '@jest/globals';
import { applySesEvent, type SesEvent } from '../../../shared/domain/email/delivery-events.js';
import { MemoryEmailStore, TEST_MESSAGE, eventPortsOf, testRecord } from './memory-email-store.js';

/** SES events applied to the emails table in memory: who they are about, and once each. */
const MESSAGE = TEST_MESSAGE;

const sent = testRecord({ status: 'sent', ses_message_id: 'ses-id' });

function event(type: string, extra: Partial<SesEvent>): SesEvent {
  return {
    eventType: type,
    mail: {
      messageId: 'ses-id',
      timestamp: '2026-05-01T10:00:00.000Z',
      tags: { cdp_message: [`demo_${MESSAGE}`] },
    },
    ...extra,
  };
}

const bounce = (...addresses: string[]) =>
  event('Bounce', {
    bounce: {
      bounceType: 'Permanent',
      bounceSubType: 'General',
      bouncedRecipients: addresses.map((emailAddress) => ({ emailAddress })),
    },
  });

const complaint = (...addresses: string[]) =>
  event('Complaint', {
    complaint: { complainedRecipients: addresses.map((emailAddress) => ({ emailAddress })) },
  });

function ports(store: MemoryEmailStore) {
  const unsubscribed: string[] = [];
  return { unsubscribed, ports: eventPortsOf(store, unsubscribed) };
}

describe('applySesEvent', () => {
  it('suppresses a bounced or complaining address whose email was erased', async () => {
    const store = new MemoryEmailStore();
    const { ports: bouncePorts } = ports(store);
    expect(await applySesEvent(bounce('Gone@Example.com'), bouncePorts)).toMatch(/suppressed/);
    await applySesEvent(complaint('angry@example.com'), bouncePorts);
    expect(await store.suppressed('demo', ['gone@example.com', 'angry@example.com'])).toEqual(
      new Set(['gone@example.com', 'angry@example.com']),
    );
  });

  it('attributes a cc complaint to the cc address: the recipient is not unsubscribed', async () => {
    const store = new MemoryEmailStore(sent);
    const { ports: complaintPorts, unsubscribed } = ports(store);
    expect(await applySesEvent(complaint('cc@example.com'), complaintPorts)).toBe(
      'a cc address complained',
    );
    expect(unsubscribed).toEqual([]);
    expect(store.record(MESSAGE).status).toBe('sent');
    expect(store.activitiesOf('act::b')).toEqual([]);
    expect(store.suppressions).toEqual(new Map([['cc@example.com', 'complaint']]));
    expect(store.record(MESSAGE).events).toEqual([
      expect.objectContaining({ type: 'complained', recipient: 'cc@example.com' }),
    ]);
  });

  it('attributes a cc-only hard bounce to the cc address: the email is not bounced', async () => {
    const store = new MemoryEmailStore(sent);
    const { ports: bouncePorts } = ports(store);
    await applySesEvent(bounce('cc@example.com'), bouncePorts);
    expect(store.record(MESSAGE).status).toBe('sent');
    expect(store.activitiesOf('act::b')).toEqual([]);
    expect(await store.suppressed('demo', ['ann@example.com', 'cc@example.com'])).toEqual(
      new Set(['cc@example.com']),
    );
    // The recipient's own bounce later, in an event of the same SES message, still counts.
    await applySesEvent(bounce('ANN@example.com'), bouncePorts);
    expect(store.record(MESSAGE).status).toBe('bounced');
    expect(store.activitiesOf('act::b')).toHaveLength(1);
  });

  it('applies the recipient complaint once, however often it is delivered', async () => {
    const store = new MemoryEmailStore(sent);
    const { ports: complaintPorts, unsubscribed } = ports(store);
    await applySesEvent(complaint('ann@example.com'), complaintPorts);
    await applySesEvent(complaint('ann@example.com'), complaintPorts);
    expect(store.record(MESSAGE).status).toBe('complained');
    expect(store.record(MESSAGE).events.filter((e) => e.type === 'complained')).toHaveLength(1);
    expect(store.activitiesOf('act::b')).toHaveLength(1);
    expect(unsubscribed).toEqual([sent.person_id, sent.person_id]);
  });

  it("counts an email sent, bounced and complained about once on its day, whatever is redelivered, and never a cc's", async () => {
    const store = new MemoryEmailStore({
      ...sent,
      status: 'sending',
      attempt: 'a',
      sending_at: Date.now(),
      ses_message_id: undefined,
    });
    const { ports: eventPorts } = ports(store);
    for (const delivered of [
      event('Send', {}),
      event('Send', {}),
      bounce('cc@example.com'),
      complaint('cc@example.com'),
      bounce('ann@example.com'),
      bounce('ann@example.com'),
      complaint('ann@example.com'),
      complaint('ann@example.com'),
    ]) {
      await applySesEvent(delivered, eventPorts);
    }
    expect(Object.fromEntries(store.tallies)).toEqual({
      [`sent#${new Date().toISOString().slice(0, 10)}`]: 1,
      'bounced#2026-05-01': 1,
      'complained#2026-05-01': 1,
    });
  });

  it('marks a sending email sent on its Send event, even while an attempt holds it', async () => {
    const store = new MemoryEmailStore({
      ...sent,
      status: 'sending',
      attempt: 'a',
      sending_at: Date.now(),
      ses_message_id: undefined,
    });
    const { ports: sendPorts } = ports(store);
    expect(await applySesEvent(event('Send', {}), sendPorts)).toBe('sent');
    expect(store.record(MESSAGE)).toMatchObject({ status: 'sent', ses_message_id: 'ses-id' });
    expect(store.activitiesOf('act::s')).toHaveLength(1);
  });
});
