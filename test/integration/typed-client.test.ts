import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { CdpApiError, createCdpClient, listPeople } from '../../clients/typescript/src/index.js';
import { checkedFetch } from '../contract.js';
import { until } from './emails.js';
import { KEYS, baseUrl } from './stack.js';

/**
 * The typed client (`clients/typescript`) through a whole flow against the local stack: merge
 * people, record an activity, list them page by page, send them an email and follow it until
 * it is sent; archive and erase a person (`PUT`, `DELETE` with a body), and the routes beyond
 * the spec. Its requests go through the contract check like every other call.
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

  it('archives and erases a person (PUT, DELETE) and reads the routes beyond the spec', async () => {
    const email = `erased.${randomBytes(4).toString('hex')}@example.com`;
    const merged = await client.POST('/v1/person/merge', {
      body: { people: [{ fields: { 'str::email': email } }], merge_by: ['str::email'] },
    });
    const id = merged.data?.people[0]?.person_id ?? '';
    expect(id).toMatch(/^[0-9a-f]{24}$/);

    const subscriptions = await client.POST('/v1/person/subscriptions', {
      body: { people: [{ email }, { person_id: '0'.repeat(24) }] },
    });
    expect(subscriptions.data?.people).toEqual([
      {
        person_status: 'merged',
        person_id: id,
        email,
        email_permissions: true,
        sms_permissions: false,
        subscriptions: [],
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      },
      {
        person_status: 'invalid',
        person_id: '0'.repeat(24),
        error: 'people[1].person_id: no person has this ID',
      },
    ]);
    const schema = await client.POST('/v1/instance-schema/get', { body: { namespaces: [''] } });
    expect(schema.data?.namespaces['']?.fields['str::email']).toEqual({
      id: 'str::email',
      name: expect.any(String),
      display_type: 'email',
      liquid_name: 'people.email',
    });

    // Only archived people can be deleted: the error envelope, typed.
    const refused = await client.DELETE('/v1/person/delete', { body: { inclusion_ids: [id] } });
    expect(refused.response.status).toBe(400);
    expect(refused.error?.error).toContain(id);
    const archived = await client.PUT('/v1/person/archive', { body: { inclusion_ids: [id] } });
    expect(archived.data).toEqual({ scheduled_contacts: 0, archived_contacts: 1 });
    const deleted = await client.DELETE('/v1/person/delete', { body: { inclusion_ids: [id] } });
    expect(deleted.response.status).toBe(200);
    expect(deleted.data).toEqual({ scheduled_contacts: 0, deleted_contacts: 1 });
    const gone = await client.POST('/v1/person/get-by-ids', { body: { contact_ids: [id] } });
    expect(gone.data).toEqual({ contacts: {} });

    // The accounts names: the same organizations, in the other vocabulary.
    const name = `Typed account ${randomBytes(4).toString('hex')}`;
    const account = await client.POST('/v1/accounts/merge', {
      body: { accounts: [{ fields: { 'str:o:name': name } }], merge_by: ['str:o:name'] },
    });
    const accountId = account.data?.accounts[0]?.account_id ?? '';
    expect(account.data?.accounts).toEqual([{ account_id: accountId, status: 'created' }]);
    const byIds = await client.POST('/v1/organizations/get-by-ids', {
      body: { organization_ids: [accountId] },
    });
    expect(byIds.data?.organizations[accountId]).toEqual({
      id: accountId,
      fields: { 'str:o:name': name },
    });
    await client.PUT('/v1/accounts/archive', { body: { inclusion_ids: [accountId] } });
    const erased = await client.DELETE('/v1/accounts/delete', {
      body: { inclusion_ids: [accountId] },
    });
    expect(erased.data).toEqual({ scheduled_accounts: 0, deleted_accounts: 1 });
  });

  it('creates and lists custom fields, tags and activity definitions in the real shapes', async () => {
    const suffix = randomBytes(4).toString('hex');
    const created = await client.POST('/v1/person/custom-field/create', {
      body: { name: `Typed plan ${suffix}`, type: 'single_select', values: ['Free'] },
    });
    const fieldId = `str:cm:typed-plan-${suffix}`;
    expect(created.data).toEqual({
      name: `Typed plan ${suffix}`,
      field_id: fieldId,
      display_type: 'single_select',
      values: ['Free'],
    });
    const updated = await client.PUT('/v1/person/custom-field/update', {
      body: { field_id: fieldId, add_values: ['Pro'] },
    });
    expect(updated.data).toEqual({
      field_id: fieldId,
      values: ['Free', 'Pro'],
      track_changes: false,
    });
    const listed = await client.POST('/v1/person/custom-field/get', { body: {} });
    expect(listed.data?.fields.map((entry) => entry.field.id)).toContain(fieldId);
    const account = await client.POST('/v1/accounts/custom-field/create', {
      body: { name: `Typed tier ${suffix}`, type: 'text' },
    });
    expect(account.data?.field_id).toBe(`str:oc:typed-tier-${suffix}`);
    const organizations = await client.POST('/v1/organizations/custom-field/get', { body: {} });
    expect(organizations.data?.fields.map((field) => field.id)).toContain(
      `str:oc:typed-tier-${suffix}`,
    );
    const tags = await client.POST('/v1/tags/get', { body: { q: 'typed-client' } });
    expect(tags.data?.map((tag) => tag.name)).toContain('typed-client');

    const definition = await client.POST('/v1/definitions/activity/create', {
      body: { name: `Typed ${suffix}`, attributes: [{ name: 'Item', display_type: 'text' }] },
    });
    const activityId = `act:cm:typed-${suffix}`;
    expect(definition.data).toMatchObject({ custom_activity: { activity_field_id: activityId } });
    const modified = await client.PUT('/v1/definitions/activity/modify', {
      body: { activity_field_id: activityId, touch: false },
    });
    expect(modified.data?.custom_activity.touch).toBe(false);
    const archived = await client.DELETE('/v1/definitions/activity/delete', {
      body: { activity_field_id: activityId },
    });
    expect(archived.data).toEqual({ archived_activity: activityId });
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
