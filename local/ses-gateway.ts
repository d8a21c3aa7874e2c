import { randomBytes, randomUUID } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import {
  createServer as createNetServer,
  type AddressInfo,
  type Server as NetServer,
} from 'node:net';
import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import sesModule from 'aws-ses-v2-local';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { z } from 'zod';
import { keepIdleConnections } from './http-adapter.js';

/**
 * The local SES: aws-ses-v2-local (its page of sent mail, `/store`, the SDK endpoints) behind
 * a gateway that adds what the stand-in lacks and the email path relies on:
 *
 * - the raw MIME of each `SendEmail` kept byte for byte (`GET /raw/<messageId>`), with its
 *   configuration set and tags (`GET /messages`);
 * - SES event publishing: a configuration set mapped to an SNS topic gets the events SES's
 *   event destination would publish, in SES's JSON, and the mailbox simulator's
 *   `bounce@` and `complaint@simulator.amazonses.com` bounce and complain as on AWS;
 * - throttling, an outage, and 500s on demand (`POST /faults`), for tests of the worker's
 *   retries: `internal_error` refuses sends with a 500 without taking them, `answer_lost`
 *   takes them (kept, events published) and answers 500 all the same, as SES does when its
 *   answer is lost after it acted; `only_to` limits them to sends to matching recipients.
 *
 * Everything else is passed to the stand-in unchanged.
 */

export interface SentMessage {
  messageId: string;
  /** When SES accepted the send (ISO 8601). */
  at: string;
  /** The MIME message as sent; `undefined` for Simple and Template content. */
  raw: Buffer | undefined;
  configurationSet: string | undefined;
  tags: Record<string, string>;
  from: string;
  destinations: string[];
}

export interface SesGateway {
  url: string;
  close(): Promise<void>;
}

export interface SesGatewayOptions {
  host: string;
  port: number;
  sns: SNSClient;
  /** Configuration set name → ARN of the SNS topic its event destination publishes to. */
  topics: Map<string, string>;
  /** How long after a send its events are published (default 100 ms). */
  eventDelayMs?: number;
}

const SEND_EMAIL_PATH = '/v2/email/outbound-emails';
const ACCOUNT_ID = '000000000000';
const SIMULATOR_DOMAIN = 'simulator.amazonses.com';
const REPORTING_MTA = 'local.smtp-out.amazonses.com';

/** The parts of an SES v2 `SendEmail` request the gateway reads; the stand-in validates the rest. */
const SendEmailRequest = z.object({
  ConfigurationSetName: z.string().optional(),
  FromEmailAddress: z.string().optional(),
  Destination: z
    .object({
      ToAddresses: z.array(z.string()).optional(),
      CcAddresses: z.array(z.string()).optional(),
      BccAddresses: z.array(z.string()).optional(),
    })
    .optional(),
  EmailTags: z.array(z.object({ Name: z.string(), Value: z.string() })).optional(),
  Content: z.object({
    Raw: z.object({ Data: z.string() }).optional(),
    Simple: z.object({ Subject: z.object({ Data: z.string() }).optional() }).optional(),
  }),
});
type SendEmailRequest = z.infer<typeof SendEmailRequest>;

const SendEmailResponse = z.object({ MessageId: z.string() });

const FaultsRequest = z.strictObject({
  throttle: z.number().int().nonnegative().optional(),
  down: z.boolean().optional(),
  internal_error: z.number().int().nonnegative().optional(),
  answer_lost: z.number().int().nonnegative().optional(),
  only_to: z.string().min(1).nullable().optional(),
});
/** A change of the faults the gateway meets sends with (`POST /faults`). */
export type FaultsChange = z.input<typeof FaultsRequest>;

interface Faults {
  /** Sends still to refuse as throttled. */
  throttle: number;
  /** Every send refused as by an unavailable service. */
  down: boolean;
  /** Sends still to refuse with a 500, not taken. */
  internal_error: number;
  /** Sends still to take and then answer with a 500. */
  answer_lost: number;
  /**
   * When set, only sends with a recipient containing this text meet the faults (and spend
   * them): a test's fault is not taken by another suite's email sent meanwhile.
   */
  only_to: string | null;
}

