import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SendConfirmations } from '../domain/email/deliver.js';
import { logger } from '../lib/logger.js';
import type { DynamoEmailStore } from './email-store.js';

/**
 * What proves that SES did not take an email (deliver.ts): the events watermark in the
 * emails table, the depth of the SES events' dead-letter queue, and a probe to the mailbox
 * simulator when no send has moved the watermark on. Without the dead-letter queue's URL
 * nothing can be proven, and no email is sent again.
 */
export class SesSendConfirmations implements SendConfirmations {
  private lastProbe = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: Pick<DynamoEmailStore, 'sendEventsThrough'>,
    private readonly sqs: SQSClient,
    private readonly eventsDeadLetterQueueUrl: string | undefined,
    private readonly sendProbe: () => Promise<void>,
    private readonly probeEveryMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  eventsThrough(): Promise<number | undefined> {
    return this.store.sendEventsThrough();
  }

  async deadLetteredEvents(): Promise<number> {
    if (!this.eventsDeadLetterQueueUrl) return Number.POSITIVE_INFINITY;
    const { Attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.eventsDeadLetterQueueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return Object.values(Attributes).reduce((sum, count) => sum + (Number(count) || 0), 0);
  }

  async probe(): Promise<void> {
    const now = this.now();
    if (now - this.lastProbe < this.probeEveryMs) return;
    this.lastProbe = now;
    await this.sendProbe().catch((error: unknown) => {
      // SES may still be down: the next delivery that needs proof probes again.
      logger.warn('The delivery probe was not sent', { error: error as Error });
    });
  }
}

/** The email-events worker's side: moves the watermark, at most every few seconds a container. */
export function watermarkAdvancer(
  store: Pick<DynamoEmailStore, 'advanceSendEvents'>,
  everyMs = 5_000,
) {
  let written = Number.NEGATIVE_INFINITY;
  return async (acceptedAt: number): Promise<void> => {
    // A watermark a little behind only delays a proof; it never makes a false one.
    if (acceptedAt < written + everyMs) return;
    await store.advanceSendEvents(acceptedAt);
    written = Math.max(written, acceptedAt);
  };
}
