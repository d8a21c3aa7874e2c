import { describe, expect, it } from '@jest/globals';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { z } from 'zod';
import { DynamoLastSeenStore } from '../../shared/adapters/last-seen-store.js';
import { tableName } from '../../shared/resources.js';
import { lastSeenWorker } from '../../shared/worker/last-seen-runtime.js';
import { until } from './emails.js';
import { KEYS, call, functionContext, stackDb } from './stack.js';
import { activitiesOf, fieldsOf, mergeOne, uniqueEmail } from './people.js';

const key = KEYS.tracker;

interface Entry {
  person_id?: string;
  person_status: string;
  activity_id?: string;
  status: string;
  error?: string;
}

async function record(body: Record<string, unknown>, apiKey: string = key) {
  const response = await call('/v1/activities/create', { key: apiKey, body });
  return {
    status: response.status,
    body: response.body,
    entries: response.body.activities as Entry[],
  };
}

const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000).toISOString();

const PEOPLE = tableName('default', 'people');

/** Waits until the person's last seen is `at` (the last-seen worker runs off the stream). */
function lastSeenOf(id: string, at: string): Promise<string> {
  return until(`last seen of ${id} to be ${at}`, async () => {
    const seen = (await fieldsOf(key, id, ['tme::last-seen']))['tme::last-seen'];
    return seen === at ? seen : undefined;
  });
}

const PersonItem = z.object({
  pk: z.string(),
  version: z.number(),
  fields: z.record(z.string(), z.unknown()),
});

async function personItem(instanceId: string, id: string) {
  const { Item } = await stackDb().db.send(
    new GetCommand({
      TableName: PEOPLE,
      Key: { pk: `${instanceId}#P#${id}`, sk: 'P' },
      ConsistentRead: true,
    }),
  );
  return PersonItem.parse(Item);
}