interface Header {
  name: string;
  value: string;
}

/** What the `mail` object of an SES event says about the message. */
interface MailFacts {
  headers: Header[];
  commonHeaders: {
    from: string[];
    to: string[];
    subject?: string;
    date?: string;
  };
  fromDomain: string;
}

interface Answer {
  status: number;
  statusMessage: string | undefined;
  rawHeaders: string[];
  body: Buffer;
}

type Outcome = 'delivery' | 'bounce' | 'complaint';

/** An SES event record: `eventType`, `mail`, and the object its type names (`bounce`, …). */
interface SesEvent {
  eventType: 'Send' | 'Delivery' | 'Bounce' | 'Complaint';
  mail: Record<string, unknown>;
  [detail: string]: unknown;
}

/** The recipients a send lists in its `Destination` (none for a raw message without one). */
function listedRecipients(request: SendEmailRequest | undefined): string[] {
  const destination = request?.Destination;
  return [
    ...(destination?.ToAddresses ?? []),
    ...(destination?.CcAddresses ?? []),
    ...(destination?.BccAddresses ?? []),
  ];
}

export async function startSesGateway(options: SesGatewayOptions): Promise<SesGateway> {
  const eventDelayMs = options.eventDelayMs ?? 100;
  const standInPort = await freePort('127.0.0.1');
  const standIn = await sesModule.default({ host: '127.0.0.1', port: standInPort });
  // Idle connections kept as SES's endpoint keeps them, here and before the stand-in: with
  // Node's 5 s, the worker's first sends after a quiet moment met connections closing under
  // them ("socket hang up": an outcome unknown, the email held for its confirmation window).
  keepIdleConnections(standIn);

  const messages: SentMessage[] = [];
  const faults: Faults = {
    throttle: 0,
    down: false,
    internal_error: 0,
    answer_lost: 0,
    only_to: null,
  };
  const timers = new Set<NodeJS.Timeout>();
  const publishing = new Set<Promise<void>>();

  function exchange(request: IncomingMessage, body: Buffer): Promise<Answer> {
    return new Promise((done, fail) => {
      const upstream = httpRequest(
        {
          host: '127.0.0.1',
          port: standInPort,
          method: request.method,
          path: request.url,
          headers: request.rawHeaders,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.once('error', fail);
          response.once('end', () => {
            done({
              status: response.statusCode ?? 502,
              statusMessage: response.statusMessage,
              rawHeaders: response.rawHeaders,
              body: Buffer.concat(chunks),
            });
          });
        },
      );
      upstream.once('error', fail);
      upstream.end(body);
    });
  }

  async function forward(request: IncomingMessage, response: ServerResponse, body: Buffer) {
    const answer = await exchange(request, body);
    response.writeHead(answer.status, answer.statusMessage, answer.rawHeaders);
    response.end(answer.body);
    return answer;
  }

  /** Whether the faults apply to this send (`only_to`). */
  function meetsFaults(sent: SendEmailRequest | undefined): boolean {
    const only = faults.only_to;
    if (only === null) return true;
    return listedRecipients(sent).some((address) => address.includes(only));
  }

  async function handleSend(request: IncomingMessage, response: ServerResponse, body: Buffer) {
    const parsed = SendEmailRequest.safeParse(parseJson(body));
    const sent = parsed.success ? parsed.data : undefined;
    const faulty = meetsFaults(sent);
    // An outage refuses everything; throttling counts only the sends it refuses.
    if (faulty && faults.down) {
      sendError(response, 503, 'ServiceUnavailable', 'Service is unavailable.');
      return;
    }
    if (faulty && faults.throttle > 0) {
      faults.throttle -= 1;
      sendError(response, 429, 'TooManyRequestsException', 'Maximum sending rate exceeded.');
      return;
    }
    if (faulty && faults.internal_error > 0) {
      faults.internal_error -= 1;
      sendError(response, 500, 'InternalFailure', 'The request processing has failed.');
      return;
    }
    const answer = await exchange(request, body);
    if (answer.status === 200) {
      const accepted = SendEmailResponse.safeParse(parseJson(answer.body));
      if (sent && accepted.success) {
        // Before answering, so that the message can be looked up as soon as the send returns.
        await remember(sent, accepted.data.MessageId).catch((error: unknown) => {
          console.error(
            `ses-gateway: could not read message ${accepted.data.MessageId}: ${text(error)}`,
          );
        });
      }
      if (faulty && faults.answer_lost > 0) {
        faults.answer_lost -= 1;
        sendError(response, 500, 'InternalFailure', 'The request processing has failed.');
        return;
      }
    }
    response.writeHead(answer.status, answer.statusMessage, answer.rawHeaders);
    response.end(answer.body);
  }

  async function remember(request: SendEmailRequest, messageId: string) {
    const at = new Date();
    const raw = request.Content.Raw ? Buffer.from(request.Content.Raw.Data, 'base64') : undefined;
    const parsed = raw ? await simpleParser(raw, { skipHtmlToText: true }) : undefined;
    const message: SentMessage = {
      messageId,
      at: at.toISOString(),
      raw,
      configurationSet: request.ConfigurationSetName,
      tags: Object.fromEntries((request.EmailTags ?? []).map((tag) => [tag.Name, tag.Value])),
      from: request.FromEmailAddress ?? headerValue(parsed, 'from') ?? '',
      destinations: request.Destination
        ? listedRecipients(request)
        : [...addresses(parsed?.to), ...addresses(parsed?.cc)],
    };
    messages.push(message);
    const topicArn = message.configurationSet && options.topics.get(message.configurationSet);
    if (topicArn) schedulePublication(topicArn, message, mailFacts(request, message, parsed));
  }

  function schedulePublication(topicArn: string, message: SentMessage, mail: MailFacts) {
    const timer = setTimeout(() => {
      timers.delete(timer);
      const run = publishEvents(topicArn, message, mail).finally(() => publishing.delete(run));
      publishing.add(run);
    }, eventDelayMs);
    timers.add(timer);
  }

  async function publishEvents(topicArn: string, message: SentMessage, mail: MailFacts) {
    for (const event of sesEvents(message, mail, new Date())) {
      try {
        await options.sns.send(
          new PublishCommand({ TopicArn: topicArn, Message: JSON.stringify(event) }),
        );
      } catch (error) {
        console.error(
          `ses-gateway: could not publish the ${event.eventType} event of ${message.messageId} to ${topicArn}: ${text(error)}`,
        );
      }
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const path = new URL(request.url ?? '/', 'http://gateway').pathname;
    const body = await readBody(request);
    if (request.method === 'GET' && path === '/messages') {
      sendJson(response, 200, { messages: messages.map(({ raw: _raw, ...summary }) => summary) });
    } else if (request.method === 'GET' && path.startsWith('/raw/')) {
      const messageId = decodePath(path.slice('/raw/'.length));
      const raw = messages.find((message) => message.messageId === messageId)?.raw;
      if (raw) {
        response.writeHead(200, { 'content-type': 'message/rfc822', 'content-length': raw.length });
        response.end(raw);
      } else {
        sendJson(response, 404, { message: 'not found' });
      }
    } else if (path === '/faults' && request.method === 'GET') {
      sendJson(response, 200, faults);
    } else if (path === '/faults' && request.method === 'POST') {
      const change = FaultsRequest.safeParse(parseJson(body));
      if (!change.success) {
        sendJson(response, 400, {
          message:
            'expected any of {"throttle": n, "internal_error": n, "answer_lost": n, "down": true|false, "only_to": "text"|null}',
        });
        return;
      }
      if (change.data.throttle !== undefined) faults.throttle = change.data.throttle;
      if (change.data.down !== undefined) faults.down = change.data.down;
      if (change.data.internal_error !== undefined) {
        faults.internal_error = change.data.internal_error;
      }
      if (change.data.answer_lost !== undefined) faults.answer_lost = change.data.answer_lost;
      if (change.data.only_to !== undefined) faults.only_to = change.data.only_to;
      sendJson(response, 200, faults);
    } else if (path === '/faults') {
      sendJson(response, 405, { message: 'GET or POST' });
    } else if (request.method === 'POST' && path === SEND_EMAIL_PATH) {
      await handleSend(request, response, body);
    } else {
      const answer = await forward(request, response, body);
      if (request.method === 'POST' && path === '/clear-store' && answer.status === 200) {
        messages.length = 0;
      }
    }
  }

  const gateway = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      console.error(`ses-gateway: ${request.method ?? ''} ${request.url ?? ''}: ${text(error)}`);
      if (!response.headersSent) sendJson(response, 502, { message: text(error) });
      else response.destroy();
    });
  });
  keepIdleConnections(gateway);
  try {
    await listen(gateway, options.port, options.host);
  } catch (error) {
    await closeServer(standIn);
    throw error;
  }
  const { port } = gateway.address() as AddressInfo;

  return {
    url: `http://${options.host}:${port}`,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled(publishing);
      await Promise.all([closeServer(gateway), closeServer(standIn)]);
    },
  };
}

