import { afterEach, describe, expect, it } from '@jest/globals';
import { simpleParser, type ParsedMail } from 'mailparser';
import {
  asset,
  html,
  sendOk,
  settledStatus,
  statusOf,
  until,
  type Body,
  type Entry,
} from './emails.js';
import { activitiesOf, fieldsOf, uniqueEmail } from './people.js';
import { GetQueueUrlCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { createSqsClient } from '../../shared/adapters/aws-clients.js';
import { DynamoConfigStore } from '../../shared/adapters/config-store.js';
import { LocalKeyWrapper } from '../../shared/adapters/key-wrappers.js';
import { LINK_TOKEN_DAYS, LinkSigner } from '../../shared/domain/email/link-tokens.js';
import { signingKeyrings } from '../../shared/http/api-runtime.js';
import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { newId } from '../../shared/domain/ids.js';
import { queueName, tableName } from '../../shared/resources.js';
import { adminEnv, run } from './cli.js';
import { KEYS, TEST_STACK, stackDb } from './stack.js';
import { checkedFetch } from '../contract.js';
import type { FaultsChange } from '../../local/ses-gateway.js';

/**
 * Transactional email over HTTP against the local stack: what the SES stand-in received is
 * read back as raw MIME and parsed with an independent parser (mailparser), and SES events
 * (the mailbox simulator's bounces and complaints) come back through SNS → SQS → the events
 * worker, as on AWS. It reads the SES gateway directly, so it does not run against LocalStack
 * (transactional-requests.test.ts does).
 */
const key = KEYS.mailer;
const ses = `http://127.0.0.1:${TEST_STACK.sesPort}`;

async function sesFaults(faults: FaultsChange): Promise<void> {
  const response = await fetch(`${ses}/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(faults),
  });
  expect(response.status).toBe(200);
}

// A test's SES faults do not outlive it, even when it fails: the gateway is the whole stack's.
afterEach(async () => {
  await sesFaults({ throttle: 0, internal_error: 0, answer_lost: 0, only_to: null });
});

interface GatewayMessage {
  messageId: string;
  tags: Record<string, string>;
  destinations: string[];
  from: string;
}

async function gatewayMessages(): Promise<GatewayMessage[]> {
  const response = await fetch(`${ses}/messages`);
  return ((await response.json()) as { messages: GatewayMessage[] }).messages;
}

/** What SES received for one of our emails, parsed from its raw MIME. */
async function received(messageId: string): Promise<{ mail: ParsedMail; raw: string }> {
  const sent = await until(`SES to receive ${messageId}`, async () =>
    (await gatewayMessages()).find((m) => m.tags.cdp_message === `mailer_${messageId}`),
  );
  const raw = await (await fetch(`${ses}/raw/${sent.messageId}`)).text();
  return { mail: await simpleParser(raw), raw };
}

async function sentCount(messageId: string): Promise<number> {
  return (await gatewayMessages()).filter((m) => m.tags.cdp_message === `mailer_${messageId}`)
    .length;
}

/** The List-Unsubscribe header's link, read from the raw header line (unfolded). */
function unsubscribeLink(mail: ParsedMail): string | undefined {
  const line = mail.headerLines.find((header) => header.key === 'list-unsubscribe')?.line ?? '';
  return /<([^>]+)>/.exec(line.replace(/\r?\n[ \t]+/g, ''))?.[1];
}

function linksIn(htmlBody: string): string[] {
  return [...htmlBody.matchAll(/href="([^"]+)"/g)].map((match) => match[1] as string);
}

function pixelIn(htmlBody: string): string | undefined {
  return /<img src="([^"]+\/t\/o\?t=[^"]+)"/.exec(htmlBody)?.[1];
}

describe('POST /v1/transactional/send: building and sending', () => {
  it('sends the global asset with Liquid, cc, reply-to, attachments and a text part', async () => {
    const ann = uniqueEmail('ann');
    const bob = uniqueEmail('bob');
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) % 256));
    const entries = await sendOk({
      asset: asset({
        subject: 'Order {{ json.order-id }} for {{ people.first-name | default: "friend" }}',
        html_body: html(
          '<p>Hi {{ people.first-name }} {{ people.last-name }} ({{ people.email }}), colour {{ people.custom.favourite-colour | default: "none" }}, points {{ people.custom.loyalty-points }}, shop {{ json.shop_name }} / {{ json.shop-name }}</p><a href="{{ urls.unsubscribe }}">unsubscribe</a>',
        ),
        cc: ['copy@example.com'],
        reply_to: 'support@example.com',
        attachments: [
          {
            filename: 'data.bin',
            content_type: 'application/octet-stream',
            content: bytes.toString('base64'),
          },
        ],
      }),
      static_json_values: { 'order-id': 'S-1', shop_name: 'Main street' },
      emails: [
        {
          fields: {
            'str::email': ann,
            'str::first': 'Ann',
            'str::last': 'Lee',
            'str:cm:favourite-colour': 'teal',
            'int:cm:loyalty-points': 42,
          },
          json_values: { order_id: 'A-7' },
        },
        { fields: { 'str::email': bob } },
      ],
    });
    expect(entries).toEqual([
      {
        person_id: expect.stringMatching(/^[0-9a-f]{24}$/),
        contact_status: 'created',
        email_status: 'queued',
        message_id: expect.stringMatching(/^[0-9a-f]{24}$/),
        email_name: 'hello',
      },
      expect.objectContaining({ contact_status: 'created', email_status: 'queued' }),
    ]);
    const [first, second] = entries as [Entry, Entry];
    await settledStatus(first.message_id as string, ['sent']);
    const { mail, raw } = await received(first.message_id as string);
    expect(mail.subject).toBe('Order A-7 for Ann');
    expect(mail.html).toContain(
      'Hi Ann Lee (' + ann + '), colour teal, points 42, shop Main street / Main street',
    );
    expect(mail.text).toContain('Hi Ann Lee');
    expect(mail.from?.value).toEqual([{ name: 'Mailer Team', address: 'team@mail.mailer.test' }]);
    expect(mail.replyTo?.value[0]?.address).toBe('support@example.com');
    expect((Array.isArray(mail.cc) ? mail.cc[0] : mail.cc)?.value[0]?.address).toBe(
      'copy@example.com',
    );
    expect((Array.isArray(mail.to) ? mail.to[0] : mail.to)?.value[0]?.address).toBe(ann);
    expect(mail.attachments).toHaveLength(1);
    expect(mail.attachments[0]?.filename).toBe('data.bin');
    expect(Buffer.compare(mail.attachments[0]?.content ?? Buffer.alloc(0), bytes)).toBe(0);
    // RFC 8058 one-click unsubscribe, the same link the Liquid variable renders.
    const unsubscribe = unsubscribeLink(mail);
    expect(unsubscribe).toMatch(/\/t\/u\?t=/);
    expect(raw).toMatch(/List-Unsubscribe-Post: List-Unsubscribe=One-Click/);
    expect(linksIn(mail.html || '')).toContain(unsubscribe);

    await settledStatus(second.message_id as string, ['sent']);
    const bobMail = (await received(second.message_id as string)).mail;
    expect(bobMail.subject).toBe('Order S-1 for friend');
    expect(bobMail.html).toContain('colour none');
    const sent = await activitiesOf(key, first.person_id as string);
    expect(sent).toContainEqual(
      expect.objectContaining({
        field_id: 'act::s',
        attr: expect.objectContaining({ 'str::email-name': 'hello' }),
      }),
    );
  });

  it('uses a recipient own asset instead of the global one', async () => {
    const [global, own] = (await sendOk({
      asset: asset({ subject: 'Global', email_name: 'global' }),
      emails: [
        { fields: { 'str::email': uniqueEmail() } },
        {
          fields: { 'str::email': uniqueEmail() },
          asset: asset({ subject: 'Own {{ people.email }}', email_name: 'own' }),
        },
      ],
    })) as [Entry, Entry];
    expect(global.email_name).toBe('global');
    expect(own.email_name).toBe('own');
    expect((await received(global.message_id as string)).mail.subject).toBe('Global');
    expect((await received(own.message_id as string)).mail.subject).toMatch(
      /^Own .+@example\.com$/,
    );
  });

  it('loads campaign and asset templates, the request properties overriding them', async () => {
    const email = uniqueEmail('tpl');
    const [campaign] = await sendOk({
      asset: { campaign_id: 'aaaaaaaaaaaaaaaaaaaaaaa1' },
      emails: [{ fields: { 'str::email': email, 'str::first': 'Cy' } }],
    });
    const fromCampaign = (await received(campaign?.message_id as string)).mail;
    expect(fromCampaign.subject).toBe('Welcome, Cy');
    expect(fromCampaign.html).toContain(`Campaign body for ${email}`);
    expect(fromCampaign.from?.value[0]).toEqual({
      name: 'Mailer Campaigns',
      address: 'hello@mail.mailer.test',
    });
    expect(campaign?.email_name).toBe('Welcome campaign');

    const [overridden] = await sendOk({
      asset: {
        campaign_id: 'aaaaaaaaaaaaaaaaaaaaaaa1',
        subject: 'Overridden {{ people.first-name }}',
        from_name: 'Other',
      },
      emails: [{ fields: { 'str::email': email } }],
    });
    const overriddenMail = (await received(overridden?.message_id as string)).mail;
    expect(overriddenMail.subject).toBe('Overridden Cy');
    expect(overriddenMail.from?.value[0]?.name).toBe('Other');
    expect(overriddenMail.html).toContain('Campaign body');

    const [fromAsset] = await sendOk({
      asset: { asset_id: 'bbbbbbbbbbbbbbbbbbbbbbb2' },
      emails: [
        {
          fields: { 'str::email': email, 'str:cm:favourite-colour': 'plum' },
          json_values: { 'order-id': 'R-9' },
        },
      ],
    });
    const assetMail = (await received(fromAsset?.message_id as string)).mail;
    expect(assetMail.subject).toBe('Your receipt R-9');
    expect(assetMail.html).toContain('Receipt R-9 for plum');
    expect(fromAsset?.email_name).toBe('receipt');
  });

  it('sends tags as written when liquid_syntax_enabled is false', async () => {
    const [entry] = await sendOk({
      asset: asset({
        liquid_syntax_enabled: false,
        subject: 'Raw {{ people.first-name }}',
        html_body: html('<p>{{ people.first-name }} {% if x %}y{% endif %}</p>'),
      }),
      emails: [{ fields: { 'str::email': uniqueEmail(), 'str::first': 'Dee' } }],
    });
    const { mail } = await received(entry?.message_id as string);
    expect(mail.subject).toBe('Raw {{ people.first-name }}');
    expect(mail.html).toContain('{{ people.first-name }} {% if x %}y{% endif %}');
  });

  it('sends from the fallback domain for other domains, keeping the address as Reply-To', async () => {
    const [entry] = await sendOk({
      asset: asset({ from_email: 'owner@gmail.example' }),
      emails: [{ fields: { 'str::email': uniqueEmail() } }],
    });
    const { mail } = await received(entry?.message_id as string);
    expect(mail.from?.value[0]?.address).toBe('owner@mail.cdp.local');
    expect(mail.replyTo?.value[0]?.address).toBe('owner@gmail.example');
  });
});

describe('tracking and unsubscribe links', () => {
  it('records clicks and opens, redirects only to stored destinations, refuses tampered tokens', async () => {
    const [entry] = await sendOk({
      asset: asset({
        html_body: html(
          '<p><a href="https://shop.example/item?a=1&amp;b=2">Item</a> <a href="mailto:x@example.com">mail</a></p>',
        ),
      }),
      emails: [{ fields: { 'str::email': uniqueEmail('click') } }],
    });
    const messageId = entry?.message_id as string;
    const { mail } = await received(messageId);
    const links = linksIn(mail.html || '');
    const tracked = links.find((link) => link.includes('/t/c?t='));
    expect(tracked).toBeDefined();
    expect(links).toContain('mailto:x@example.com');
    const click = await checkedFetch(tracked as string, { redirect: 'manual' });
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://shop.example/item?a=1&b=2');

    const tampered = (tracked as string).replace(
      /t=([A-Za-z0-9_-])/,
      (_m, c: string) => `t=${c === 'A' ? 'B' : 'A'}`,
    );
    const refused = await checkedFetch(tampered, { redirect: 'manual' });
    expect(refused.status).toBe(404);
    expect(refused.headers.get('location')).toBeNull();
    const other = await checkedFetch(
      `${(tracked as string).split('?')[0] ?? ''}?t=https://evil.example`,
      {
        redirect: 'manual',
      },
    );
    expect(other.status).toBe(404);

    const pixel = pixelIn(mail.html || '');
    expect(pixel).toBeDefined();
    const open = await checkedFetch(pixel as string);
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toBe('image/gif');
    // An open token is no click token.
    const swapped = await checkedFetch((pixel as string).replace('/t/o?', '/t/c?'), {
      redirect: 'manual',
    });
    expect(swapped.status).toBe(404);

    const activities = await activitiesOf(key, entry?.person_id as string);
    expect(activities).toContainEqual(
      expect.objectContaining({
        field_id: 'act::c',
        attr: expect.objectContaining({ 'str::url': 'https://shop.example/item?a=1&b=2' }),
      }),
    );
    expect(activities).toContainEqual(expect.objectContaining({ field_id: 'act::o' }));
    const status = await statusOf(messageId);
    expect((status.events as Body[]).map((event) => event.type)).toEqual(
      expect.arrayContaining(['queued', 'sent', 'clicked', 'opened']),
    );
  });

  it('leaves links and adds no pixel with no_click_tracks and no_opens_tracks', async () => {
    const [entry] = await sendOk({
      asset: asset({
        no_click_tracks: true,
        no_opens_tracks: true,
        html_body: html('<a href="https://plain.example/">x</a>'),
      }),
      emails: [{ fields: { 'str::email': uniqueEmail() } }],
    });
    const { mail } = await received(entry?.message_id as string);
    expect(linksIn(mail.html || '')).toEqual(['https://plain.example/']);
    expect(pixelIn(mail.html || '')).toBeUndefined();
  });

  it('shows a page on GET without changing anything, and unsubscribes on one-click POST', async () => {
    const [entry] = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': uniqueEmail('leave') } }],
    });
    const personId = entry?.person_id as string;
    const { mail } = await received(entry?.message_id as string);
    const link = unsubscribeLink(mail) as string;

    const page = await checkedFetch(link);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('<form method="post"');
    // The page's own button may post back (the default headers forbid every form).
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self'");
    expect((await fieldsOf(key, personId, ['bol::p']))['bol::p']).toBe(true);

    const forged = await checkedFetch(
      link.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
      {
        method: 'POST',
        body: 'List-Unsubscribe=One-Click',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
    );
    expect(forged.status).toBe(404);
    expect((await fieldsOf(key, personId, ['bol::p']))['bol::p']).toBe(true);

    const done = await checkedFetch(link, {
      method: 'POST',
      body: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(done.status).toBe(200);
    expect((await fieldsOf(key, personId, ['bol::p']))['bol::p']).toBe(false);
    expect(await activitiesOf(key, personId)).toContainEqual(
      expect.objectContaining({ field_id: 'act::u-all' }),
    );
  });
});

