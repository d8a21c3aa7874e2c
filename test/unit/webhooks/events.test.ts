import { describe, expect, it } from '@jest/globals';
import {
  activityEvents,
  audienceEvents,
  emailEvents,
  fanOut,
  organizationEvents,
  personEvents,
  type ItemChange,
} from '../../../shared/domain/webhooks/events.js';
import { subscribesTo, type Webhook } from '../../../shared/domain/webhooks/webhook.js';
import { keepsStreamRecord, STREAM_WORKERS } from '../../../shared/workers.js';

const PERSON = '66a1f0c2e4b0a1b2c3d4e5f6';
const AT = Date.parse('2026-11-24T12:00:00Z');
const image = (fields: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  pk: `acme#P#${PERSON}`,
  sk: 'P',
  id: PERSON,
  fields,
  tags: { vip: true },
  created_at: '2026-11-24T11:00:00.000Z',
  updated_at: '2026-11-24T12:00:00.000Z',
  ...extra,
});
const change = (partial: Partial<ItemChange>): ItemChange => ({
  eventName: 'MODIFY',
  sequenceNumber: '100',
  at: AT,
  ...partial,
});

describe('organizationEvents', () => {
  const ORG = '77b2f0c2e4b0a1b2c3d4e5f6';
  const org = (fields: Record<string, unknown>, members = 0) => ({
    pk: `acme#O#${ORG}`,
    sk: 'O',
    id: ORG,
    fields,
    members,
    created_at: '2026-11-24T11:00:00.000Z',
    updated_at: '2026-11-24T12:00:00.000Z',
  });

  it('makes organization.created of an insert, with the organization as stored', () => {
    const events = organizationEvents(
      ORG,
      change({ eventName: 'INSERT', newImage: org({ 'str:o:name': 'Acme' }) }),
    );
    expect(events).toEqual([
      {
        id: expect.stringMatching(/^msg_[0-9a-f]{32}$/) as unknown,
        type: 'organization.created',
        timestamp: '2026-11-24T12:00:00.000Z',
        data: {
          organization_id: ORG,
          fields: { 'str:o:name': 'Acme' },
          created_at: '2026-11-24T11:00:00.000Z',
          updated_at: '2026-11-24T12:00:00.000Z',
        },
      },
    ]);
  });

  it('makes organization.updated with the changed fields only, and nothing for a members count', () => {
    const [event, ...rest] = organizationEvents(
      ORG,
      change({
        oldImage: org({ 'str:o:name': 'Acme', 'int:o:employees': 5, 'str:o:city': 'Oslo' }),
        newImage: org({ 'str:o:name': 'Acme', 'int:o:employees': 6 }),
      }),
    );
    expect(rest).toEqual([]);
    expect(event?.type).toBe('organization.updated');
    expect(event?.data).toEqual({
      organization_id: ORG,
      changed_field_ids: ['int:o:employees', 'str:o:city'],
      changes: { 'int:o:employees': 6, 'str:o:city': null },
    });
    expect(organizationEvents(ORG, change({ oldImage: org({}, 1), newImage: org({}, 2) }))).toEqual(
      [],
    );
    // The same change delivered twice makes the same event ID; another change, another.
    const again = organizationEvents(ORG, change({ eventName: 'INSERT', newImage: org({}) }));
    expect(again[0]?.id).toBe(
      organizationEvents(ORG, change({ eventName: 'INSERT', newImage: org({}) }))[0]?.id,
    );
    expect(again[0]?.id).not.toBe(
      organizationEvents(
        ORG,
        change({ eventName: 'INSERT', sequenceNumber: '101', newImage: org({}) }),
      )[0]?.id,
    );
  });
});