/** The events SES publishes for one message, in order: the send, then each recipient's fate. */
function sesEvents(message: SentMessage, mail: MailFacts, now: Date): SesEvent[] {
  const timestamp = now.toISOString();
  const mailObject = {
    timestamp: message.at,
    source: message.from,
    sendingAccountId: ACCOUNT_ID,
    messageId: message.messageId,
    destination: message.destinations,
    headersTruncated: false,
    headers: mail.headers,
    commonHeaders: { ...mail.commonHeaders, messageId: message.messageId },
    tags: {
      ...Object.fromEntries(Object.entries(message.tags).map(([name, value]) => [name, [value]])),
      'ses:configuration-set': [message.configurationSet ?? ''],
      'ses:from-domain': [mail.fromDomain],
    },
  };
  const delivery = (recipient: string): SesEvent => ({
    eventType: 'Delivery',
    mail: mailObject,
    delivery: {
      timestamp,
      processingTimeMillis: Math.max(0, now.getTime() - Date.parse(message.at)),
      recipients: [recipient],
      smtpResponse: '250 2.6.0 Message received',
      reportingMTA: REPORTING_MTA,
    },
  });
  const events: SesEvent[] = [{ eventType: 'Send', mail: mailObject, send: {} }];
  for (const recipient of message.destinations) {
    const emailAddress = bareAddress(recipient);
    switch (simulatedOutcome(emailAddress)) {
      case 'bounce':
        events.push({
          eventType: 'Bounce',
          mail: mailObject,
          bounce: {
            feedbackId: feedbackId(),
            bounceType: 'Permanent',
            bounceSubType: 'General',
            bouncedRecipients: [
              {
                emailAddress,
                action: 'failed',
                status: '5.1.1',
                diagnosticCode: 'smtp; 550 5.1.1 user unknown',
              },
            ],
            timestamp,
            reportingMTA: `dsn; ${REPORTING_MTA}`,
          },
        });
        break;
      case 'complaint':
        events.push(delivery(emailAddress), {
          eventType: 'Complaint',
          mail: mailObject,
          complaint: {
            feedbackId: feedbackId(),
            complaintSubType: null,
            complainedRecipients: [{ emailAddress }],
            timestamp,
            userAgent: 'Amazon SES Mailbox Simulator',
            complaintFeedbackType: 'abuse',
            arrivalDate: timestamp,
          },
        });
        break;
      case 'delivery':
        events.push(delivery(emailAddress));
        break;
    }
  }
  return events;
}