describe('SES delivery: events, suppression, throttling, status', () => {
  it('marks a bounce, records act::b, and suppresses the next send to the address', async () => {
    const [entry] = await sendOk({
      asset: asset({ email_name: 'bouncing' }),
      emails: [{ fields: { 'str::email': 'bounce@simulator.amazonses.com' } }],
    });
    const status = await settledStatus(entry?.message_id as string, ['bounced']);
    expect((status.events as Body[]).map((event) => event.type)).toEqual(
      expect.arrayContaining(['queued', 'sent', 'bounced']),
    );
    expect(await activitiesOf(key, entry?.person_id as string)).toContainEqual(
      expect.objectContaining({ field_id: 'act::b' }),
    );
    const [again] = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': 'bounce@simulator.amazonses.com' } }],
    });
    expect(again).toMatchObject({ email_status: 'suppressed', message_id: expect.any(String) });
    expect((await statusOf(again?.message_id as string)).status).toBe('suppressed');
    expect(await sentCount(again?.message_id as string)).toBe(0);
  });

  it('marks a complaint, unsubscribes the person, and suppresses the next send', async () => {
    const [entry] = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': 'complaint@simulator.amazonses.com' } }],
    });
    await settledStatus(entry?.message_id as string, ['complained']);
    const personId = entry?.person_id as string;
    expect((await fieldsOf(key, personId, ['bol::p']))['bol::p']).toBe(false);
    const activities = await activitiesOf(key, personId);
    expect(activities).toContainEqual(expect.objectContaining({ field_id: 'act::u-all' }));
    expect(activities).toContainEqual(expect.objectContaining({ field_id: 'act::b' }));
    const [again] = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': 'complaint@simulator.amazonses.com' } }],
    });
    expect(again?.email_status).toBe('suppressed');
  });

  it('retries a throttled SES and sends once', async () => {
    const to = uniqueEmail('throttled');
    // Only this email's sends meet the faults: other suites send through the same SES.
    await sesFaults({ throttle: 3, only_to: to });
    const [entry] = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': to } }],
    });
    await settledStatus(entry?.message_id as string, ['sent']);
    expect(await sentCount(entry?.message_id as string)).toBe(1);
    const faults = (await (await fetch(`${ses}/faults`)).json()) as { throttle: number };
    expect(faults.throttle).toBe(0);
  });
});

