import type { DynamoDBDocumentClient, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { FieldValue } from '../domain/fields/field-values.js';
import {
  claimId,
  ClaimTakenError,
  RecordChangedError,
  WriteConflictError,
  type ClaimKey,
} from '../domain/merge/merge-engine.js';
import { batchGet, cancellationCodes, type ExpressionBuilder } from './dynamo-helpers.js';

/**
 * DynamoDB write shapes every kind of merged record shares: the update expression of field
 * changes (with the conditions the plan relied on), key-claim items, and the mapping of a
 * cancelled transaction to the engine's errors.
 */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export interface FieldUpdate {
  sets: Record<string, FieldValue>;
  setsIfAbsent: Record<string, FieldValue>;
  removes: string[];
  expected: Record<string, FieldValue | undefined>;
  updatedAt: string;
}

/** SET/REMOVE clauses and conditions for field changes (`fields.<id>` map entries). */
export function fieldUpdate(x: ExpressionBuilder, plan: FieldUpdate) {
  // Names are registered only when used: DynamoDB refuses unused ones.
  const field = (id: string) => `${x.name('fields')}.${x.name(id)}`;
  const set = [`${x.name('updated_at')} = ${x.value(plan.updatedAt)}`];
  const remove: string[] = [];
  for (const [id, value] of Object.entries(plan.sets)) set.push(`${field(id)} = ${x.value(value)}`);
  for (const [id, value] of Object.entries(plan.setsIfAbsent)) {
    set.push(`${field(id)} = if_not_exists(${field(id)}, ${x.value(value)})`);
  }
  for (const id of plan.removes) remove.push(field(id));
  const conditions = ['attribute_exists(pk)'];
  for (const [id, value] of Object.entries(plan.expected)) {
    conditions.push(
      value === undefined
        ? `attribute_not_exists(${field(id)})`
        : `${field(id)} = ${x.value(value)}`,
    );
  }
  return { set, remove, conditions };
}

export function updateExpression(x: ExpressionBuilder, set: string[], remove: string[]): string {
  return (
    `SET ${set.join(', ')} ADD ${x.name('version')} ${x.value(1)}` +
    (remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : '')
  );
}

export const claimKey = (instanceId: string, field: string, value: string) => ({
  pk: `${instanceId}#K#${field}#${value}`,
  sk: 'K',
});

const ClaimItem = z.object({ field: z.string(), value: z.string(), owner_id: z.string() });

/** Who owns which key values: a map from `claimId(field, value)` to the record ID. */
export async function findClaimOwners(
  db: DynamoDBDocumentClient,
  table: string,
  instanceId: string,
  keys: ClaimKey[],
  consistent = false,
): Promise<Map<string, string>> {
  const items = await batchGet(
    db,
    table,
    keys.map(({ field, value }) => claimKey(instanceId, field, value)),
    consistent,
  );
  const owners = new Map<string, string>();
  for (const item of items) {
    const { field, value, owner_id } = ClaimItem.parse(item);
    owners.set(claimId(field, value), owner_id);
  }
  return owners;
}

/** Puts of new claims (free, or already ours) and deletes of released ones (still ours). */
export function claimWrites(
  table: string,
  instanceId: string,
  ownerId: string,
  added: [string, string][],
  released: [string, string][],
): { released: TransactItem[]; added: TransactItem[] } {
  return {
    released: released.map(([field, value]) => ({
      Delete: {
        TableName: table,
        Key: claimKey(instanceId, field, value),
        ConditionExpression: 'owner_id = :me',
        ExpressionAttributeValues: { ':me': ownerId },
      },
    })),
    added: added.map(([field, value]) => ({
      Put: {
        TableName: table,
        Item: { ...claimKey(instanceId, field, value), field, value, owner_id: ownerId },
        ConditionExpression: 'attribute_not_exists(pk) OR owner_id = :me',
        ExpressionAttributeValues: { ':me': ownerId },
      },
    })),
  };
}

/**
 * Turns a cancelled transaction into the engine's errors. Items before `claimsAt` guard the
 * record itself; the `claims` items from `claimsAt` on are key claims.
 */
export function mergeWriteError(
  error: unknown,
  claimsAt: number,
  claims: [string, string][],
): unknown {
  const codes = cancellationCodes(error);
  if (!codes) return error;
  const taken = claims.filter((_, i) => codes[claimsAt + i] === 'ConditionalCheckFailed');
  if (taken.length > 0) return new ClaimTakenError(taken.map(([field]) => field));
  if (codes.slice(0, claimsAt).includes('ConditionalCheckFailed')) return new RecordChangedError();
  if (codes.includes('TransactionConflict')) return new WriteConflictError();
  return error;
}