/** The mailbox simulator's addresses, with or without a `+label`, as SES treats them. */
function simulatedOutcome(address: string): Outcome {
  const at = address.lastIndexOf('@');
  if (address.slice(at + 1).toLowerCase() !== SIMULATOR_DOMAIN) return 'delivery';
  const local = address.slice(0, at).toLowerCase().split('+')[0];
  if (local === 'bounce') return 'bounce';
  if (local === 'complaint') return 'complaint';
  return 'delivery';
}

function mailFacts(
  request: SendEmailRequest,
  message: SentMessage,
  parsed: ParsedMail | undefined,
): MailFacts {
  const fromDomain = bareAddress(message.from).split('@').pop()?.toLowerCase() ?? '';
  if (parsed) {
    const date = headerValue(parsed, 'date');
    return {
      headers: parsed.headerLines.map(({ line }) => header(line)),
      commonHeaders: {
        from: formatted(parsed.from),
        to: formatted(parsed.to),
        ...(parsed.subject !== undefined ? { subject: parsed.subject } : {}),
        ...(date !== undefined ? { date } : {}),
      },
      fromDomain,
    };
  }
  const to = request.Destination?.ToAddresses ?? [];
  const subject = request.Content.Simple?.Subject?.Data;
  return {
    headers: [
      { name: 'From', value: message.from },
      { name: 'To', value: to.join(', ') },
      ...(subject !== undefined ? [{ name: 'Subject', value: subject }] : []),
    ],
    commonHeaders: {
      from: [message.from],
      to,
      ...(subject !== undefined ? { subject } : {}),
    },
    fromDomain,
  };
}

