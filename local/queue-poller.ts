import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSMessageAttributes } from 'aws-lambda';
import { lambdaContext } from './http-adapter.js';

/**
 * Plays the Lambda SQS event source: long-polls a queue, hands batches to a worker handler
 * as SQS events, and deletes what the handler did not report as failed
 * (`batchItemFailures`). Failed messages come back after the visibility timeout and, past
 * the queue's `maxReceiveCount`, go to its dead-letter queue, as on AWS.
 */
export type SqsHandler = (
  event: SQSEvent,
  context: Context,
) => Promise<SQSBatchResponse | undefined>;

export interface PollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: SqsHandler;
  functionName: string;
  batchSize?: number;
  timeoutSeconds?: number;
  waitTimeSeconds?: number;
}

function attributesOf(message: Message): SQSMessageAttributes {
  const attributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    const attribute: MessageAttributeValue = value;
    attributes[name] = {
      dataType: attribute.DataType ?? 'String',
      ...(attribute.StringValue !== undefined ? { stringValue: attribute.StringValue } : {}),
      ...(attribute.BinaryValue !== undefined
        ? { binaryValue: Buffer.from(attribute.BinaryValue).toString('base64') }
        : {}),
    };
  }
  return attributes;
}

export function toSqsEvent(messages: Message[], queueArn: string, awsRegion: string): SQSEvent {
  return {
    Records: messages.map((message) => ({
      messageId: message.MessageId ?? '',
      receiptHandle: message.ReceiptHandle ?? '',
      body: message.Body ?? '',
      attributes: {
        ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? '1',
        SentTimestamp: message.Attributes?.SentTimestamp ?? String(Date.now()),
        SenderId: message.Attributes?.SenderId ?? 'local',
        ApproximateFirstReceiveTimestamp:
          message.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      },
      messageAttributes: attributesOf(message),
      md5OfBody: message.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      eventSourceARN: queueArn,
      awsRegion,
    })),
  };
}

export function startQueuePoller(options: PollerOptions): { stop: () => Promise<void> } {
  const { sqs, queueUrl, queueArn, handler, functionName } = options;
  const abort = new AbortController();
  const stopped = () => abort.signal.aborted;

  const waitTimeSeconds = options.waitTimeSeconds ?? 5;
  const loop = async () => {
    while (!stopped()) {
      try {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: Math.min(options.batchSize ?? 10, 10),
            // Long polling, as Lambda's SQS event source: an idle poller asks once in 5 s
            // (sixty-odd pollers of three regions asking every second kept LocalStack's one
            // gateway busy); a message answers the poll at once, and stopping aborts it. Not
            // Lambda's 20 s: a poll whose connection is cut (a stand-in restarted) can stay
            // waiting in fauxqs, and take a message it then never hands over, until it ends.
            WaitTimeSeconds: waitTimeSeconds,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          // The answer may take the whole wait and then some: a client that gave up at the
          // wait's end (its 20 s, with 20 s polls on LocalStack) left the poll waiting there,
          // to take a message that then stayed invisible for the queue's visibility timeout
          // (an async merge not done in 240 s, CI 2026-11-29).
          { abortSignal: abort.signal, requestTimeout: (waitTimeSeconds + 10) * 1000 },
        );
        if (Messages.length === 0) continue;
        const event = toSqsEvent(Messages, queueArn, process.env.AWS_REGION ?? 'us-east-1');
        let failed = new Set<string>(Messages.map((message) => message.MessageId ?? ''));
        try {
          const result = await handler(
            event,
            lambdaContext(functionName, options.timeoutSeconds ?? 60),
          );
          failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        } catch (error) {
          console.error(`${functionName} failed a batch; it will be retried`, error);
        }
        const done = Messages.filter((message) => !failed.has(message.MessageId ?? ''));
        if (done.length > 0) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((message, index) => ({
                Id: String(index),
                ReceiptHandle: message.ReceiptHandle ?? '',
              })),
            }),
          );
        }
      } catch (error) {
        if (stopped()) return;
        console.error(`Polling ${queueUrl} failed; retrying`, error);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  };
  const done = loop();
  return {
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}
