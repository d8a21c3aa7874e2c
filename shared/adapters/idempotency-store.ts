import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { isConditionFailure } from './dynamo-helpers.js';
import { writeReferences } from './person-references.js';
import { personIdsNamedInJson } from '../domain/people/person-references.js';
import {
  IDEMPOTENCY_TTL_SECONDS,
  type BeginResult,
  type IdempotencyStore,
  type KeptRecord,
  type KeptResponse,
} from '../http/idempotency.js';

/**
 * Idempotency records in the requests table: `<inst>#IDEM#<sha256 of the data source's name
 * and the key>` / `IDEM` (records of before that scoping: of the key alone),
 * holding the request's fingerprint, the token of the request that holds the key and its
 * lease, and once answered the status and body; `expires_at` (epoch seconds) lets DynamoDB's
 * TTL remove them after 24 hours (and is checked on read, since TTL deletion lags).
 */
const Record = z.object({
  fingerprint: z.string(),
  status: z.enum(['in_progress', 'done']),
  response_status: z.number().optional(),
  response_body: z.string().optional(),
  expires_at: z.number(),
  lease_until: z.number().optional(),
});

export const idempotencyKey = (instanceId: string, keyHash: string) => ({
  pk: `${instanceId}#IDEM#${keyHash}`,
  sk: 'IDEM',
});

export class DynamoIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly now: () => number = Date.now,
  ) {}

  async begin(
    instanceId: string,
    keyHash: string,
    fingerprint: string,
    token: string,
    leaseUntil: number,
  ): Promise<BeginResult> {
    const key = idempotencyKey(instanceId, keyHash);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const now = this.now();
      try {
        await this.db.send(
          new PutCommand({
            TableName: this.table,
            Item: {
              ...key,
              fingerprint,
              status: 'in_progress',
              token,
              lease_until: leaseUntil,
              expires_at: Math.floor(now / 1000) + IDEMPOTENCY_TTL_SECONDS,
              created_at: new Date(now).toISOString(),
            },
            // Free, expired, or held by a request whose lease ran out (it died unanswered).
            ConditionExpression:
              'attribute_not_exists(pk) OR expires_at < :seconds OR (#status = :running AND lease_until < :now)',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: {
              ':seconds': Math.floor(now / 1000),
              ':running': 'in_progress',
              ':now': now,
            },
          }),
        );
        return { kind: 'started', token };
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
      }
      const { Item } = await this.db.send(
        new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }),
      );
      if (!Item) continue; // released meanwhile: take it
      const record = Record.parse(Item);
      if (record.fingerprint !== fingerprint) return { kind: 'mismatch' };
      if (record.status === 'in_progress') return { kind: 'in_progress' };
      return {
        kind: 'replay',
        response: {
          statusCode: record.response_status ?? 200,
          body: record.response_body ?? '{}',
        },
      };
    }
    return { kind: 'in_progress' };
  }

  async complete(instanceId: string, keyHash: string, token: string, response: KeptResponse) {
    const expiresAt = Math.floor(this.now() / 1000) + IDEMPOTENCY_TTL_SECONDS;
    // The people the kept answer names can be erased: references first, so none is missed.
    await writeReferences(
      this.db,
      this.table,
      instanceId,
      personIdsNamedInJson(response.body),
      `IDEM#${keyHash}`,
      expiresAt,
    );
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: idempotencyKey(instanceId, keyHash),
          UpdateExpression:
            'SET #status = :done, response_status = :code, response_body = :body, expires_at = :expires REMOVE lease_until',
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#status': 'status', '#token': 'token' },
          ExpressionAttributeValues: {
            ':done': 'done',
            ':code': response.statusCode,
            ':body': response.body,
            ':expires': expiresAt,
            ':token': token,
          },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error; // taken over after our lease ran out
    }
  }

  async peek(instanceId: string, keyHash: string): Promise<KeptRecord | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: idempotencyKey(instanceId, keyHash),
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    const record = Record.parse(Item);
    // TTL deletion lags: an expired record answers for nothing.
    if (record.expires_at < Math.floor(this.now() / 1000)) return undefined;
    return {
      fingerprint: record.fingerprint,
      ...(record.status === 'done'
        ? {
            response: {
              statusCode: record.response_status ?? 200,
              body: record.response_body ?? '{}',
            },
          }
        : {}),
    };
  }

  async release(instanceId: string, keyHash: string, token: string) {
    try {
      await this.db.send(
        new DeleteCommand({
          TableName: this.table,
          Key: idempotencyKey(instanceId, keyHash),
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': token },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }
}