describe('delivery: outcomes SES leaves unknown, and events about other addresses', () => {
  it('does not send again when SES took the email but its answer was a 500; its Send event marks it sent', async () => {
    const to = uniqueEmail('lost-answer');
    await sesFaults({ answer_lost: 1, only_to: to });
    const [entry] = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': to } }],
    });
    const messageId = entry?.message_id as string;
    await settledStatus(messageId, ['sent']);
    // Long enough for a retry of the send (the worker's backoff here is half a second).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await sentCount(messageId)).toBe(1);
    const settled = await statusOf(messageId);
    expect(settled.status).toBe('sent');
    expect((settled.events as { type: string }[]).map((event) => event.type)).toEqual(
      expect.arrayContaining(['send_unknown', 'sent']),
    );
  });

  it("attributes a cc address's complaint and bounce to that address: the recipient is not unsubscribed, the email not bounced", async () => {
    const label = uniqueEmail('x').split('@')[0] as string;
    const complainer = `complaint+${label}@simulator.amazonses.com`;
    const bouncer = `bounce+${label}@simulator.amazonses.com`;
    const [entry] = await sendOk({
      asset: asset({ cc: [complainer, bouncer] }),
      emails: [{ fields: { 'str::email': uniqueEmail('main') } }],
    });
    const messageId = entry?.message_id as string;
    const personId = entry?.person_id as string;
    const settled = await until('the cc events', async () => {
      const status = await statusOf(messageId);
      const types = (status.events as { type: string }[]).map((event) => event.type);
      return types.includes('complained') && types.includes('bounced') ? status : undefined;
    });
    expect(settled.status).toBe('sent');
    expect(settled.events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'complained', recipient: complainer }),
        expect.objectContaining({ type: 'bounced', recipient: bouncer }),
      ]),
    );
    expect((await fieldsOf(key, personId, ['bol::p']))['bol::p']).toBe(true);
    const activities = await activitiesOf(key, personId);
    expect(activities.filter((activity) => activity.field_id === 'act::b')).toEqual([]);
    expect(activities.filter((activity) => activity.field_id === 'act::u-all')).toEqual([]);
    // The cc addresses themselves are suppressed.
    const again = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': complainer } }, { fields: { 'str::email': bouncer } }],
    });
    expect(again.map((e) => e.email_status)).toEqual(['suppressed', 'suppressed']);
  });
});

