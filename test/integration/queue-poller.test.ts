import { describe, expect, it } from '@jest/globals';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { startQueuePoller } from '../../local/queue-poller.js';
import { stackAwsEnv, stackEndpoint } from './stack.js';

const sqs = new SQSClient({
  endpoint: stackEndpoint('SQS'),
  region: stackAwsEnv().AWS_REGION,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  useQueueUrlAsEndpoint: false,
});

async function queue(name: string, attributes: Record<string, string> = {}) {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { url: QueueUrl ?? '', arn: Attributes?.QueueArn ?? '' };
}

async function until(check: () => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the local SQS event source', () => {
  it('hands batches to the worker, deletes what succeeded and dead-letters what keeps failing', async () => {
    const suffix = Date.now().toString(36);
    const dlq = await queue(`poller-dlq-${suffix}`);
    const main = await queue(`poller-${suffix}`, {
      // 3 s: 'one' and 'three' are deleted well within it even on a loaded machine (at 1 s a
      // slow delete let one come back, seen twice).
      VisibilityTimeout: '3',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: '2' }),
    });
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: main.url,
        Entries: ['one', 'two', 'three'].map((body, index) => ({
          Id: String(index),
          MessageBody: body,
          MessageAttributes: { kind: { DataType: 'String', StringValue: 'test' } },
        })),
      }),
    );

    const seen: string[] = [];
    const events: SQSEvent[] = [];
    const poller = startQueuePoller({
      sqs,
      queueUrl: main.url,
      queueArn: main.arn,
      functionName: 'test-worker',
      waitTimeSeconds: 1,
      handler: (event) => {
        events.push(event);
        seen.push(...event.Records.map((record) => record.body));
        const failures = event.Records.filter((record) => record.body === 'two').map((record) => ({
          itemIdentifier: record.messageId,
        }));
        return Promise.resolve({ batchItemFailures: failures });
      },
    });
    try {
      await until(() => seen.filter((body) => body === 'two').length >= 2, 30_000);
    } finally {
      await poller.stop();
    }

    expect(seen.filter((body) => body === 'one')).toHaveLength(1);
    expect(seen.filter((body) => body === 'three')).toHaveLength(1);
    const record = events[0]?.Records[0];
    expect(record).toMatchObject({ eventSource: 'aws:sqs', eventSourceARN: main.arn });
    expect(record?.messageAttributes.kind).toEqual({ dataType: 'String', stringValue: 'test' });

    await new Promise((resolve) => setTimeout(resolve, 3500));
    // The main queue first: SQS moves a message to its dead-letter queue when a receive would
    // exceed maxReceiveCount, not when its visibility timeout ends (LocalStack does as SQS;
    // fauxqs moved it either way, and this test read the dead-letter queue first).
    const mainLeft = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: main.url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: dlq.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }),
    );
    const inDlq = Messages.map((message) => message.Body);
    const inMain = (mainLeft.Messages ?? []).map((message) => message.Body);
    // "two" is dead-lettered once it has been received maxReceiveCount times; nothing else stays.
    expect({ inDlq, inMain }).toEqual({ inDlq: ['two'], inMain: [] });
  });
});
