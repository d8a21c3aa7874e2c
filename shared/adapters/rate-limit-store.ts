import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { z } from 'zod';
import type { BucketKey, RateLimitStore, TakeRequest, TakeResult } from '../domain/rate-limit.js';
import { currentDeadline, withDeadline } from '../lib/time-budget.js';
import { isConditionFailure } from './dynamo-helpers.js';

/**
 * Rate-limit buckets in the requests table: `<inst>#RATE#<key hash>` / `RATE`, holding the
 * bucket's TAT in epoch microseconds (`tat_us`, see `rate-limit.ts`) and `expires_at`
 * (epoch seconds, TTL) a minute after the bucket would be full again, so idle buckets
 * vanish (an absent bucket is a full one).
 *
 * Each take is one `UpdateItem`: no read before it, and on a failed condition DynamoDB
 * returns the item (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), which tells the
 * limiter the current TAT. A write changes the TAT by addition (`tat_us + :cost`), so
 * containers writing the same bucket at once are serialized by DynamoDB, not refused.
 *
 * The call gets at most `budgetMs` of the request's time budget: the store's retries of
 * throttling stop then and the limiter fails open, rather than holding the request.
 */
const BucketItem = z.object({ tat_us: z.number() });

const keyOf = (bucket: BucketKey) => ({
  pk: `${bucket.instanceId}#RATE#${bucket.keyId}`,
  sk: 'RATE',
});

/** How long after a bucket is full again it is kept (TTL deletion is lazy anyway). */
const KEEP_FULL_SECONDS = 60;

export class DynamoRateLimitStore implements RateLimitStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly budgetMs = 1_000,
  ) {}

  async take(bucket: BucketKey, request: TakeRequest): Promise<TakeResult> {
    const expiresAt = Math.ceil(request.forgetAfterUs / 1_000_000) + KEEP_FULL_SECONDS;
    const command =
      request.from === 'full'
        ? new UpdateCommand({
            TableName: this.table,
            Key: keyOf(bucket),
            UpdateExpression: 'SET tat_us = :tat, expires_at = :expires',
            ConditionExpression: 'attribute_not_exists(tat_us) OR tat_us <= :now',
            ExpressionAttributeValues: {
              ':tat': request.nowUs + request.costUs,
              ':now': request.nowUs,
              ':expires': expiresAt,
            },
            ReturnValues: 'UPDATED_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          })
        : new UpdateCommand({
            TableName: this.table,
            Key: keyOf(bucket),
            UpdateExpression: 'SET tat_us = tat_us + :cost, expires_at = :expires',
            ConditionExpression: 'tat_us > :now AND tat_us <= :max',
            ExpressionAttributeValues: {
              ':cost': request.costUs,
              ':now': request.nowUs,
              ':max': request.maxTatUs,
              ':expires': expiresAt,
            },
            ReturnValues: 'UPDATED_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          });
    const deadline = Math.min(currentDeadline(), Date.now() + this.budgetMs);
    try {
      const { Attributes } = await withDeadline(deadline, () => this.db.send(command));
      return { taken: true, tatUs: BucketItem.parse(Attributes).tat_us };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { taken: false, tatUs: currentTat(error) };
    }
  }
}

/**
 * The TAT in the item a failed condition returned. The document client leaves the item of
 * the error in DynamoDB's attribute-value shape; no item means there is no bucket.
 */
function currentTat(error: unknown): number | undefined {
  const item = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
  if (item === undefined) return undefined;
  return BucketItem.partial().parse(unmarshall(item)).tat_us;
}