describe('delivery: an email left sending by a crash on its last receive', () => {
  it('is shown by the DLQ listing with its state, and a redrive sends it once SES proves it never went', async () => {
    const { db } = stackDb();
    const store = new DynamoEmailStore(db, { emails: tableName('default', 'emails') });
    // What a worker killed mid-send on the fifth receive leaves: the email claimed by an
    // attempt long gone, and its message moved to the dead-letter queue by the next receive.
    const messageId = newId(Date.now());
    // An hour ago: past the attempt's lease and any confirmation window.
    const startedAt = Date.now() - 3_600_000;
    const at = new Date(startedAt).toISOString();
    await store.create(
      [
        {
          instance_id: 'mailer',
          message_id: messageId,
          request_id: 'crashed',
          person_id: 'f'.repeat(24),
          email_name: 'crashed',
          to: uniqueEmail('crashed'),
          status: 'sending',
          attempt: 'killed',
          sending_at: startedAt,
          links: [],
          events: [{ type: 'queued', at }],
          created_at: at,
          updated_at: at,
        },
      ],
      () => undefined,
    );
    const sqs = createSqsClient();
    const { QueueUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: queueName('default', 'email', true) }),
    );
    await sqs.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: JSON.stringify({
          v: 1,
          instance_id: 'mailer',
          message_id: messageId,
          email: {
            from: { address: 'team@mail.mailer.test' },
            to: 'crashed@example.com',
            cc: [],
            subject: 's',
            html: '<p>h</p>',
            text: 'h',
            headers: {},
            attachments: [],
          },
        }),
      }),
    );
    const admin = (...args: string[]) => run(['local/admin.ts', ...args], adminEnv());
    const listed = (await admin('dlq', 'list', '--queue', 'email')).stdout;
    expect(listed).toContain(
      `email ${messageId} (instance mailer): sending since ${at}, its outcome unknown`,
    );
    const redriven = await admin('dlq', 'redrive', '--queue', 'email', '--message', messageId);
    expect(redriven.stdout).toContain(`email ${messageId}`);
    // SES's events (of later sends, or of the worker's probe) prove it never went: sent now,
    // once.
    const settled = await settledStatus(messageId, ['sent']);
    expect((settled.events as { type: string }[]).map((event) => event.type)).toEqual(
      expect.arrayContaining(['send_unknown', 'resending', 'sent']),
    );
    expect(await sentCount(messageId)).toBe(1);
  });
});

