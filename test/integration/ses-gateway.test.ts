import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  SESv2Client,
  SESv2ServiceException,
  SendEmailCommand,
  TooManyRequestsException,
  type SendEmailCommandInput,
} from '@aws-sdk/client-sesv2';
import { ListSubscriptionsByTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { buildApp } from 'fauxqs';
import { Agent, get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { ensureQueues, ensureSesEventTopic } from '../../local/resources.js';
import { startSesGateway, type SesGateway } from '../../local/ses-gateway.js';

/**
 * The local SES gateway against its own fauxqs and aws-ses-v2-local (not the shared test
 * stack), driven with the real SES v2 client: raw messages kept byte for byte, SES events
 * delivered to the email-events queue through SNS as on AWS, throttling and outages on demand.
 */
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const awsRegion = 'us-east-1';
const CONFIGURATION_SET = 'cdp-test';
const TAGS = [{ Name: 'cdp_message', Value: 'inst.abc' }];
const BOUNCE = 'bounce@simulator.amazonses.com';
const COMPLAINT = 'complaint@simulator.amazonses.com';

const Envelope = z.object({
  Type: z.literal('Notification'),
  MessageId: z.string(),
  TopicArn: z.string(),
  Message: z.string(),
  Timestamp: z.string(),
});
const EventKey = z.object({
  eventType: z.string(),
  mail: z.object({ messageId: z.string() }),
  delivery: z.object({ recipients: z.array(z.string()) }).optional(),
});

interface Notification {
  envelope: z.infer<typeof Envelope>;
  key: z.infer<typeof EventKey>;
  event: unknown;
}

const Store = z.object({ emails: z.array(z.object({ messageId: z.string() })) });
const Messages = z.object({
  messages: z.array(z.object({ messageId: z.string() }).catchall(z.unknown())),
});

let fauxqs: ReturnType<typeof buildApp>;
let gateway: SesGateway;
let sqs: SQSClient;
let sns: SNSClient;
let ses: SESv2Client;
let queueUrl: string;
let topicArn: string;
const topics = new Map<string, string>();
const received: Notification[] = [];

beforeAll(async () => {
  fauxqs = buildApp({ logger: false });
  await fauxqs.listen({ port: 0, host: '127.0.0.1' });
  const endpoint = `http://127.0.0.1:${(fauxqs.server.address() as AddressInfo).port}`;
  sqs = new SQSClient({ endpoint, region: awsRegion, credentials, useQueueUrlAsEndpoint: false });
  sns = new SNSClient({ endpoint, region: awsRegion, credentials });
  queueUrl = (await ensureQueues(sqs, 'default'))['email-events'];
  topicArn = await ensureSesEventTopic(sns, sqs, 'default');
  topics.set(CONFIGURATION_SET, topicArn);
  gateway = await startSesGateway({ host: '127.0.0.1', port: 0, sns, topics, eventDelayMs: 20 });
  // One attempt per send: the SDK would otherwise retry throttling and 5xx answers itself.
  ses = new SESv2Client({ endpoint: gateway.url, region: awsRegion, credentials, maxAttempts: 1 });
});

afterAll(async () => {
  ses.destroy();
  await gateway.close();
  sns.destroy();
  sqs.destroy();
  await fauxqs.close();
});

function rawMessage(headers: Record<string, string>): string {
  return [
    'From: Sender <sender@example.com>',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'Subject: Grüße',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    'Hallo — 8-bit bytes stay as they are: € ü',
    '',
  ].join('\r\n');
}

async function sendRaw(
  raw: string,
  extra: Partial<SendEmailCommandInput> = {},
): Promise<{ messageId: string; raw: Buffer }> {
  const bytes = Buffer.from(raw, 'utf8');
  const { MessageId } = await ses.send(
    new SendEmailCommand({
      Content: { Raw: { Data: bytes } },
      ConfigurationSetName: CONFIGURATION_SET,
      EmailTags: TAGS,
      ...extra,
    }),
  );
  if (!MessageId) throw new Error('no MessageId');
  return { messageId: MessageId, raw: bytes };
}

async function receive(waitTimeSeconds: number): Promise<void> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: waitTimeSeconds,
    }),
  );
  for (const message of Messages) {
    const envelope = Envelope.parse(JSON.parse(message.Body ?? ''));
    const event: unknown = JSON.parse(envelope.Message);
    received.push({ envelope, key: EventKey.parse(event), event });
  }
  if (Messages.length > 0) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
}

