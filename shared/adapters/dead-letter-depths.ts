import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { DeadLetterDepths } from '../domain/console/console-overview.js';
import { runBounded } from '../lib/bounded.js';
import { deadLetterUrlVariable, QUEUES, STREAM_FAILURES_QUEUE } from '../resources.js';

/**
 * The depth of the region's dead-letter queues (one `GetQueueAttributes` each), and of the
 * stream-failures queue, where stream workers' failed batches are described. A queue whose
 * URL the function was not given is listed without a depth.
 */
export const DeadLetterEnv = z.object({
  ...Object.fromEntries(
    QUEUES.map((queue) => [deadLetterUrlVariable(queue.name), z.url().optional()]),
  ),
  STREAM_FAILURES_QUEUE_URL: z.url().optional(),
});

export class SqsDeadLetterDepths implements DeadLetterDepths {
  private readonly queues: { queue: string; url: string | undefined }[];

  constructor(
    private readonly sqs: SQSClient,
    env: Record<string, string | undefined>,
  ) {
    this.queues = [
      ...QUEUES.map((queue) => ({
        queue: queue.name,
        url: env[deadLetterUrlVariable(queue.name)],
      })),
      { queue: STREAM_FAILURES_QUEUE, url: env.STREAM_FAILURES_QUEUE_URL },
    ];
  }

  async depths(): Promise<{ queue: string; messages: number | null }[]> {
    const depths = new Map<string, number>();
    const { failure } = await runBounded(this.queues, 8, async ({ queue, url }) => {
      if (!url) return;
      const { Attributes = {} } = await this.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      depths.set(
        queue,
        Object.values(Attributes).reduce((sum, count) => sum + (Number(count) || 0), 0),
      );
    });
    if (failure) throw failure.error;
    return this.queues.map(({ queue }) => ({ queue, messages: depths.get(queue) ?? null }));
  }
}
