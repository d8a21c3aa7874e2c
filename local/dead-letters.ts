import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { deadLetterState } from '../shared/domain/email/deliver.js';
import type { EmailReader } from '../shared/domain/email/email-status.js';
import type { RequestStore } from '../shared/domain/ingest/request-status.js';
import type { Region } from '../shared/domain/regions.js';
import { queueName, type QueueName } from '../shared/resources.js';

/**
 * `npm run admin -- dlq list | redrive`: the dead letters of a queue (messages that failed
 * `maxReceiveCount` times), and moving them back to their queue to be applied again. The
 * same calls work on AWS and on the local stand-in (fauxqs has no message move task, so a
 * redrive sends each message again and then deletes it from the dead-letter queue: a
 * message sent twice is still applied once, its effect is keyed on its request ID).
 */
const Envelope = z.object({
  request_id: z.string(),
  instance_id: z.string(),
  kind: z.string(),
  accepted_at: z.string(),
  records: z.number().optional(),
});
/** An email message: one email of an instance. */
const EmailEnvelope = z.object({ instance_id: z.string(), message_id: z.string() });

export interface DeadLetter {
  messageId: string;
  requestId?: string;
  instance?: string;
  kind?: string;
  acceptedAt?: string;
  receives: string;
  reason?: string;
  /** An email message's email. */
  emailId?: string;
  /** Where that email stands (what a redrive does to it). */
  state?: string;
}

/** What the listing reads to say why a letter is there and where its work stands. */
export interface DeadLetterLookups {
  requests: Pick<RequestStore, 'get'>;
  emails: EmailReader;
}

async function queueUrls(sqs: SQSClient, region: Region, queue: QueueName) {
  const url = async (name: string) => {
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    if (!QueueUrl) throw new Error(`No queue ${name}`);
    return QueueUrl;
  };
  return {
    source: await url(queueName(region, queue)),
    deadLetters: await url(queueName(region, queue, true)),
  };
}

/** Receives every message of a queue once (hidden meanwhile), then hands each to `visit`. */
async function drain(
  sqs: SQSClient,
  url: string,
  visit: (message: Message) => Promise<void>,
  hideSeconds: number,
) {
  const seen = new Set<string>();
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: hideSeconds,
        // Long polling asks every server: an empty answer means the queue is empty.
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const fresh = Messages.filter((message) => !seen.has(message.MessageId ?? ''));
    if (fresh.length === 0) return;
    for (const message of fresh) {
      seen.add(message.MessageId ?? '');
      await visit(message);
    }
  }
}

/** Makes received messages visible again at once. */
async function showAgain(sqs: SQSClient, url: string, handles: string[]) {
  for (const handle of handles) {
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: handle,
        VisibilityTimeout: 0,
      }),
    );
  }
}

function bodyOf(message: Message): unknown {
  try {
    return JSON.parse(message.Body ?? '');
  } catch {
    return undefined;
  }
}

function describe(message: Message): DeadLetter {
  const body = bodyOf(message);
  const parsed = Envelope.safeParse(body);
  const email = EmailEnvelope.safeParse(body);
  return {
    messageId: message.MessageId ?? '',
    receives: message.Attributes?.ApproximateReceiveCount ?? '?',
    ...(parsed.success
      ? {
          requestId: parsed.data.request_id,
          instance: parsed.data.instance_id,
          kind: parsed.data.kind,
          acceptedAt: parsed.data.accepted_at,
        }
      : email.success
        ? { instance: email.data.instance_id, emailId: email.data.message_id }
        : {}),
  };
}

/**
 * The dead letters of a queue, left where they are: with the reason their request recorded,
 * or, for an email, where the email stands (so that one left `sending` by a crash on its
 * last receive shows, and what a redrive will do).
 */
export async function listDeadLetters(
  sqs: SQSClient,
  { requests, emails }: DeadLetterLookups,
  region: Region,
  queue: QueueName,
): Promise<DeadLetter[]> {
  const { deadLetters } = await queueUrls(sqs, region, queue);
  const found: DeadLetter[] = [];
  const handles: string[] = [];
  await drain(
    sqs,
    deadLetters,
    async (message) => {
      const letter = describe(message);
      if (queue === 'email' && letter.instance && letter.emailId) {
        const record = (await emails.get(letter.instance, [letter.emailId])).get(letter.emailId);
        letter.state = deadLetterState(record, Date.now());
        letter.reason = record?.events.findLast((event) => event.type === 'dead_lettered')?.detail;
      } else if (letter.instance && letter.requestId) {
        const status = await requests.get(letter.instance, letter.requestId);
        if (status?.failure) letter.reason = status.failure.error;
      }
      found.push(letter);
      if (message.ReceiptHandle) handles.push(message.ReceiptHandle);
    },
    60,
  );
  // Listing changes nothing: the letters are visible again at once.
  await showAgain(sqs, deadLetters, handles);
  return found;
}

/** Moves dead letters (all, or the one `only` names: its SQS, request or email ID) back. */
export async function redriveDeadLetters(
  sqs: SQSClient,
  region: Region,
  queue: QueueName,
  only?: string,
): Promise<DeadLetter[]> {
  const { source, deadLetters } = await queueUrls(sqs, region, queue);
  const moved: DeadLetter[] = [];
  const skipped: string[] = [];
  await drain(
    sqs,
    deadLetters,
    async (message) => {
      const letter = describe(message);
      if (only && ![letter.messageId, letter.requestId, letter.emailId].includes(only)) {
        if (message.ReceiptHandle) skipped.push(message.ReceiptHandle);
        return;
      }
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: source,
          MessageBody: message.Body ?? '',
          ...(message.MessageAttributes ? { MessageAttributes: message.MessageAttributes } : {}),
        }),
      );
      await sqs.send(
        new DeleteMessageCommand({ QueueUrl: deadLetters, ReceiptHandle: message.ReceiptHandle }),
      );
      moved.push(letter);
    },
    60,
  );
  await showAgain(sqs, deadLetters, skipped);
  return moved;
}
