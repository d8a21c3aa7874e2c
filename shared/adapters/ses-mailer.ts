import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { MailerError, type Mailer } from '../domain/email/deliver.js';
import type { OutgoingEmail } from '../domain/email/messages.js';
import { logger } from '../lib/logger.js';
import { backoffMs, canWait, sleep } from '../lib/time-budget.js';

/**
 * Sending through SES v2 with raw MIME built by nodemailer's composer (HTML and text parts,
 * attachments, cc, Reply-To, the List-Unsubscribe headers). Throttling is retried here with
 * backoff while the invocation has time; after that the email goes back to its queue.
 */
export function createSesClient(): SESv2Client {
  // Our retries only: the SDK's would repeat a send whose outcome is unknown.
  return new SESv2Client({
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 3_000, requestTimeout: 15_000 },
  });
}

/** SES refused the call; nothing was sent. */
const REFUSED = new Set([
  'TooManyRequestsException',
  'LimitExceededException',
  'ThrottlingException',
  'Throttling',
  'SendingPausedException',
  'ServiceUnavailable',
  'InternalFailure',
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
  if (REFUSED.has(name) || (status !== undefined && status >= 500) || status === 429) {
    return new MailerError('refused', message);
  }
  if (UNREACHED.has(failure.code ?? '')) return new MailerError('refused', message);
  if (REJECTED.has(name) || (status !== undefined && status >= 400)) {
    return new MailerError('rejected', message);
  }
  return new MailerError('unknown', message);
}

export class SesMailer implements Mailer {
  constructor(
    private readonly ses: SESv2Client,
    private readonly attachment: (key: string) => Promise<Buffer>,
    private readonly configurationSet?: string,
  ) {}

  async send(email: OutgoingEmail, tags: Record<string, string>): Promise<string> {
    const raw = await buildMime(email, this.attachment);
    for (let attempt = 0; ; attempt += 1) {
      try {
        const result = await this.ses.send(
          new SendEmailCommand({
            FromEmailAddress: email.from.address,
            Destination: { ToAddresses: [email.to], CcAddresses: email.cc },
            Content: { Raw: { Data: raw } },
            EmailTags: Object.entries(tags).map(([Name, Value]) => ({ Name, Value })),
            ...(this.configurationSet ? { ConfigurationSetName: this.configurationSet } : {}),
          }),
        );
        if (!result.MessageId) throw new MailerError('unknown', 'SES answered without a MessageId');
        return result.MessageId;
      } catch (error) {
        const failure = error instanceof MailerError ? error : classifySesError(error);
        const wait = backoffMs(attempt, 200, 5_000);
        if (failure.outcome !== 'refused' || !canWait(wait)) throw failure;
        logger.info('SES refused a send; retrying', { attempt, error: failure.message });
        await sleep(wait);
      }
    }
  }
}

/** The raw MIME message of an email. */
export async function buildMime(
  email: OutgoingEmail,
  attachment: (key: string) => Promise<Buffer>,
): Promise<Buffer> {
  const attachments = await Promise.all(
    email.attachments.map(async (file) => ({
      filename: file.filename,
      contentType: file.content_type,
      content: await attachment(file.key),
    })),
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
    text: email.text,
    headers: email.headers,
    attachments,
  });
  return composer.compile().build();
}