describe('activityEvents', () => {
  const activity = {
    pk: `acme#P#${PERSON}`,
    sk: '2026-11-24T11:59:00.000Z#88c3f0c2e4b0a1b2c3d4e5f6',
    id: '88c3f0c2e4b0a1b2c3d4e5f6',
    person_id: PERSON,
    person_status: 'merged',
    field_id: 'act:cm:signed-up',
    attr: { 'str:cm:plan': 'pro' },
    display: 'Signed up',
    created_at: '2026-11-24T11:59:00.000Z',
    source: 'api',
  };

  it('makes activity.created of a new activity, with the activity as recorded', () => {
    expect(activityEvents(change({ eventName: 'INSERT', newImage: activity }))).toEqual([
      {
        id: expect.stringMatching(/^msg_[0-9a-f]{32}$/) as unknown,
        type: 'activity.created',
        timestamp: '2026-11-24T12:00:00.000Z',
        data: {
          activity_id: activity.id,
          person_id: PERSON,
          field_id: 'act:cm:signed-up',
          attributes: { 'str:cm:plan': 'pro' },
          created_at: '2026-11-24T11:59:00.000Z',
          source: 'api',
        },
      },
    ]);
  });

  it('makes nothing of an idempotency key or of a change to an activity', () => {
    const key = { pk: 'acme#KEY#abc', sk: 'KEY', key: 'abc', status: 'pending' };
    expect(activityEvents(change({ eventName: 'INSERT', newImage: key }))).toEqual([]);
    expect(activityEvents(change({ eventName: 'MODIFY', newImage: activity }))).toEqual([]);
  });
});

describe('emailEvents', () => {
  const email = (status: string, events: Record<string, unknown>[] = []) => ({
    pk: 'acme#M#m1',
    sk: 'M',
    message_id: 'm1',
    person_id: PERSON,
    email_name: 'welcome',
    to: 'ada@example.com',
    status,
    events,
    updated_at: '2026-11-24T12:00:00.000Z',
  });

  it('makes email.sent, email.bounced and email.complained as the email enters each state', () => {
    const sent = emailEvents(change({ oldImage: email('sending'), newImage: email('sent') }));
    expect(sent).toMatchObject([
      {
        type: 'email.sent',
        data: { message_id: 'm1', person_id: PERSON, email_name: 'welcome', status: 'sent' },
      },
    ]);
    const bounce = { type: 'bounced', at: '2026-11-24T12:01:00.000Z', detail: 'mailbox full' };
    expect(
      emailEvents(change({ oldImage: email('sent'), newImage: email('bounced', [bounce]) })),
    ).toMatchObject([
      {
        type: 'email.bounced',
        data: { at: bounce.at, detail: 'mailbox full', to: 'ada@example.com' },
      },
    ]);
    expect(
      emailEvents(change({ oldImage: email('sent'), newImage: email('complained') })),
    ).toMatchObject([{ type: 'email.complained' }]);
  });

  it('makes nothing for other states, or for a change within the same state (an open)', () => {
    expect(emailEvents(change({ eventName: 'INSERT', newImage: email('queued') }))).toEqual([]);
    expect(emailEvents(change({ oldImage: email('queued'), newImage: email('sending') }))).toEqual(
      [],
    );
    expect(
      emailEvents(
        change({
          oldImage: email('sent'),
          newImage: email('sent', [{ type: 'open', at: '2026-11-24T12:02:00.000Z' }]),
        }),
      ),
    ).toEqual([]);
  });
});

