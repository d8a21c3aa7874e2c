import type { ActivityToWrite } from '../../../shared/domain/activities/record-activities.js';
import type { Acceptance, DeliveryStore } from '../../../shared/domain/email/deliver.js';
import type { EventStore } from '../../../shared/domain/email/delivery-events.js';
import { tallyDay, type EmailTally } from '../../../shared/domain/email/email-tallies.js';
import type { EmailEvent, EmailRecord, EmailState } from '../../../shared/domain/email/messages.js';

/**
 * The emails table in memory, with the same conditional moves as `DynamoEmailStore`: what
 * the worker (`DeliveryStore`) and the SES events (`EventStore`) write, so that a test can
 * interleave them step by step. Activities are kept by ID (a put of the same ID replaces).
 */
export class MemoryEmailStore implements DeliveryStore, EventStore {
  readonly records = new Map<string, EmailRecord>();
  readonly activities = new Map<string, ActivityToWrite>();
  readonly suppressions = new Map<string, 'bounce' | 'complaint'>();
  private readonly seen = new Map<string, Set<string>>();
  /** The daily counters, by `<tally>#<day>` (email-tallies.ts). */
  readonly tallies = new Map<string, number>();
  /** Calls that fail once each, by method name (a store outage at that step). */
  readonly failNext = new Set<string>();

  constructor(...records: EmailRecord[]) {
    for (const record of records) this.records.set(record.message_id, structuredClone(record));
  }

  record(messageId: string): EmailRecord {
    const record = this.records.get(messageId);
    if (!record) throw new Error(`no email ${messageId}`);
    return record;
  }

  activitiesOf(fieldId: string): ActivityToWrite[] {
    return [...this.activities.values()].filter((activity) => activity.field_id === fieldId);
  }

  private count(tally: EmailTally, at: string): void {
    const key = `${tally}#${tallyDay(new Date(at))}`;
    this.tallies.set(key, (this.tallies.get(key) ?? 0) + 1);
  }

  private failing(method: string): void {
    if (this.failNext.delete(method)) throw new Error(`store down (${method})`);
  }

  get(_instanceId: string, messageIds: string[]): Promise<Map<string, EmailRecord>> {
    const found = new Map<string, EmailRecord>();
    for (const id of messageIds) {
      const record = this.records.get(id);
      if (record) found.set(id, structuredClone(record));
    }
    return Promise.resolve(found);
  }

  suppressed(_instanceId: string, addresses: string[]): Promise<Set<string>> {
    return Promise.resolve(
      new Set(
        addresses
          .map((address) => address.trim().toLowerCase())
          .filter((address) => this.suppressions.has(address)),
      ),
    );
  }

  suppress(_instanceId: string, address: string, reason: 'bounce' | 'complaint') {
    this.suppressions.set(address.trim().toLowerCase(), reason);
    return Promise.resolve();
  }

  claim(
    _instanceId: string,
    messageId: string,
    attempt: string,
    now: number,
  ): Promise<EmailRecord | undefined> {
    this.failing('claim');
    const record = this.records.get(messageId);
    if (record?.status !== 'queued') return Promise.resolve(undefined);
    Object.assign(record, { status: 'sending', attempt, sending_at: now });
    delete record.unknown_at;
    return Promise.resolve(structuredClone(record));
  }

  release(_instanceId: string, messageId: string, attempt: string) {
    this.failing('release');
    const record = this.records.get(messageId);
    if (record?.status === 'sending' && record.attempt === attempt) {
      record.status = 'queued';
      delete record.attempt;
      delete record.sending_at;
    }
    return Promise.resolve();
  }

  markUnknown(_instanceId: string, messageId: string, attempt: string, at: number) {
    this.failing('markUnknown');
    const record = this.records.get(messageId);
    if (
      record?.status !== 'sending' ||
      record.attempt !== attempt ||
      record.unknown_at !== undefined
    ) {
      return Promise.resolve(false);
    }
    record.unknown_at = at;
    record.events.push({ type: 'send_unknown', at: new Date(at).toISOString() });
    return Promise.resolve(true);
  }