/** The notifications of one message, once `count` have arrived and no more follow. */
async function notificationsOf(messageId: string, count: number): Promise<Notification[]> {
  const of = () => received.filter((notification) => notification.key.mail.messageId === messageId);
  const deadline = Date.now() + 15_000;
  while (of().length < count && Date.now() < deadline) await receive(1);
  await receive(1);
  return of();
}

function typesOf(notifications: Notification[]): string[] {
  return notifications.map((notification) => notification.key.eventType).sort();
}

function eventOf(notifications: Notification[], type: string): unknown {
  return notifications.find((notification) => notification.key.eventType === type)?.event;
}

async function getJson(path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${gateway.url}${path}`);
  return { status: response.status, body: await response.json() };
}

/** A body for the gateway's `/faults` (a member set to `null` clears that fault). */
type FaultsBody = Record<string, number | boolean | string | null>;

function postFaults(faults: FaultsBody): Promise<Response> {
  return fetch(`${gateway.url}/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(faults),
  });
}

async function setFaults(faults: FaultsBody): Promise<unknown> {
  const response = await postFaults(faults);
  expect(response.status).toBe(200);
  return response.json();
}

function mailOf(messageId: string, destination: string[], to: string[]) {
  return {
    messageId,
    source: 'Sender <sender@example.com>',
    sendingAccountId: '000000000000',
    destination,
    headersTruncated: false,
    commonHeaders: {
      from: ['Sender <sender@example.com>'],
      to,
      subject: 'Grüße',
      messageId,
    },
    tags: {
      cdp_message: ['inst.abc'],
      'ses:configuration-set': [CONFIGURATION_SET],
      'ses:from-domain': ['example.com'],
    },
  };
}

const NO_FAULTS = { throttle: 0, down: false, internal_error: 0, answer_lost: 0, only_to: null };