describe('tracking links replayed', () => {
  it('records an open and a click once per window however often they are fetched, and answers each', async () => {
    const [entry] = await sendOk({
      asset: asset({ html_body: html('<p><a href="https://shop.example/replayed">Item</a></p>') }),
      emails: [{ fields: { 'str::email': uniqueEmail('replay') } }],
    });
    const messageId = entry?.message_id as string;
    const { mail } = await received(messageId);
    const pixel = pixelIn(mail.html || '') as string;
    const tracked = linksIn(mail.html || '').find((link) => link.includes('/t/c?t=')) as string;
    for (let i = 0; i < 20; i += 1) {
      const open = await checkedFetch(pixel);
      expect(open.status).toBe(200);
      await open.arrayBuffer();
    }
    for (let i = 0; i < 3; i += 1) {
      const click = await checkedFetch(tracked, { redirect: 'manual' });
      expect(click.status).toBe(302);
      expect(click.headers.get('location')).toBe('https://shop.example/replayed');
    }
    const activities = await activitiesOf(key, entry?.person_id as string);
    expect(activities.filter((activity) => activity.field_id === 'act::o')).toHaveLength(1);
    expect(activities.filter((activity) => activity.field_id === 'act::c')).toHaveLength(1);
    const events = (await statusOf(messageId)).events as { type: string }[];
    expect(events.filter((event) => event.type === 'opened')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'clicked')).toHaveLength(1);
  });

  it('refuses a link whose token has expired, saying so', async () => {
    const [entry] = await sendOk({
      asset: asset(),
      emails: [{ fields: { 'str::email': uniqueEmail('expired') } }],
    });
    const messageId = entry?.message_id as string;
    await received(messageId);
    // A token made more than LINK_TOKEN_DAYS ago, with the deployment's own key.
    const { db } = stackDb();
    const keyring = await signingKeyrings(
      new DynamoConfigStore(db, tableName('default', 'config')),
      new LocalKeyWrapper(),
    )();
    const old = new LinkSigner(keyring, () => Date.now() - (LINK_TOKEN_DAYS + 1) * 86_400_000);
    const token = old.sign('open', { instanceId: 'mailer', messageId, index: 0 });
    const response = await checkedFetch(
      `http://127.0.0.1:${TEST_STACK.port}/t/o?t=${encodeURIComponent(token)}`,
    );
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: string }).error).toBe('This link has expired');
  });
});
