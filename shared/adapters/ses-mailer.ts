import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import MimeNode from 'nodemailer/lib/mime-node/index.js';
import {
  MailerError,
  PROBE_TAG,
  RECORD_MARGIN_MS,
  type Mailer,
  type PreparedEmail,
} from '../domain/email/deliver.js';
import { textOf } from '../domain/email/html.js';
import type { OutgoingEmail } from '../domain/email/messages.js';
import { logger } from '../lib/logger.js';
import { TtlCache } from '../lib/ttl-cache.js';
import { backoffMs, canWait, sleep } from '../lib/time-budget.js';
import { withoutCallLogging } from './aws-clients.js';

/**
 * Sending through SES v2 with raw MIME built by nodemailer's composer (HTML and text parts,
 * attachments, cc, Reply-To, the List-Unsubscribe headers). Only refusals SES is known not to
 * have acted on (throttling, sending paused, no connection made) are retried here, with
 * backoff; any other failure of a call leaves its outcome unknown (deliver.ts), since SES may
 * have taken the email before the answer was lost.
 */
const CONNECT_TIMEOUT_MS = 3_000;
const ANSWER_TIMEOUT_MS = 15_000;

export function createSesClient(): SESv2Client {
  // Our retries only: the SDK's would repeat a send whose outcome is unknown.
  return withoutCallLogging(
    new SESv2Client({
      maxAttempts: 1,
      requestHandler: {
        connectionTimeout: CONNECT_TIMEOUT_MS,
        requestTimeout: ANSWER_TIMEOUT_MS,
        // Without it the SDK only warns, and a call that gets no answer waits for the socket.
        throwOnRequestTimeout: true,
      },
    }),
  );
}

/** The longest a call can take: a connection, the answer, and reading it. */
export const SES_CALL_MAX_MS = CONNECT_TIMEOUT_MS + ANSWER_TIMEOUT_MS + 2_000;

