import { describe, expect, it } from '@jest/globals';
import {
  fanOut,
  organizationEvents,
  personEvents,
  type ItemChange,
} from '../../../shared/domain/webhooks/events.js';
import { subscribesTo, type Webhook } from '../../../shared/domain/webhooks/webhook.js';

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
