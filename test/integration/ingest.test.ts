import { describe, expect, it } from '@jest/globals';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createS3Client } from '../../shared/adapters/aws-clients.js';
import { localBucketName } from '../../shared/resources.js';
import { activitiesOf, fieldsOf, uniqueEmail } from './people.js';
import { KEYS, call, stackAwsEnv } from './stack.js';

/**
 * Asynchronous ingestion over HTTP and the local queues: `async: true` is checked, queued,
 * answered at once, applied by the ingest worker (the local pollers), and its answer is the
 * one the synchronous call gives. Also runs against the stack with DynamoDB faults.
 */
const key = KEYS.safety;

type Body = Record<string, unknown>;

/** Polls `POST /v1/async/get` until the request is done or failed. */
async function settled(requestId: string, apiKey = key): Promise<Body> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const response = await call('/v1/async/get', { key: apiKey, body: { request_id: requestId } });
    expect(response.status).toBe(200);
    if (response.body.status === 'done' || response.body.status === 'failed') return response.body;
    if (Date.now() > deadline) throw new Error(`request ${requestId} did not finish`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Answers with IDs and the data's own prefix made neutral, so equal data compares equal. */
function neutral(body: unknown, prefix: string): unknown {
  return JSON.parse(
    JSON.stringify(body)
      .replace(/[0-9a-f]{24}/g, 'ID')
      .replaceAll(prefix, 'P'),
  );
}

async function both(path: string, data: (prefix: string) => Body) {
  const syncPrefix = `s${Date.now().toString(36)}`;
  const asyncPrefix = `a${Date.now().toString(36)}`;
  const sync = await call(path, { key, body: data(syncPrefix) });
  expect(sync.status).toBe(200);
  const accepted = await call(path, { key, body: { ...data(asyncPrefix), async: true } });
  expect(accepted.status).toBe(200);
  const requestId = accepted.body.request_id as string;
  expect(requestId).toMatch(/^[0-9a-f]{24}$/);
  const final = await settled(requestId);
  expect(final).toMatchObject({ request_id: requestId, status: 'done' });
  return {
    sync: sync.body,
    accepted: accepted.body,
    result: final.result as Body,
    asyncPrefix,
    syncPrefix,
  };
}

describe('async: true', () => {
  it('queues a person merge, answers at once, and lands with the synchronous result', async () => {
    const data = (p: string) => ({
      people: [
        { fields: { 'str::email': `${p}1@ingest.test`, 'str::first': 'One' }, tags: ['t'] },
        { fields: { 'str::email': `${p}1@ingest.test`, 'str::last': 'Again' } },
        { fields: {} },
        { fields: { 'str::email': `${p}2@ingest.test`, 'str::first': 5 } },
        { fields: { 'str::email': `${p}3@ingest.test` }, tags: ['x'] },
      ],
    });
    const { sync, accepted, result, asyncPrefix, syncPrefix } = await both(
      '/v1/person/merge',
      data,
    );
    expect(accepted.people).toEqual(Array.from({ length: 5 }, () => ({ status: 'queued' })));
    expect(neutral(result, asyncPrefix)).toEqual(neutral(sync, syncPrefix));
    const people = result.people as { person_id?: string; status: string }[];
    expect(people.map((p) => p.status)).toEqual([
      'created',
      'merged',
      'invalid',
      'invalid',
      'created',
    ]);
    expect(people[1]?.person_id).toBe(people[0]?.person_id);
    expect(
      await fieldsOf(key, people[0]?.person_id ?? '', ['str::first', 'str::last', 'tags']),
    ).toEqual({
      'str::first': 'One',
      'str::last': 'Again',
      tags: ['t'],
    });
  });

  it('queues an organization merge with the synchronous result', async () => {
    const data = (p: string) => ({
      merge_by: ['str:o:name'],
      organizations: [
        { fields: { 'str:o:name': `${p} Widgets` } },
        { fields: { 'str:o:name': `${p} Widgets`, 'str:o:industry': 'Toys' } },
        { fields: {} },
      ],
    });
    const { sync, accepted, result, asyncPrefix, syncPrefix } = await both(
      '/v1/organizations/merge',
      data,
    );
    expect(accepted.organizations).toHaveLength(3);
    expect(neutral(result, asyncPrefix)).toEqual(neutral(sync, syncPrefix));
  });

  it('queues activities with the synchronous result, and records each once', async () => {
    const data = (p: string) => ({
      activities: [
        {
          activity_id: 'act:cm:signed-up',
          fields: { 'str::email': `${p}a@ingest.test` },
          attributes: { 'str:cm:plan': 'gold' },
        },
        { activity_id: 'act:cm:nothing-like-it', fields: { 'str::email': `${p}b@ingest.test` } },
        {
          activity_id: 'act:cm:signed-up',
          key: `${p}-k`,
          fields: { 'str::email': `${p}c@ingest.test` },
        },
        {
          activity_id: 'act:cm:signed-up',
          key: `${p}-k`,
          fields: { 'str::email': `${p}c@ingest.test` },
        },
      ],
    });
    const { sync, accepted, result, asyncPrefix, syncPrefix } = await both(
      '/v1/activities/create',
      data,
    );
    expect(accepted.activities).toEqual(
      Array.from({ length: 4 }, () => ({ person_status: 'queued', status: 'queued' })),
    );
    expect(neutral(result, asyncPrefix)).toEqual(neutral(sync, syncPrefix));
    const entries = result.activities as { person_id: string; activity_id: string }[];
    const timeline = await activitiesOf(key, entries[0]?.person_id ?? '');
    expect(timeline.filter((a) => a.id === entries[0]?.activity_id)).toHaveLength(1);
  });

  it('refuses what the synchronous call refuses before queueing anything', async () => {
    const invalid = await call('/v1/person/merge', {
      key,
      body: { async: true, people: [{ fields: {} }] },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({
      code: 400,
      error: expect.stringMatching(/^No person was merged: every record is invalid/) as unknown,
    });
    const tooOld = await call('/v1/activities/create', {
      key,
      body: {
        async: true,
        activities: [
          {
            activity_id: 'act:cm:signed-up',
            fields: { 'str::email': uniqueEmail('old') },
            created: new Date(Date.now() - 100 * 24 * 3600 * 1000).toISOString(),
          },
        ],
      },
    });
    expect(tooOld.status).toBe(400);
    expect(tooOld.body.error).toMatch(/more than 90 days ago/);
  });

  it('carries a request too large for one message through the payloads bucket', async () => {
    const notes = 'n'.repeat(60_000);
    const people = Array.from({ length: 5 }, () => ({
      fields: { 'str::email': uniqueEmail('large'), 'txt:cm:notes': notes },
    }));
    const accepted = await call('/v1/person/merge', { key, body: { async: true, people } });
    expect(accepted.status).toBe(200);
    const requestId = accepted.body.request_id as string;
    const final = await settled(requestId);
    const entries = (final.result as { people: { person_id: string; status: string }[] }).people;
    expect(entries.map((e) => e.status)).toEqual(Array.from({ length: 5 }, () => 'created'));
    expect(
      (await fieldsOf(key, entries[4]?.person_id ?? '', ['txt:cm:notes']))['txt:cm:notes'],
    ).toBe(notes);
    // The body travelled by S3.
    Object.assign(process.env, stackAwsEnv());
    const { Contents = [] } = await createS3Client().send(
      new ListObjectsV2Command({
        Bucket: localBucketName('default', 'payloads'),
        Prefix: `ingest/safety/${requestId}`,
      }),
    );
    expect(Contents.map((object) => object.Key)).toEqual([`ingest/safety/${requestId}.json`]);
  });

  it('queues a request once per Idempotency-Key', async () => {
    const email = uniqueEmail('idem-async');
    const headers = { 'idempotency-key': `async-${Date.now()}-${Math.random()}` };
    const body = { async: true, people: [{ fields: { 'str::email': email } }] };
    const first = await call('/v1/person/merge', { key, body, headers });
    const repeat = await call('/v1/person/merge', { key, body, headers });
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body.request_id).toBe(first.body.request_id);
    const final = await settled(first.body.request_id as string);
    expect((final.result as { people: { status: string }[] }).people[0]?.status).toBe('created');
  });

  it("answers 404 for an unknown request ID and for another instance's", async () => {
    const accepted = await call('/v1/person/merge', {
      key,
      body: { async: true, people: [{ fields: { 'str::email': uniqueEmail('mine') } }] },
    });
    const requestId = accepted.body.request_id as string;
    await settled(requestId);
    for (const [apiKey, id] of [
      [KEYS.ledger, requestId],
      [key, '0123456789abcdef01234567'],
    ] as const) {
      const response = await call('/v1/async/get', { key: apiKey, body: { request_id: id } });
      expect(response.status).toBe(404);
      expect(response.body).toMatchObject({
        code: 404,
        error: `request_id: no asynchronous request ${id}`,
      });
    }
  });
});