describe('activities create', () => {
  it('creates the person, records the activity with typed attributes and display text', async () => {
    const email = uniqueEmail('buyer');
    const { status, entries } = await record({
      activities: [
        {
          activity_id: 'act:cm:purchased',
          fields: { 'str::email': email, 'str::first': 'Bea' },
          attributes: {
            'str:cm:item': 'Teapot',
            'int:cm:price': 24990,
            'dtz:cm:delivery': { year: 2026, month: 12, day: 1, timezone: 'Europe/Paris' },
            'bol:cm:gift': true,
            'str:cm:undefined-attribute': 'dropped',
            'int::v': 24990,
          },
        },
      ],
    });
    expect(status).toBe(200);
    const [entry] = entries;
    expect(entry).toEqual({
      person_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
      person_status: 'created',
      activity_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
      status: 'ingested',
    });
    const timeline = await activitiesOf(key, entry?.person_id ?? '');
    const purchase = timeline.find((a) => a.field_id === 'act:cm:purchased') as unknown as Record<
      string,
      unknown
    >;
    expect(purchase).toMatchObject({
      id: entry?.activity_id,
      attr: {
        'str:cm:item': 'Teapot',
        'int:cm:price': 24990,
        'dtz:cm:delivery': { year: 2026, month: 12, day: 1, timezone: 'Europe/Paris' },
        'bol:cm:gift': true,
      },
      display: 'Bought Teapot for 24990',
      value: 24990,
    });
    expect(purchase.attr).not.toHaveProperty('str:cm:undefined-attribute');
    // map_to_crm and track_as_touch
    const fields = await fieldsOf(key, entry?.person_id ?? '', [
      'str:cm:last-item',
      'tme::last-seen',
      'str::first',
    ]);
    expect(fields['str:cm:last-item']).toBe('Teapot');
    expect(fields['str::first']).toBe('Bea');
    // Last seen follows from the activities' stream, shortly after the answer.
    expect(await lastSeenOf(entry?.person_id ?? '', String(purchase.created_at))).toBe(
      purchase.created_at,
    );
  });

  it('answers every person_status: merged, by-id, skipped and invalid', async () => {
    const email = uniqueEmail();
    const { person_id } = await mergeOne(key, { fields: { 'str::email': email } });
    const { entries } = await record({
      activities: [
        {
          activity_id: 'act:cm:viewed',
          fields: { 'str::email': email },
          attributes: { 'str:cm:page': '/a' },
        },
        { activity_id: 'act:cm:viewed', person_id, attributes: { 'str:cm:page': '/b' } },
        { activity_id: 'act:cm:viewed', fields: { 'str::first': 'No key' } },
        { activity_id: 'act:cm:nope', fields: { 'str::email': email } },
        { activity_id: 'act:cm:viewed', fields: { 'str::email': email, 'str:cm:unknown': 1 } },
        {
          activity_id: 'act:cm:viewed',
          fields: { 'str::email': email },
          attributes: { 'str:cm:page': 42 },
        },
        { activity_id: 'act:cm:viewed', person_id: 'ffffffffffffffffffffffff' },
      ],
    });
    expect(entries.map((e) => e.person_status)).toEqual([
      'merged',
      'by-id',
      'invalid',
      'invalid',
      'invalid',
      'invalid',
      'invalid',
    ]);
    expect(entries[0]).toMatchObject({ person_id, status: 'ingested' });
    expect(entries[1]).toMatchObject({ person_id, status: 'ingested' });
    expect(entries[2]?.error).toMatch(/activities\[2\]\.fields: str::email or str::ei is required/);
    expect(entries[3]?.error).toBe(
      'activities[3].activity_id: no activity definition "act:cm:nope"',
    );
    expect(entries[4]?.error).toMatch(
      /activities\[4\]\.fields\.str:cm:unknown: is not a custom field/,
    );
    expect(entries[5]?.error).toMatch(
      /activities\[5\]\.attributes\.str:cm:page: expected a string/,
    );
    expect(entries[6]?.error).toMatch(/no person has this ID/);
    const timeline = await activitiesOf(key, person_id ?? '');
    expect(timeline.filter((a) => a.field_id === 'act:cm:viewed')).toHaveLength(2);

    const skipped = await record(
      {
        activities: [
          {
            activity_id: 'act:cm:viewed',
            fields: { 'str::email': email, 'str::first': 'Ignored' },
          },
        ],
      },
      KEYS.trackerSkip,
    );
    expect(skipped.entries[0]).toMatchObject({
      person_id,
      person_status: 'skipped',
      status: 'ingested',
    });
    expect(await fieldsOf(key, person_id ?? '', ['str::first'])).toEqual({});
  });

  it('accepts 89 days of back-dating and refuses 91, recording nothing', async () => {
    const email = uniqueEmail();
    const ok = await record({
      activities: [
        { activity_id: 'act:cm:viewed', fields: { 'str::email': email }, created: daysAgo(89) },
      ],
    });
    expect(ok.entries[0]?.status).toBe('ingested');
    const old = uniqueEmail();
    const refused = await record({
      activities: [
        { activity_id: 'act:cm:viewed', fields: { 'str::email': old } },
        { activity_id: 'act:cm:viewed', fields: { 'str::email': old }, created: daysAgo(91) },
      ],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/the created date is more than 90 days ago/);
    expect((await mergeOne(key, { fields: { 'str::email': old } })).status).toBe('created');
    const future = await record({
      activities: [
        {
          activity_id: 'act:cm:viewed',
          fields: { 'str::email': email },
          created: new Date(Date.now() + 3600_000).toISOString(),
        },
      ],
    });
    expect(future.status).toBe(400);
  });

  it('answers an invalid time zone in a dtz attribute as the spec says, recording nothing', async () => {
    const email = uniqueEmail();
    const response = await record({
      activities: [
        { activity_id: 'act:cm:viewed', fields: { 'str::email': email } },
        {
          activity_id: 'act:cm:purchased',
          fields: { 'str::email': email },
          attributes: {
            'dtz:cm:delivery': { year: 2026, month: 1, day: 1, timezone: 'Moon/Base' },
          },
        },
      ],
    });
    expect(response.status).toBe(500);
    expect(response.body).toMatchObject({ code: 500, error: 'Internal Server Error' });
    expect((await mergeOne(key, { fields: { 'str::email': email } })).status).toBe('created');
  });

  it('records an activity once per key, answering retries with the first IDs', async () => {
    const email = uniqueEmail();
    const idempotency = `order-${email}`;
    const activity = {
      activity_id: 'act:cm:purchased',
      fields: { 'str::email': email },
      key: idempotency,
      attributes: { 'str:cm:item': 'Cup' },
    };
    const first = await record({ activities: [activity, activity] });
    const again = await record({ activities: [activity] });
    expect(first.entries[1]?.activity_id).toBe(first.entries[0]?.activity_id);
    expect(again.entries[0]).toMatchObject({
      activity_id: first.entries[0]?.activity_id,
      person_id: first.entries[0]?.person_id,
      status: 'ingested',
    });
    const timeline = await activitiesOf(key, first.entries[0]?.person_id ?? '');
    expect(timeline.filter((a) => a.field_id === 'act:cm:purchased')).toHaveLength(1);
  });

  it('moves last seen forward only, with the place of the location', async () => {
    const email = uniqueEmail();
    const { entries } = await record({
      activities: [
        {
          activity_id: 'act:cm:purchased',
          fields: { 'str::email': email },
          created: daysAgo(2),
          location: { source_ip: '203.2.218.214' },
        },
      ],
    });
    const id = entries[0]?.person_id ?? '';
    const first = (await activitiesOf(key, id)).find((a) => a.field_id === 'act:cm:purchased');
    const at = String(first?.created_at);
    await lastSeenOf(id, at);
    const seen = await fieldsOf(key, id, ['tme::last-seen', 'geo::last-seen']);
    expect(seen['geo::last-seen']).toEqual({ name: 'Sydney, New South Wales, Australia' });
    // An older touch, then an activity that is not one, then a newer touch without a place:
    // the stream hands a person's activities on in order, so once the newer one shows, the
    // older one was handled before it and did not move last seen back.
    await record({
      activities: [{ activity_id: 'act:cm:purchased', person_id: id, created: daysAgo(5) }],
    });
    await record({ activities: [{ activity_id: 'act:cm:viewed', person_id: id }] });
    const newer = daysAgo(1);
    await record({
      activities: [{ activity_id: 'act:cm:purchased', person_id: id, created: newer }],
    });
    await lastSeenOf(id, newer);
    // The place stays where the last touch with a place left it.
    expect((await fieldsOf(key, id, ['geo::last-seen']))['geo::last-seen']).toEqual({
      name: 'Sydney, New South Wales, Australia',
    });
  });

  it('last seen: a late or repeated activity of the stream never moves it back', async () => {
    const email = uniqueEmail();
    const id = (await mergeOne(key, { fields: { 'str::email': email } })).person_id ?? '';
    const worker = lastSeenWorker(new DynamoLastSeenStore(stackDb().db, { people: PEOPLE }));
    const instanceId = 'tracker';
    const insert = (created: string, n: number, city?: string) => ({
      eventName: 'INSERT' as const,
      dynamodb: {
        Keys: marshall({ pk: `${instanceId}#P#${id}`, sk: `${created}#${n}` }),
        NewImage: marshall({
          pk: `${instanceId}#P#${id}`,
          sk: `${created}#${n}`,
          created_at: created,
          touch: true,
          ...(city ? { location: { city } } : {}),
        }),
        SequenceNumber: String(n),
        ApproximateCreationDateTime: Date.now() / 1000,
      },
    });
    const handle = (records: ReturnType<typeof insert>[]) =>
      worker({ Records: records } as unknown as DynamoDBStreamEvent, functionContext);
    const newer = daysAgo(1);
    const older = daysAgo(3);
    expect(await handle([insert(newer, 1, 'Lyon')])).toEqual({ batchItemFailures: [] });
    const moved = await personItem(instanceId, id);
    expect(moved.fields['tme::last-seen']).toBe(newer);
    expect(moved.fields['geo::last-seen']).toEqual({ name: 'Lyon' });
    // Redelivered, and a late older activity: nothing moves, not even the version.
    expect(await handle([insert(newer, 1, 'Lyon'), insert(older, 2, 'Paris')])).toEqual({
      batchItemFailures: [],
    });
    expect(await handle([insert(older, 2, 'Paris')])).toEqual({ batchItemFailures: [] });
    const after = await personItem(instanceId, id);
    expect(after.fields['tme::last-seen']).toBe(newer);
    expect(after.fields['geo::last-seen']).toEqual({ name: 'Lyon' });
    expect(after.version).toBe(moved.version);
  });

  it('records 100 activities in one request', async () => {
    const email = uniqueEmail();
    const { entries } = await record({
      activities: Array.from({ length: 100 }, (_, i) => ({
        activity_id: 'act:cm:viewed',
        fields: { 'str::email': i % 2 ? email : uniqueEmail() },
        attributes: { 'str:cm:page': `/p${i}` },
      })),
    });
    expect(entries.filter((e) => e.status === 'ingested')).toHaveLength(100);
    expect(new Set(entries.map((e) => e.activity_id)).size).toBe(100);
    const person = entries[1]?.person_id ?? '';
    expect(entries.filter((e) => e.person_id === person)).toHaveLength(50);
  });

  it('defines activities through the API, checked like the configuration file', async () => {
    const id = `act:cm:signed-up-${Date.now().toString(36)}`;
    const created = await call('/v1/definitions/activity/create', {
      key,
      body: {
        id,
        name: 'Signed up',
        attributes: [{ id: 'str:cm:plan', name: 'Plan' }],
        track_as_touch: true,
      },
    });
    expect(created.status).toBe(200);
    const used = await record({
      activities: [
        {
          activity_id: id,
          fields: { 'str::email': uniqueEmail() },
          attributes: { 'str:cm:plan': 'pro' },
        },
      ],
    });
    expect(used.entries[0]?.status).toBe('ingested');
    const again = await call('/v1/definitions/activity/create', {
      key,
      body: { id, name: 'Signed up' },
    });
    expect(again.status).toBe(409);
    const bad = await call('/v1/definitions/activity/create', {
      key,
      body: {
        id: 'act:cm:bad',
        name: 'Bad',
        attributes: [{ id: 'int:cm:n', name: 'N', kind: 'date' }],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/attributes\[0\]\.kind/);
  });
});