describe('the local SES gateway', () => {
  it('subscribes the email-events queue to the SES event topic once', async () => {
    expect(await ensureSesEventTopic(sns, sqs, 'default')).toBe(topicArn);
    const { Subscriptions = [] } = await sns.send(
      new ListSubscriptionsByTopicCommand({ TopicArn: topicArn }),
    );
    expect(Subscriptions).toHaveLength(1);
    expect(Subscriptions[0]).toMatchObject({ Protocol: 'sqs' });
    expect(topicArn).toMatch(/:cdp-default-ses-events$/);
  });

  it('keeps the raw message as sent, still lists it in /store, and bounces the bounce simulator', async () => {
    const { messageId, raw } = await sendRaw(rawMessage({ To: BOUNCE }));

    const rawResponse = await fetch(`${gateway.url}/raw/${messageId}`);
    expect(rawResponse.status).toBe(200);
    expect(rawResponse.headers.get('content-type')).toBe('message/rfc822');
    expect(Buffer.from(await rawResponse.arrayBuffer()).equals(raw)).toBe(true);

    const store = Store.parse((await getJson('/store')).body);
    expect(store.emails.map((email) => email.messageId)).toContain(messageId);
    const messages = Messages.parse((await getJson('/messages')).body).messages;
    expect(messages.find((message) => message.messageId === messageId)).toEqual({
      messageId,
      at: expect.any(String),
      configurationSet: CONFIGURATION_SET,
      tags: { cdp_message: 'inst.abc' },
      from: 'Sender <sender@example.com>',
      destinations: [BOUNCE],
    });

    const notifications = await notificationsOf(messageId, 2);
    expect(typesOf(notifications)).toEqual(['Bounce', 'Send']);
    for (const { envelope } of notifications) expect(envelope.TopicArn).toBe(topicArn);
    expect(eventOf(notifications, 'Bounce')).toMatchObject({
      eventType: 'Bounce',
      mail: mailOf(messageId, [BOUNCE], [BOUNCE]),
      bounce: {
        bounceType: 'Permanent',
        bounceSubType: 'General',
        bouncedRecipients: [
          {
            emailAddress: BOUNCE,
            action: 'failed',
            status: '5.1.1',
            diagnosticCode: 'smtp; 550 5.1.1 user unknown',
          },
        ],
        feedbackId: expect.any(String),
        timestamp: expect.any(String),
        reportingMTA: expect.any(String),
      },
    });
    expect(eventOf(notifications, 'Send')).toMatchObject({
      eventType: 'Send',
      mail: mailOf(messageId, [BOUNCE], [BOUNCE]),
      send: {},
    });
  });

  it('delivers to the complaint simulator, then reports its complaint', async () => {
    const { messageId } = await sendRaw(rawMessage({ To: COMPLAINT }));

    const notifications = await notificationsOf(messageId, 3);
    expect(typesOf(notifications)).toEqual(['Complaint', 'Delivery', 'Send']);
    expect(eventOf(notifications, 'Complaint')).toMatchObject({
      mail: mailOf(messageId, [COMPLAINT], [COMPLAINT]),
      complaint: {
        complainedRecipients: [{ emailAddress: COMPLAINT }],
        complaintFeedbackType: 'abuse',
        feedbackId: expect.any(String),
        timestamp: expect.any(String),
      },
    });
    expect(eventOf(notifications, 'Delivery')).toMatchObject({
      delivery: { recipients: [COMPLAINT] },
    });
  });

  it('delivers to other addresses, to the Destination given rather than the headers', async () => {
    const { messageId } = await sendRaw(rawMessage({ To: 'person@example.com' }), {
      Destination: { ToAddresses: ['person@example.com'], BccAddresses: ['audit@example.com'] },
    });

    const notifications = await notificationsOf(messageId, 3);
    expect(typesOf(notifications)).toEqual(['Delivery', 'Delivery', 'Send']);
    for (const recipient of ['person@example.com', 'audit@example.com']) {
      const delivery = notifications.find(({ key }) => key.delivery?.recipients[0] === recipient);
      expect(delivery?.event).toMatchObject({
        mail: mailOf(
          messageId,
          ['person@example.com', 'audit@example.com'],
          ['person@example.com'],
        ),
        delivery: {
          recipients: [recipient],
          smtpResponse: '250 2.6.0 Message received',
          processingTimeMillis: expect.any(Number),
          reportingMTA: expect.any(String),
          timestamp: expect.any(String),
        },
      });
    }
  });

  it('refuses the next n sends as SES does when the sending rate is exceeded', async () => {
    const before = Messages.parse((await getJson('/messages')).body).messages.length;
    expect(await setFaults({ throttle: 2 })).toEqual({ ...NO_FAULTS, throttle: 2 });

    const outcomes = [];
    for (let send = 0; send < 3; send += 1) {
      outcomes.push(
        await sendRaw(rawMessage({ To: 'person@example.com' })).then(
          () => undefined,
          (error: unknown) => error,
        ),
      );
    }

    for (const error of outcomes.slice(0, 2)) {
      expect(error).toBeInstanceOf(TooManyRequestsException);
      expect(error).toMatchObject({
        name: 'TooManyRequestsException',
        message: 'Maximum sending rate exceeded.',
        $metadata: { httpStatusCode: 429 },
      });
    }
    expect(outcomes[2]).toBeUndefined();
    expect((await getJson('/faults')).body).toEqual(NO_FAULTS);
    expect(Messages.parse((await getJson('/messages')).body).messages).toHaveLength(before + 1);
  });

  it('refuses every send with a 503 while down', async () => {
    expect(await setFaults({ down: true })).toEqual({ ...NO_FAULTS, down: true });
    const error = await sendRaw(rawMessage({ To: 'person@example.com' })).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(SESv2ServiceException);
    expect(error).toMatchObject({ $fault: 'server', $metadata: { httpStatusCode: 503 } });

    expect(await setFaults({ down: false })).toEqual(NO_FAULTS);
    await expect(sendRaw(rawMessage({ To: 'person@example.com' }))).resolves.toBeDefined();
  });

  it('answers 500 without taking the send (internal_error), or after taking it (answer_lost)', async () => {
    const before = Messages.parse((await getJson('/messages')).body).messages.length;
    expect(await setFaults({ internal_error: 1, answer_lost: 1 })).toEqual({
      ...NO_FAULTS,
      internal_error: 1,
      answer_lost: 1,
    });
    for (let send = 0; send < 2; send += 1) {
      const error = await sendRaw(rawMessage({ To: 'person@example.com' })).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toMatchObject({ name: 'InternalFailure', $metadata: { httpStatusCode: 500 } });
    }
    // The first was refused, the second taken (kept, and its events published).
    expect(Messages.parse((await getJson('/messages')).body).messages).toHaveLength(before + 1);
    expect((await getJson('/faults')).body).toEqual(NO_FAULTS);
  });

  it('limits the faults to sends to matching recipients (only_to), which alone spend them', async () => {
    const before = Messages.parse((await getJson('/messages')).body).messages.length;
    expect(await setFaults({ answer_lost: 1, only_to: 'mine@' })).toEqual({
      ...NO_FAULTS,
      answer_lost: 1,
      only_to: 'mine@',
    });
    const send = (to: string) =>
      sendRaw(rawMessage({ To: to }), { Destination: { ToAddresses: [to] } }).then(
        () => undefined,
        (failure: unknown) => failure,
      );
    // Another recipient's send passes untouched and leaves the fault in place.
    expect(await send('theirs@example.com')).toBeUndefined();
    expect((await getJson('/faults')).body).toMatchObject({ answer_lost: 1 });
    expect(await send('mine@example.com')).toMatchObject({
      name: 'InternalFailure',
      $metadata: { httpStatusCode: 500 },
    });
    expect(Messages.parse((await getJson('/messages')).body).messages).toHaveLength(before + 2);
    expect(await setFaults({ only_to: null })).toEqual(NO_FAULTS);
    expect((await postFaults({ only_to: '' })).status).toBe(400);
  });

  it('logs a failed publication and keeps serving', async () => {
    topics.set('cdp-gone', 'arn:aws:sns:us-east-1:000000000000:no-such-topic');
    const errors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const { messageId } = await sendRaw(rawMessage({ To: 'person@example.com' }), {
        ConfigurationSetName: 'cdp-gone',
      });
      const deadline = Date.now() + 5_000;
      while (errors.mock.calls.length < 2 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // One line per event that could not be published: Send and Delivery.
      expect(errors.mock.calls).toHaveLength(2);
      for (const call of errors.mock.calls) expect(String(call[0])).toContain(messageId);
      await expect(sendRaw(rawMessage({ To: 'person@example.com' }))).resolves.toBeDefined();
    } finally {
      errors.mockRestore();
      topics.delete('cdp-gone');
    }
  });

  it("keeps an idle connection open past Node's 5 s, so a pooled client reuses it", async () => {
    // A server closing an idle connection at the moment a client reuses it fails that call
    // ("socket hang up"), which the email worker must take as an unknown outcome: SES's
    // endpoint keeps idle connections longer, and so does the gateway.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const request = httpGet(`${gateway.url}${path}`, { agent }, (response) => {
          response.resume();
          response.once('end', () => {
            resolve({ status: response.statusCode ?? 0, reused: request.reusedSocket });
          });
        });
        request.once('error', reject);
      });
    try {
      expect(await get('/store')).toEqual({ status: 200, reused: false });
      // Node's default closes an idle connection after 5 s (and a second of slack).
      await new Promise((resolve) => setTimeout(resolve, 7_000));
      expect(await get('/store')).toEqual({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  }, 20_000);

  it('answers 404 for an unknown raw message, and forgets messages when the store is cleared', async () => {
    const missing = await getJson('/raw/ses-000');
    expect(missing).toEqual({ status: 404, body: { message: 'not found' } });

    const cleared = await fetch(`${gateway.url}/clear-store`, { method: 'POST' });
    expect(cleared.status).toBe(200);
    expect((await getJson('/messages')).body).toEqual({ messages: [] });
    expect(Store.parse((await getJson('/store')).body).emails).toEqual([]);
  });
});
