import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { CdpApiError, createCdpClient, listPeople } from '../../clients/typescript/src/index.js';
import { checkedFetch } from '../contract.js';
import { until } from './emails.js';
import { KEYS, baseUrl } from './stack.js';

/**
 * The typed client (`clients/typescript`) through a whole flow against the local stack: merge
 * people, record an activity, list them page by page, send them an email and follow it until
 * it is sent. Its requests go through the contract check like every other call.
 */
const client = createCdpClient({
  baseUrl: baseUrl('default'),
  apiKey: KEYS.acme,
  fetch: (request) => checkedFetch(request),
});

describe('the typed client', () => {
  it('merges, records an activity, lists with paging and sends an email', async () => {
    const family = `Typed${randomBytes(4).toString('hex')}`;
    const emails = ['ada', 'grace', 'hedy'].map(
      (name) => `${name}.${family.toLowerCase()}@example.com`,
    );

    const merged = await client.POST('/v1/person/merge', {
      body: {
        people: emails.map((email, index) => ({
          fields: { 'str::email': email, 'str::first': `First${index}`, 'str::last': family },
          tags: ['typed-client'],
        })),
        merge_by: ['str::email'],
      },
      headers: { 'Idempotency-Key': `typed-${family}` },
    });
    expect(merged.response.status).toBe(200);
    const people = merged.data?.people ?? [];
    expect(people.map((entry) => entry.status)).toEqual(['created', 'created', 'created']);
    const ids = people.map((entry) => entry.person_id ?? '');
    expect(ids.every((id) => /^[0-9a-f]{24}$/.test(id))).toBe(true);
    const [ada] = ids;
    if (!ada) throw new Error('no person');

    const recorded = await client.POST('/v1/activities/create', {
      body: {
        activities: [
          {
            activity_id: 'act:cm:purchased',
            person_id: ada,
            attributes: { 'str:cm:item': 'Difference engine', 'int:cm:price': 24990 },
            key: `typed-${family}`,
          },
        ],
      },
    });
    expect(recorded.data?.activities).toEqual([
      {
        person_id: ada,
        person_status: 'by-id',
        activity_id: expect.any(String),
        status: 'ingested',
      },
    ]);
    const timeline = await client.POST('/v1/person/get/activities', {
      body: { person_id: ada, activities: ['act:cm:purchased'] },
    });
    expect(timeline.data?.activities.map((activity) => activity.attr)).toEqual([
      { 'str:cm:item': 'Difference engine', 'int:cm:price': 24990 },
    ]);

    // Two pages of two (the search finds these three people only).
    const listed: string[] = [];
    for await (const contact of listPeople(client, {
      q: family,
      limit: 2,
      fields: ['str::email', 'tags'],
    })) {
      listed.push(contact.fields?.['str::email'] as string);
      expect(contact.fields?.tags).toEqual(['typed-client']);
    }
    expect(listed.sort()).toEqual([...emails].sort());

    const sent = await client.POST('/v1/transactional/send', {
      body: {
        asset: {
          from_email: 'team@mail.acme.test',
          subject: 'Hello {{ people.first-name }}',
          email_name: 'typed-client',
          html_body: '<html><body><p>Hi {{ people.first-name }}</p></body></html>',
        },
        emails: [{ fields: { 'str::email': emails[0] ?? '' } }],
        merge_by: ['str::email'],
      },
    });
    expect(sent.response.status).toBe(202);
    const [email] = sent.data?.emails ?? [];
    expect(email).toMatchObject({
      person_id: ada,
      contact_status: 'merged',
      email_status: 'queued',
    });
    const messageId = email?.message_id ?? '';
    const delivered = await until(`email ${messageId} to be sent`, async () => {
      const { data } = await client.POST('/v1/transactional/get', {
        body: { message_ids: [messageId] },
      });
      const status = data?.emails[0]?.status;
      return status === 'sent' ? data?.emails[0] : undefined;
    });
    expect(delivered).toMatchObject({
      message_id: messageId,
      person_id: ada,
      email_name: 'typed-client',
    });
  });

  it('answers errors as the envelope, typed', async () => {
    const { data, error, response } = await client.POST('/v1/person/get', { body: { limit: 0 } });
    expect(data).toBeUndefined();
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 400, request_id: expect.any(String) });
    expect(error?.error).toMatch(/limit/);
    const wrongKey = createCdpClient({
      baseUrl: baseUrl('default'),
      apiKey: 'no-such-key',
      fetch: (request) => checkedFetch(request),
    });
    await expect(async () => {
      for await (const contact of listPeople(wrongKey)) expect(contact).toBeUndefined();
    }).rejects.toThrow(new CdpApiError({ request_id: '', code: 401, error: 'Invalid API key' }));
  });
});
