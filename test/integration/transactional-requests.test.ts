import { describe, expect, it } from '@jest/globals';
import { asset, send, sendOk, settledStatus, type Body, type Entry } from './emails.js';
import { uniqueEmail } from './people.js';
import { KEYS, call } from './stack.js';

/**
 * Transactional email requests over HTTP: the gates and limits, what each recipient gets, and
 * the status lookup. SES only has to accept the sends, so this file also runs against
 * LocalStack (transactional.test.ts reads what the local SES gateway received).
 */
const key = KEYS.mailer;

describe('POST /v1/transactional/send: gates and limits', () => {
  it('refuses an instance without the feature with the spec 403 naming the instance', async () => {
    const response = await send(
      { asset: asset(), emails: [{ fields: { 'str::email': uniqueEmail() } }] },
      KEYS.nomail,
    );
    expect(response.status).toBe(403);
    expect(response.body.code).toBe(403);
    expect(response.body.error).toMatch(/transactional email feature is not activated/);
    expect(response.body.error).toMatch(/No Mail Co/);
    expect(response.body.error).toMatch(/playbook or journey/);
  });

  it('refuses a plan below Business with a 403 saying so', async () => {
    const response = await send(
      { asset: asset(), emails: [{ fields: { 'str::email': uniqueEmail() } }] },
      KEYS.cheapmail,
    );
    expect(response.status).toBe(403);
    expect(response.body.error).toMatch(/Business or Enterprise plan/);
    expect(response.body.error).toMatch(/professional/);
  });

  it('enforces each limit with a 400 or 413 naming what was over, writing nothing', async () => {
    const email = uniqueEmail('limits');
    const one = [{ fields: { 'str::email': email } }];
    const cases: [Body, number, RegExp][] = [
      [{ asset: asset(), emails: [] }, 400, /emails: expected 1 to 100 emails/],
      [
        {
          asset: asset(),
          emails: Array.from({ length: 101 }, () => ({ fields: { 'str::email': email } })),
        },
        400,
        /emails: expected 1 to 100 emails/,
      ],
      [
        {
          asset: asset({ cc: Array.from({ length: 6 }, (_, i) => `c${i}@example.com`) }),
          emails: one,
        },
        400,
        /asset\.cc: expected at most 5 cc addresses/,
      ],
      [{ asset: asset({ html_body: undefined }), emails: one }, 400, /asset\.html_body: required/],
      [{ asset: asset({ from_email: 'not an address' }), emails: one }, 400, /asset\.from_email/],
      [
        {
          asset: asset({
            attachments: [
              { filename: 'a.txt', content_type: 'text/plain', content: '!!notbase64' },
            ],
          }),
          emails: one,
        },
        400,
        /asset\.attachments\[0\]\.content: expected valid base64/,
      ],
      [
        {
          asset: asset({ attachments: [{ content_type: 'text/plain', content: 'aGk=' }] }),
          emails: one,
        },
        400,
        /asset\.attachments\[0\]\.filename/,
      ],
      [
        {
          asset: asset({
            attachments: [
              {
                filename: 'big.bin',
                content_type: 'application/octet-stream',
                content: 'A'.repeat(1024 * 1024 + 4),
              },
            ],
          }),
          emails: one,
        },
        413,
        /asset\.attachments\[0\]\.content/,
      ],
      [
        {
          asset: asset({
            attachments: [0, 1, 2].map((i) => ({
              filename: `part${i}.bin`,
              content_type: 'application/octet-stream',
              content: 'A'.repeat(900 * 1024),
            })),
          }),
          emails: one,
        },
        413,
        /The email of emails\[0\]/,
      ],
      [
        { asset: asset({ campaign_id: 'cccccccccccccccccccccccc' }), emails: one },
        400,
        /asset\.campaign_id: no single-send campaign cccccccccccccccccccccccc/,
      ],
    ];
    for (const [body, status, message] of cases) {
      const response = await send({ merge_by: ['str::email'], ...body });
      expect({ status: response.status, error: response.body.error }).toEqual({
        status,
        error: expect.stringMatching(message),
      });
      expect(response.body.code).toBe(status);
    }
    // Nothing was written: the recipient of every refused request does not exist.
    const found = await call('/v1/person/get', {
      key,
      body: { limit: 10, q: email, fields: ['str::email'] },
    });
    expect(found.body.contacts).toEqual([]);
  });

  it('refuses a request body over the edge limit with 413 in the envelope', async () => {
    const response = await call('/v1/transactional/send', {
      key,
      rawBody: JSON.stringify({ asset: asset(), emails: [], pad: 'x'.repeat(6 * 1024 * 1024) }),
    });
    expect(response.status).toBe(413);
    expect(response.body.code).toBe(413);
  });
});

