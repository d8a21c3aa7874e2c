import {
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { ServiceUnavailableError } from '../domain/errors.js';
import {
  IngestMessage,
  MaybeQueuedError,
  PayloadLostError,
  type IngestQueue,
} from '../domain/ingest/ingest.js';
import { logger } from '../lib/logger.js';
import { backoffMs, canWait, currentDeadline, sleep } from '../lib/time-budget.js';
import { classifyStoreError } from './dynamo-resilience.js';

/**
 * The ingest queue (SQS) with a claim check: a message whose body would not fit in one SQS
 * message (`maxMessageBytes`, kept under SQS's 256 KB so that it holds on every account and
 * stand-in) leaves its body in the payloads bucket, `ingest/<instance>/<request_id>.json`,
 * and carries its key; the bucket's lifecycle rule removes payloads after 30 days. A send is
 * retried within the request's time budget (a message sent twice is applied once: the worker
 * keys its effect on the request ID); if it cannot be sent the answer is 503 and the payload,
 * if any, is deleted.
 */
export const MAX_MESSAGE_BYTES = 240 * 1024;

const Envelope = IngestMessage.omit({ body: true }).extend({
  body: IngestMessage.shape.body.optional(),
  payload: z.object({ key: z.string().min(1) }).optional(),
});

/** Set on the error of a call one of whose attempts may have reached the service. */
const UNCERTAIN = Symbol('an attempt may have taken effect');

/** An attempt that failed after its request may have reached the service (not a refusal). */
function uncertainFailure(error: unknown): boolean {
  return classifyStoreError(error) === 'unavailable' && !isUnreachable(error);
}

/**
 * Makes the client tell, on the error it finally throws, whether any of its own attempts (it
 * retries by itself) may have reached the service: the last attempt's error alone can say
 * "connection refused" after an earlier one was cut with its request sent. Idempotent.
 */
export function watchAttempts(client: SQSClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        // Below the client's retries: once per attempt.
        if (uncertainFailure(error)) (context as Record<symbol, unknown>)[UNCERTAIN] = true;
        throw error;
      }
    },
    { step: 'deserialize', name: 'cdpAttemptOutcome', override: true },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const uncertain = (context as Record<symbol, unknown>)[UNCERTAIN] === true;
        if (uncertain && typeof error === 'object' && error !== null) {
          (error as Record<symbol, unknown>)[UNCERTAIN] = true;
        }
        throw error;
      }
    },
    { step: 'initialize', name: 'cdpCallOutcome', override: true },
  );
}

/**
 * Retries a call to SQS or S3 that failed without effect or with an unknown one. When it
 * gives up after an attempt whose outcome was unknown (the request reached the service and
 * the answer was lost), the call may have taken effect: `MaybeQueuedError`. The client's own
 * attempts count too when it is watched (`watchAttempts`).
 */
export async function retried<T>(
  what: string,
  call: () => Promise<T>,
  service = 'The ingest queue',
): Promise<T> {
  const deadline = currentDeadline();
  let uncertain = false;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      const failure = classifyStoreError(error);
      const wait = backoffMs(attempt, 50, 1_000);
      if (uncertainFailure(error) || isWatchedUncertain(error)) uncertain = true;
      if (failure === undefined || !canWait(wait, deadline)) {
        logger.warn(`${what} failed`, { error: error as Error });
        if (uncertain) {
          throw new MaybeQueuedError(`${service} did not confirm the request`);
        }
        throw new ServiceUnavailableError(
          `${service} is unavailable: nothing was queued; try again shortly`,
        );
      }
      await sleep(wait);
    }
  }
}

function isWatchedUncertain(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as Record<symbol, unknown>)[UNCERTAIN] === true
  );
}

/** A connection that was never made: nothing can have reached the service. */
function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}

export class SqsIngestQueue implements IngestQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly maxMessageBytes = MAX_MESSAGE_BYTES,
  ) {
    watchAttempts(sqs);
  }

  async send(message: IngestMessage): Promise<void> {
    let body = JSON.stringify(message);
    let payloadKey: string | undefined;
    if (Buffer.byteLength(body) > this.maxMessageBytes) {
      payloadKey = `ingest/${message.instance_id}/${message.request_id}.json`;
      const key = payloadKey;
      await retried('Storing a payload', () =>
        this.s3.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: JSON.stringify(message.body),
            ContentType: 'application/json',
          }),
        ),
      );
      const { body: _body, ...rest } = message;
      body = JSON.stringify({ ...rest, payload: { key } });
    }
    try {
      await retried('Queueing a request', () =>
        this.sqs.send(
          new SendMessageCommand({
            QueueUrl: this.queueUrl,
            MessageBody: body,
            MessageAttributes: {
              kind: { DataType: 'String', StringValue: message.kind },
              instance: { DataType: 'String', StringValue: message.instance_id },
            },
          }),
        ),
      );
    } catch (error) {
      // A message that may be queued still needs its payload.
      if (payloadKey && !(error instanceof MaybeQueuedError)) {
        const key = payloadKey;
        await this.s3
          .send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }))
          .catch(() => undefined);
      }
      throw error;
    }
  }

  /** Who sent a message and what for, without its body (which may be in the bucket). */
  envelope(raw: string) {
    return Envelope.parse(JSON.parse(raw));
  }

  /** The message an SQS body carries, its body fetched from the payloads bucket if needed. */
  async open(raw: string): Promise<IngestMessage> {
    const { payload, ...rest } = this.envelope(raw);
    if (!payload) return IngestMessage.parse(rest);
    const object = await this.s3
      .send(new GetObjectCommand({ Bucket: this.bucket, Key: payload.key }))
      .catch((error: unknown) => {
        throw (error as { name?: string }).name === 'NoSuchKey'
          ? new PayloadLostError(payload.key)
          : error;
      });
    const text = (await object.Body?.transformToString('utf8')) ?? '';
    return IngestMessage.parse({ ...rest, body: JSON.parse(text) as unknown });
  }
}
