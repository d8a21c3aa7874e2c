import { createHash } from 'node:crypto';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { ServiceUnavailableError } from '../domain/errors.js';
import { EmailJob, OutgoingEmail, type EmailQueue } from '../domain/email/messages.js';
import { runBounded } from '../lib/bounded.js';
import { backoffMs, canWait, currentDeadline, sleep } from '../lib/time-budget.js';
import { MaybeQueuedError } from '../domain/ingest/ingest.js';
import { MAX_MESSAGE_BYTES, retried, watchAttempts } from './ingest-queue.js';

/**
 * The email queue (SQS), one message per email, ten to a batch. An email whose JSON would
 * not fit in a message waits in the payloads bucket (`email/<inst>/messages/<id>.json`) and
 * the message carries its key; attachments are always there, content-addressed
 * (`email/<inst>/attachments/<sha256>`), so a file sent to 100 people is stored once. The
 * bucket's lifecycle rule removes them after 30 days.
 */
const SERVICE = 'The email queue';
/** Batches of one request's emails sent at once (a request of 100 recipients sends 10). */
const SEND_CONCURRENCY = 10;

/** The items dealt round-robin into at most `lanes` lists. */
function chunksOf<T>(items: readonly T[], lanes: number): T[][] {
  const out: T[][] = Array.from({ length: Math.min(lanes, items.length) }, () => []);
  items.forEach((item, i) => out[i % out.length]?.push(item));
  return out;
}

/** Content-addressed key of an attachment in the payloads bucket. */
function attachmentKey(instanceId: string, content: Buffer): string {
  return `email/${instanceId}/attachments/${createHash('sha256').update(content).digest('hex')}`;
}

export class SqsEmailQueue implements EmailQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly maxMessageBytes = MAX_MESSAGE_BYTES,
  ) {
    watchAttempts(sqs);
  }

  async putAttachments(instanceId: string, contents: Buffer[]): Promise<string[]> {
    const keys = contents.map((content) => attachmentKey(instanceId, content));
    const run = await runBounded([...contents.keys()], 8, async (index) => {
      const key = keys[index] as string;
      const content = contents[index];
      await retried(
        'Storing an attachment',
        () => this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: content })),
        SERVICE,
      );
    });
    if (run.failure) throw run.failure.error;
    return keys;
  }

  /**
   * Queues the jobs, their batches of ten sent at once (up to `SEND_CONCURRENCY`): the
   * messages of one request need no order. Every batch is tried to the end whatever happens
   * to the others, so that `queued` has heard of each message the queue confirmed before this
   * settles; then the failure that leaves most in doubt is thrown (a batch the queue may hold
   * without having said so, over one it refused).
   */
  async send(jobs: EmailJob[], queued: (messageId: string) => void): Promise<void> {
    const bodies = await Promise.all(jobs.map((job) => this.body(job)));
    const batches: SendMessageBatchRequestEntry[][] = [];
    for (let start = 0; start < jobs.length; start += 10) {
      batches.push(
        jobs.slice(start, start + 10).map((job, i) => ({
          Id: job.message_id,
          MessageBody: bodies[start + i] as string,
          MessageAttributes: { instance: { DataType: 'String', StringValue: job.instance_id } },
        })),
      );
    }
    const failures: unknown[] = [];
    const deadline = currentDeadline();
    await Promise.all(
      chunksOf(batches, SEND_CONCURRENCY).map(async (lane) => {
        for (const batch of lane) {
          await this.sendBatch(batch, deadline, queued).catch((error: unknown) => {
            failures.push(error);
          });
        }
      }),
    );
    const failure = failures.find((error) => error instanceof MaybeQueuedError) ?? failures[0];
    if (failure !== undefined) throw failure as Error;
  }

  /** One batch, its entries the queue failed sent again until the deadline. */
  private async sendBatch(
    entries: SendMessageBatchRequestEntry[],
    deadline: number,
    queued: (messageId: string) => void,
  ): Promise<void> {
    let pending = entries;
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      const batch = pending;
      const result = await retried(
        'Queueing emails',
        () =>
          this.sqs.send(new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: batch })),
        SERVICE,
      );
      for (const done of result.Successful ?? []) if (done.Id) queued(done.Id);
      const failed = new Set((result.Failed ?? []).map((failure) => failure.Id));
      if ((result.Failed ?? []).some((failure) => failure.SenderFault)) {
        throw new Error(`SQS refused an email: ${JSON.stringify(result.Failed)}`);
      }
      pending = batch.filter((entry) => failed.has(entry.Id));
      if (pending.length === 0) break;
      const wait = backoffMs(attempt, 50, 1_000);
      if (!canWait(wait, deadline)) {
        throw new ServiceUnavailableError(`${SERVICE} kept refusing part of a batch`);
      }
      await sleep(wait);
    }
  }

  /** The message of a job: the email inline, or in the bucket when it is too large. */
  private async body(job: EmailJob): Promise<string> {
    const inline = JSON.stringify(job);
    if (Buffer.byteLength(inline) <= this.maxMessageBytes || !job.email) return inline;
    const key = `email/${job.instance_id}/messages/${job.message_id}.json`;
    const email = JSON.stringify(job.email);
    await retried(
      'Storing an email',
      () =>
        this.s3.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: email,
            ContentType: 'application/json',
          }),
        ),
      SERVICE,
    );
    const { email: _email, ...rest } = job;
    return JSON.stringify({ ...rest, payload: { key } });
  }

  /** The job a message carries, without fetching its email. */
  envelope(raw: string): EmailJob {
    return EmailJob.parse(JSON.parse(raw));
  }

  /** The job a message carries, its email fetched from the bucket if needed. */
  async open(raw: string): Promise<EmailJob & { email: OutgoingEmail }> {
    const job = this.envelope(raw);
    if (job.email) return { ...job, email: job.email };
    if (!job.payload) throw new Error(`Email job ${job.message_id} carries no email`);
    const text = await this.object(job.payload.key);
    return { ...job, email: OutgoingEmail.parse(JSON.parse(text.toString('utf8'))) };
  }

  /** An attachment's content (the mailer keeps each file's encoded part a few minutes). */
  attachment(key: string): Promise<Buffer> {
    return this.object(key);
  }

  private async object(key: string): Promise<Buffer> {
    const object = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    return Buffer.from((await object.Body?.transformToByteArray()) ?? new Uint8Array());
  }
}
