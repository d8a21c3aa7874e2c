import { describe, expect, it, jest } from '@jest/globals';
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { simpleParser } from 'mailparser';
import {
  classifySesError,
  SesMailer,
  SES_CALL_MAX_MS,
} from '../../../shared/adapters/ses-mailer.js';
import { MailerError, RECORD_MARGIN_MS } from '../../../shared/domain/email/deliver.js';
import { withDeadline } from '../../../shared/lib/time-budget.js';

/** The SES adapter against a fake SES v2 client that answers each call as scripted. */
function sesAnswering(...answers: (Error | string)[]) {
  const calls: unknown[] = [];
  const client = {
    send: (command: unknown) => {
      calls.push(command);
      const answer = answers[calls.length - 1] ?? 'ses-id';
      return answer instanceof Error
        ? Promise.reject(answer)
        : Promise.resolve({ MessageId: answer });
    },
  } as unknown as SESv2Client;
  return { client, calls };
}

function awsError(name: string, status: number, message = name): Error {
  return Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status } });
}

const prepared = { raw: Buffer.from('raw'), from: 'a@x.example', to: 'ann@example.com', cc: [] };
const plenty = <T>(work: () => Promise<T>) => withDeadline(Date.now() + 60_000, work);

describe('SesMailer', () => {
  it('makes one SendEmail call when SES answers 500: the outcome is unknown, not retried', async () => {
    const { client, calls } = sesAnswering(awsError('InternalFailure', 500), 'second-copy');
    const mailer = new SesMailer(client, () => Promise.resolve(Buffer.alloc(0)));
    const error = await plenty(() => mailer.send(prepared, {})).catch((cause: unknown) => cause);
    expect(error).toBeInstanceOf(MailerError);
    expect((error as MailerError).outcome).toBe('unknown');
    expect(calls).toHaveLength(1);
  });

  it('retries throttling, which SES refuses before acting on it', async () => {
    const { client, calls } = sesAnswering(awsError('TooManyRequestsException', 429), 'ses-id');
    const mailer = new SesMailer(client, () => Promise.resolve(Buffer.alloc(0)));
    expect(await plenty(() => mailer.send(prepared, {}))).toBe('ses-id');
    expect(calls).toHaveLength(2);
  });

  it('starts no call that could not end before the deadline', async () => {
    const { client, calls } = sesAnswering(awsError('TooManyRequestsException', 429), 'ses-id');
    const mailer = new SesMailer(client, () => Promise.resolve(Buffer.alloc(0)));
    // The first backoff at its longest (200 ms): time for one call, not for a second one.
    jest.spyOn(Math, 'random').mockReturnValue(0.999);
    // 195 ms: the first call fits unless the machine stalls that long; after the 199.8 ms backoff
    // no second one can.
    const error = await withDeadline(Date.now() + SES_CALL_MAX_MS + RECORD_MARGIN_MS + 195, () =>
      mailer.send(prepared, {}),
    ).catch((cause: unknown) => cause);
    jest.restoreAllMocks();
    expect((error as MailerError).outcome).toBe('refused');
    expect(calls).toHaveLength(1);
    // And none at all when the first would not fit.
    const none = await withDeadline(Date.now() + SES_CALL_MAX_MS, () =>
      mailer.send(prepared, {}),
    ).catch((cause: unknown) => cause);
    expect((none as MailerError).outcome).toBe('refused');
    expect(calls).toHaveLength(1);
  });
});

describe('classifySesError', () => {
  it.each([
    [awsError('InternalFailure', 500), 'unknown'],
    [awsError('ServiceUnavailable', 503), 'unknown'],
    [awsError('BadGateway', 502), 'unknown'],
    [awsError('GatewayTimeout', 504), 'unknown'],
    [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'unknown'],
    [
      Object.assign(new Error('a request has exceeded the configured 15000 ms requestTimeout'), {
        name: 'TimeoutError',
      }),
      'unknown',
    ],
    [awsError('TooManyRequestsException', 429), 'refused'],
    [awsError('SendingPausedException', 400), 'refused'],
    [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'refused'],
    [
      Object.assign(
        new Error(
          'the request socket did not establish a connection with the server within 3000 ms',
        ),
        { name: 'TimeoutError' },
      ),
      'refused',
    ],
    [awsError('MessageRejected', 400), 'rejected'],
  ])('%s is %s', (error, outcome) => {
    expect(classifySesError(error).outcome).toBe(outcome);
  });
});

describe('SesMailer.prepare', () => {
  const pdf = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 251));
  const email = (to: string, filename = 'Invoice ü.pdf') => ({
    from: { address: 'shop@x.example', name: 'Shop' },
    to,
    cc: [],
    subject: `For ${to}`,
    html: `<p>Hello ${to}, your <a href="https://x.example/i">invoice</a>.</p>`,
    headers: {},
    attachments: [{ key: 'email/i/attachments/abc', filename, content_type: 'application/pdf' }],
  });

  it('encodes a file once for every email it goes with, each message carrying it whole', async () => {
    const load = jest.fn((key: string) =>
      Promise.resolve(key === 'email/i/attachments/abc' ? pdf : Buffer.alloc(0)),
    );
    const mailer = new SesMailer(sesAnswering().client, load);
    const [first, second] = await Promise.all([
      mailer.prepare(email('ann@example.com')),
      mailer.prepare(email('bob@example.com')),
    ]);
    await mailer.prepare(email('cy@example.com'));
    expect(load).toHaveBeenCalledTimes(1);
    for (const [raw, to] of [
      [first.raw, 'ann@example.com'],
      [second.raw, 'bob@example.com'],
    ] as const) {
      const parsed = await simpleParser(raw);
      expect(parsed.subject).toBe(`For ${to}`);
      expect(parsed.text).toContain(`Hello ${to}, your invoice [https://x.example/i]`);
      expect(parsed.attachments).toHaveLength(1);
      const [file] = parsed.attachments;
      expect(file?.filename).toBe('Invoice ü.pdf');
      expect(file?.contentType).toBe('application/pdf');
      expect(file?.contentDisposition).toBe('attachment');
      expect(file?.content.equals(pdf)).toBe(true);
    }
  });

  it('keeps a part per file name and type: the same content under another name is its own part', async () => {
    const load = jest.fn(() => Promise.resolve(pdf));
    const mailer = new SesMailer(sesAnswering().client, load);
    await mailer.prepare(email('ann@example.com'));
    const renamed = await simpleParser(
      (await mailer.prepare(email('ann@example.com', 'copy.pdf'))).raw,
    );
    expect(load).toHaveBeenCalledTimes(2);
    expect(renamed.attachments.map((file) => file.filename)).toEqual(['copy.pdf']);
  });
});