  recordAcceptance(_instanceId: string, messageId: string, acceptance: Acceptance) {
    this.failing('recordAcceptance');
    const record = this.records.get(messageId);
    if (
      !record ||
      record.status !== acceptance.expected ||
      record.ses_message_id !== undefined ||
      (acceptance.attempt !== undefined && record.attempt !== acceptance.attempt)
    ) {
      return Promise.resolve(false);
    }
    record.ses_message_id = acceptance.sesMessageId;
    record.events.push({ type: 'sent', at: acceptance.activity?.created_at ?? '' });
    if (acceptance.promote) record.status = 'sent';
    if (acceptance.activity) this.activities.set(acceptance.activity.id, acceptance.activity);
    this.count('sent', acceptance.activity?.created_at ?? new Date().toISOString());
    return Promise.resolve(true);
  }

  move(
    _instanceId: string,
    messageId: string,
    from: EmailState[],
    to: EmailState,
    extra: { error?: string; event?: EmailEvent; attempt?: string } = {},
  ) {
    this.failing('move');
    const record = this.records.get(messageId);
    if (!record || !from.includes(record.status)) return Promise.resolve(false);
    if (extra.attempt !== undefined && record.attempt !== extra.attempt) {
      return Promise.resolve(false);
    }
    record.status = to;
    if (extra.error !== undefined) record.error = extra.error;
    record.events.push(extra.event ?? { type: to, at: '' });
    return Promise.resolve(true);
  }

  recordEvent(
    _instanceId: string,
    messageId: string,
    key: string,
    event: EmailEvent,
    move?: { from: EmailState[]; to: EmailState; error?: string },
    tally?: EmailTally,
  ): Promise<boolean> {
    const record = this.records.get(messageId);
    const seen = this.seen.get(messageId) ?? new Set<string>();
    if (!record || seen.has(key)) return Promise.resolve(false);
    if (move && !move.from.includes(record.status)) return Promise.resolve(false);
    seen.add(key);
    this.seen.set(messageId, seen);
    record.events.push(event);
    if (move) {
      record.status = move.to;
      if (move.error !== undefined) record.error = move.error;
    }
    if (tally) this.count(tally, event.at);
    return Promise.resolve(true);
  }

  recordActivity(_instanceId: string, activity: ActivityToWrite): Promise<boolean> {
    const messageId = activity.attr['str::message-id'];
    if (typeof messageId !== 'string' || !this.records.has(messageId)) {
      return Promise.resolve(false);
    }
    this.activities.set(activity.id, activity);
    return Promise.resolve(true);
  }
}

/**
 * The ports `applySesEvent` needs, over one memory store: activities land in the store, and
 * the people unsubscribed are pushed to `unsubscribed`.
 */
export function eventPortsOf(store: MemoryEmailStore, unsubscribed: string[] = []) {
  return {
    store,
    writeActivity: async (_instance: string, activity: ActivityToWrite) => {
      await store.recordActivity('demo', activity);
    },
    unsubscribe: (_instance: string, personId: string) => {
      unsubscribed.push(personId);
      return Promise.resolve(true);
    },
  };
}

/** The message ID of the email the email tests work on. */
export const TEST_MESSAGE = '0123456789abcdef01234567';

/** That email's record (queued, to ann@example.com), with `extra` members. */
export function testRecord(extra: Partial<EmailRecord> = {}): EmailRecord {
  return {
    instance_id: 'demo',
    message_id: TEST_MESSAGE,
    request_id: 'r',
    person_id: 'p'.repeat(24),
    email_name: 'hello',
    to: 'ann@example.com',
    status: 'queued',
    links: [],
    events: [],
    created_at: '',
    updated_at: '',
    ...extra,
  };
}