describe('audienceEvents', () => {
  const membership = (member: boolean, extra: Record<string, unknown> = {}) => ({
    pk: `acme#P#${PERSON}`,
    sk: 'A#99d4f0c2e4b0a1b2c3d4e5f6',
    audience_id: '99d4f0c2e4b0a1b2c3d4e5f6',
    member,
    subscribed: true,
    rev: 1,
    ...extra,
  });

  it('makes audience.entered and audience.exited as a person becomes and stops being a member', () => {
    const at = '2026-11-24T12:00:00.000Z';
    expect(
      audienceEvents(
        PERSON,
        change({ eventName: 'INSERT', newImage: membership(true, { member_from: at }) }),
      ),
    ).toMatchObject([
      {
        type: 'audience.entered',
        data: { audience_id: '99d4f0c2e4b0a1b2c3d4e5f6', person_id: PERSON, at },
      },
    ]);
    expect(
      audienceEvents(
        PERSON,
        change({ oldImage: membership(true), newImage: membership(false, { left_at: at }) }),
      ),
    ).toMatchObject([{ type: 'audience.exited', data: { at } }]);
  });

  it('makes nothing of a preference change or of a membership removed with its person', () => {
    expect(
      audienceEvents(
        PERSON,
        change({ oldImage: membership(true), newImage: membership(true, { subscribed: false }) }),
      ),
    ).toEqual([]);
    expect(
      audienceEvents(PERSON, change({ eventName: 'REMOVE', oldImage: membership(true) })),
    ).toEqual([]);
  });
});

describe('the fan-out workers are fed only what they make events of', () => {
  const worker = (name: string) => {
    const found = STREAM_WORKERS.find((w) => w.function === name);
    if (!found) throw new Error(`no ${name}`);
    return found;
  };
  const streamRecord = (eventName: string, sk: string) => ({
    eventName,
    dynamodb: { Keys: { pk: { S: `acme#P#${PERSON}` }, sk: { S: sk } } },
  });

  it('memberships by their sort key prefix, activities by being new, emails by their sort key', () => {
    const audiences = worker('audience-webhook-worker');
    expect(keepsStreamRecord(audiences, streamRecord('MODIFY', 'A#99d4'))).toBe(true);
    expect(keepsStreamRecord(audiences, streamRecord('MODIFY', 'S'))).toBe(false);
    const activities = worker('activity-webhook-worker');
    expect(keepsStreamRecord(activities, streamRecord('INSERT', '2026-11-24T12:00:00Z#x'))).toBe(
      true,
    );
    expect(keepsStreamRecord(activities, streamRecord('MODIFY', '2026-11-24T12:00:00Z#x'))).toBe(
      false,
    );
    const emails = worker('email-webhook-worker');
    expect(keepsStreamRecord(emails, streamRecord('MODIFY', 'M'))).toBe(true);
    expect(keepsStreamRecord(emails, streamRecord('MODIFY', 'SUP'))).toBe(false);
  });

  it('no table stream has more than two consumers (AWS advises at most two per shard)', () => {
    const consumers = new Map<string, number>();
    for (const entry of STREAM_WORKERS) {
      consumers.set(entry.table, (consumers.get(entry.table) ?? 0) + 1);
    }
    expect(Math.max(...consumers.values())).toBeLessThanOrEqual(2);
  });
});