describe('POST /v1/transactional/send: each recipient', () => {
  it('fails only the recipient whose template cannot render, naming the error', async () => {
    const response = await send({
      merge_by: ['str::email'],
      asset: asset(),
      emails: [
        { fields: { 'str::email': uniqueEmail() } },
        {
          fields: { 'str::email': uniqueEmail() },
          asset: asset({ html_body: '{{ people.first-name | nosuchfilter }}' }),
        },
      ],
    });
    expect(response.status).toBe(202);
    const [good, bad] = response.body.emails as [Entry, Entry];
    expect(good.email_status).toBe('queued');
    expect(bad).toMatchObject({
      email_status: 'invalid',
      error: expect.stringMatching(/template error: .*nosuchfilter/),
    });
    expect(bad.message_id).toBeUndefined();
  });

  it('names the entry of emails whose person fields are invalid, not a position among people', async () => {
    const response = await send({
      asset: asset(),
      emails: [
        {
          fields: { 'str::email': uniqueEmail() },
          asset: asset({ html_body: '{{ people.first-name | nosuchfilter }}' }),
        },
        { fields: { 'str::email': uniqueEmail() } },
        { fields: { 'str::email': uniqueEmail(), 'str::nope': 'x' } },
      ],
    });
    expect(response.status).toBe(202);
    const bad = (response.body.emails as Entry[])[2];
    expect(bad?.error).toMatch(/^emails\[2\]\.fields\.str::nope: /);
    const refused = await send({
      asset: asset(),
      emails: [{ fields: { 'str::email': uniqueEmail(), 'str::nope': 'x' } }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/\(emails\[0\]\.fields\.str::nope: /);
  });

  it('skips people that do not exist with skip_non_existing, and emails unsubscribed people', async () => {
    const unsubscribed = uniqueEmail('unsub');
    const [entry, skipped] = await sendOk({
      asset: asset(),
      skip_non_existing: false,
      emails: [{ fields: { 'str::email': unsubscribed, 'bol::p': false } }],
    }).then(async (first) => [
      ...first,
      ...(await sendOk({
        asset: asset(),
        skip_non_existing: true,
        emails: [{ fields: { 'str::email': uniqueEmail('nobody') } }],
      })),
    ]);
    expect(entry?.email_status).toBe('queued');
    await settledStatus(entry?.message_id as string, ['sent']);
    expect(skipped).toEqual({ contact_status: 'skipped', email_status: 'skipped' });
  });
});

describe('POST /v1/transactional/get', () => {
  it('looks emails up by message ID, and not those of another instance', async () => {
    const [entry] = await sendOk({
      asset: asset({ email_name: 'lookup' }),
      emails: [{ fields: { 'str::email': uniqueEmail() } }],
    });
    const messageId = entry?.message_id as string;
    const status = await settledStatus(messageId, ['sent']);
    expect(status).toMatchObject({
      message_id: messageId,
      person_id: entry?.person_id,
      email_name: 'lookup',
      status: 'sent',
    });
    const elsewhere = await call('/v1/transactional/get', {
      key: KEYS.acme,
      body: { message_ids: [messageId] },
    });
    expect(elsewhere.status).toBe(404);
    expect(JSON.stringify(elsewhere.body)).not.toContain('lookup');
  });
});