/** `Name: value` of a raw header line, unfolded. */
function header(line: string): Header {
  const colon = line.indexOf(':');
  return {
    name: line.slice(0, colon),
    value: line
      .slice(colon + 1)
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim(),
  };
}

function headerValue(parsed: ParsedMail | undefined, name: string): string | undefined {
  const line = parsed?.headerLines.find(({ key }) => key === name)?.line;
  return line === undefined ? undefined : header(line).value;
}

function addressEntries(field: AddressObject | AddressObject[] | undefined) {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects
    .flatMap((object) => object.value)
    .flatMap((entry) => (entry.group ? entry.group : [entry]));
}

function addresses(field: AddressObject | AddressObject[] | undefined): string[] {
  return addressEntries(field).flatMap((entry) => (entry.address ? [entry.address] : []));
}

function formatted(field: AddressObject | AddressObject[] | undefined): string[] {
  return addressEntries(field).flatMap((entry) =>
    entry.address ? [entry.name ? `${entry.name} <${entry.address}>` : entry.address] : [],
  );
}

/** `a@example.com` from `Name <a@example.com>` or `a@example.com`. */
function bareAddress(address: string): string {
  return (/<([^<>]+)>\s*$/.exec(address)?.[1] ?? address).trim();
}

function feedbackId(): string {
  return `${randomBytes(8).toString('hex')}-${randomUUID()}-000000`;
}

function sendJson(response: ServerResponse, status: number, body: unknown) {
  const payload = Buffer.from(JSON.stringify(body));
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': payload.length,
  });
  response.end(payload);
}

/** An error as SES v2 answers it: the SDK names the error after `x-amzn-ErrorType`. */
function sendError(response: ServerResponse, status: number, type: string, message: string) {
  const payload = Buffer.from(JSON.stringify({ message }));
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': payload.length,
    'x-amzn-ErrorType': type,
    'x-amzn-RequestId': randomUUID(),
  });
  response.end(payload);
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function decodePath(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function text(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function freePort(host: string): Promise<number> {
  const probe = createNetServer();
  await listen(probe, 0, host);
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((done) => {
    probe.close(() => {
      done();
    });
  });
  return port;
}

function listen(server: NetServer, port: number, host: string) {
  return new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      done();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((done) => {
    server.close(() => {
      done();
    });
    server.closeAllConnections();
  });
}