describe('personEvents', () => {
  it('makes person.created of an insert, with the person as stored', () => {
    const [event, ...rest] = personEvents(
      PERSON,
      change({ eventName: 'INSERT', newImage: image({ 'str::email': 'ada@example.com' }) }),
    );
    expect(rest).toEqual([]);
    expect(event).toMatchObject({
      type: 'person.created',
      timestamp: '2026-11-24T12:00:00.000Z',
      data: {
        person_id: PERSON,
        fields: { 'str::email': 'ada@example.com', 'u4s::t': ['vip'] },
      },
    });
  });

  it('leaves out the values of fields the instance deleted', () => {
    const hidden = new Set(['str:cm:old']);
    const [created] = personEvents(
      PERSON,
      change({
        eventName: 'INSERT',
        newImage: image({ 'str::email': 'ada@example.com', 'str:cm:old': 'kept' }),
      }),
      hidden,
    );
    expect(created?.data.fields).toEqual({ 'str::email': 'ada@example.com', 'u4s::t': ['vip'] });
    const updated = personEvents(
      PERSON,
      change({
        oldImage: image({ 'str::first': 'Ada', 'str:cm:old': 'kept' }),
        newImage: image({ 'str::first': 'Grace', 'str:cm:old': 'kept' }),
      }),
      hidden,
    );
    expect(updated[0]?.data).toMatchObject({ changed_field_ids: ['str::first'] });
  });

  it('makes person.updated with the changed field IDs and their new values only', () => {
    const events = personEvents(
      PERSON,
      change({
        oldImage: image({ 'str::email': 'ada@example.com', 'str::first': 'Ada', 'int:cm:n': 1 }),
        newImage: image(
          { 'str::email': 'ada@example.com', 'str::first': 'Grace' },
          { tags: { vip: true, new: true } },
        ),
      }),
    );
    expect(events.map((event) => event.type)).toEqual(['person.updated']);
    expect(events[0]?.data).toEqual({
      person_id: PERSON,
      changed_field_ids: ['int:cm:n', 'str::first', 'u4s::t'],
      changes: { 'int:cm:n': null, 'str::first': 'Grace', 'u4s::t': ['new', 'vip'] },
    });
  });

  it('makes nothing of a change that touches no field, tag or state (index keys, versions)', () => {
    const before = image({ 'str::first': 'Ada' }, { version: 1 });
    expect(
      personEvents(PERSON, change({ oldImage: before, newImage: { ...before, version: 2 } })),
    ).toEqual([]);
  });

  it('makes person.archived, person.restored and person.deleted (IDs only)', () => {
    const live = image({ 'str::first': 'Ada' });
    const archived = { ...live, archived_at: '2026-11-24T12:00:00.000Z' };
    expect(
      personEvents(PERSON, change({ oldImage: live, newImage: archived })).map((e) => e.type),
    ).toEqual(['person.archived']);
    expect(
      personEvents(PERSON, change({ oldImage: archived, newImage: live })).map((e) => e.type),
    ).toEqual(['person.restored']);
    const [deleted] = personEvents(PERSON, change({ eventName: 'REMOVE', oldImage: live }));
    expect(deleted).toMatchObject({ type: 'person.deleted', data: { person_id: PERSON } });
    expect(Object.keys(deleted?.data ?? {})).toEqual(['person_id']);
  });

  it('gives a change delivered twice the same event IDs, and another change other IDs', () => {
    const insert = change({ eventName: 'INSERT', newImage: image({}) });
    const first = personEvents(PERSON, insert)[0]?.id;
    expect(personEvents(PERSON, { ...insert })[0]?.id).toBe(first);
    expect(personEvents(PERSON, { ...insert, sequenceNumber: '101' })[0]?.id).not.toBe(first);
    expect(first).toMatch(/^msg_[0-9a-f]{32}$/);
  });
});

describe('subscriptions and fan-out', () => {
  it('matches types, families and everything', () => {
    expect(subscribesTo(['person.created'], 'person.created')).toBe(true);
    expect(subscribesTo(['person.created'], 'person.updated')).toBe(false);
    expect(subscribesTo(['person.*'], 'person.deleted')).toBe(true);
    expect(subscribesTo(['person.*'], 'organization.created')).toBe(false);
    expect(subscribesTo(['*'], 'audience.entered')).toBe(true);
  });

  it('queues one delivery per enabled, subscribed webhook of the instance', () => {
    const hook = (id: string, events: string[], enabled = true): Webhook => ({
      id,
      url: 'https://hooks.example.com/',
      events,
      enabled,
      created_at: '',
      updated_at: '',
      secrets: [{ wrapped: 'x' }],
    });
    const events = personEvents(PERSON, change({ eventName: 'INSERT', newImage: image({}) }));
    const messages = fanOut('acme', events, [
      hook('a', ['*']),
      hook('b', ['person.updated']),
      hook('c', ['person.*'], false),
      hook('d', ['person.created']),
    ]);
    expect(messages.map((m) => [m.instance_id, m.webhook_id, m.event.type])).toEqual([
      ['acme', 'a', 'person.created'],
      ['acme', 'd', 'person.created'],
    ]);
  });
});