/** SES refused the call before acting on it; nothing was sent. */
const REFUSED = new Set([
  'TooManyRequestsException',
  'LimitExceededException',
  'ThrottlingException',
  'Throttling',
  'SendingPausedException',
]);
/** The email can never be sent as it is. */
const REJECTED = new Set([
  'MessageRejected',
  'MailFromDomainNotVerifiedException',
  'BadRequestException',
  'NotFoundException',
  'AccountSuspendedException',
]);
/** No connection was made: nothing reached SES. */
const UNREACHED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * What a failed `SendEmail` says about the email. A 5xx (`InternalFailure`,
 * `ServiceUnavailable`, a gateway's 502 or 504), a timeout waiting for the answer or a
 * connection cut after the request went out is **unknown**: AWS does not promise that a
 * request answered so was not acted on.
 */
export function classifySesError(error: unknown): MailerError {
  const failure = error as {
    name?: string;
    code?: string;
    message?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const name = failure.name ?? 'Error';
  const status = failure.$metadata?.httpStatusCode;
  const message = `SES: ${name}${failure.message ? `: ${failure.message}` : ''}`;
  if (REFUSED.has(name) || status === 429) return new MailerError('refused', message);
  if (UNREACHED.has(failure.code ?? '') || neverConnected(failure)) {
    return new MailerError('refused', message);
  }
  if (status !== undefined && status >= 500) return new MailerError('unknown', message);
  if (REJECTED.has(name) || (status !== undefined && status >= 400)) {
    return new MailerError('rejected', message);
  }
  return new MailerError('unknown', message);
}

/** The SDK's connection timeout: the socket never connected, so no request was written. */
function neverConnected(failure: { name?: string; message?: string }): boolean {
  return (
    failure.name === 'TimeoutError' &&
    (failure.message ?? '').includes('did not establish a connection')
  );
}

/** An attachment of an email, as the queue carries it (its content in the bucket). */
type AttachmentRef = OutgoingEmail['attachments'][number];

/**
 * How long an attachment's MIME part is kept: a request's file goes to each of its up to 100
 * recipients, and encoding it again was a third of building each of their messages. Files are
 * at most 1 MB (base64), so 32 parts hold a few dozen MB at most.
 */
const ATTACHMENT_PART_TTL_MS = 300_000;

export class SesMailer implements Mailer {
  readonly callMaxMs = SES_CALL_MAX_MS;
  /** Attachment parts by file (its key in the bucket, name and type), a few minutes each. */
  private readonly parts = new TtlCache<string>(32);

  constructor(
    private readonly ses: SESv2Client,
    private readonly attachment: (key: string) => Promise<Buffer>,
    private readonly configurationSet?: string,
  ) {}

  /** A file's part, read from the bucket and encoded once per container for a few minutes. */
  private part(file: AttachmentRef): Promise<string> {
    const id = JSON.stringify([file.key, file.filename, file.content_type]);
    return this.parts.getOrLoad(id, ATTACHMENT_PART_TTL_MS, async () =>
      attachmentPart(file, await this.attachment(file.key)),
    );
  }

  async prepare(email: OutgoingEmail): Promise<PreparedEmail> {
    return {
      raw: await buildMime(email, (file) => this.part(file)),
      from: email.from.address,
      to: email.to,
      cc: email.cc,
    };
  }

  async send(email: PreparedEmail, tags: Record<string, string>): Promise<string> {
    for (let attempt = 0; ; attempt += 1) {
      // A call is only started if it can end, and its outcome be recorded, before the
      // deadline: one cut short by the end of the invocation would leave it unknown.
      if (!canWait(this.callMaxMs + RECORD_MARGIN_MS)) {
        throw new MailerError('refused', 'SES was not called: too little time was left for a call');
      }
      try {
        const result = await this.ses.send(
          new SendEmailCommand({
            FromEmailAddress: email.from,
            Destination: { ToAddresses: [email.to], CcAddresses: email.cc },
            Content: { Raw: { Data: email.raw } },
            EmailTags: Object.entries(tags).map(([Name, Value]) => ({ Name, Value })),
            ...(this.configurationSet ? { ConfigurationSetName: this.configurationSet } : {}),
          }),
        );
        if (!result.MessageId) throw new MailerError('unknown', 'SES answered without a MessageId');
        return result.MessageId;
      } catch (error) {
        const failure = error instanceof MailerError ? error : classifySesError(error);
        const wait = backoffMs(attempt, 200, 5_000);
        if (failure.outcome !== 'refused' || !canWait(wait + this.callMaxMs + RECORD_MARGIN_MS)) {
          throw failure;
        }
        logger.info('SES refused a send; retrying', { attempt, error: failure.message });
        await sleep(wait);
      }
    }
  }
}

/** The mailbox simulator's address that accepts and delivers, counted in no quota or rate. */
export const PROBE_RECIPIENT = 'success@simulator.amazonses.com';

/**
 * A probe: a tiny email to the mailbox simulator through the configuration set, so that SES
 * publishes a `Send` event now (deliver.ts, `SendConfirmations`).
 */
export async function sendProbe(
  mailer: SesMailer,
  fromDomain: string,
  now: () => number = Date.now,
): Promise<void> {
  const email = await mailer.prepare({
    from: { address: `delivery-probe@${fromDomain}` },
    to: PROBE_RECIPIENT,
    cc: [],
    subject: 'Delivery probe',
    html: "<p>A probe of this deployment's SES events. No one reads it.</p>",
    text: "A probe of this deployment's SES events. No one reads it.",
    headers: {},
    attachments: [],
  });
  await mailer.send(email, { [PROBE_TAG]: String(now()) });
}

/** An attachment's part of a multipart message (headers and base64 body), as MailComposer makes it. */
export async function attachmentPart(file: AttachmentRef, content: Buffer): Promise<string> {
  const node = new MimeNode('multipart/mixed').createChild(file.content_type, {
    filename: file.filename,
  });
  node.setHeader('Content-Transfer-Encoding', 'base64');
  node.setHeader('Content-Disposition', 'attachment');
  node.setContent(content);
  return (await node.build()).toString('latin1');
}

/** The raw MIME message of an email. */
export async function buildMime(
  email: OutgoingEmail,
  part: (file: AttachmentRef) => Promise<string>,
): Promise<Buffer> {
  const attachments = await Promise.all(
    email.attachments.map(async (file) => ({ raw: await part(file) })),
  );
  const composer = new MailComposer({
    from: email.from.name
      ? { name: email.from.name, address: email.from.address }
      : email.from.address,
    to: email.to,
    ...(email.cc.length > 0 ? { cc: email.cc } : {}),
    ...(email.reply_to ? { replyTo: email.reply_to } : {}),
    subject: email.subject,
    html: email.html,
    text: email.text ?? textOf(email.html),
    headers: email.headers,
    attachments,
  });
  return composer.compile().build();
}
