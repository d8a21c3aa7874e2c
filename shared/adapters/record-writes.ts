import {
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { FieldValue } from '../domain/fields/field-values.js';
import {
  AlreadyAppliedError,
  claimId,
  ClaimNotHeldError,
  ClaimTakenError,
  RecordChangedError,
  RecordTooLargeError,
  WriteConflictError,
  type ClaimKey,
  type RecordMarker,
} from '../domain/merge/merge-engine.js';
import { ledgerExpiry, markerKey } from './request-store.js';
import { batchGet, cancellationReasons, type ExpressionBuilder } from './dynamo-helpers.js';
import { TRANSIENT_REASONS } from './dynamo-resilience.js';
import type { TransactionBatcher, TransactionPart } from './transaction-batcher.js';

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
  clears: string[];
  expected: Record<string, FieldValue | undefined>;
  updatedAt: string;
}

/**
 * DynamoDB refuses an expression longer than 4 KB. An update of very many fields (or tags)
 * at once is written instead as the whole new state, conditioned on the version it was
 * planned from (`wholeStateUpdate`).
 */
export const MAX_EXPRESSION_CHARS = 3_800;

export function fitsExpressionLimit(...expressions: (string | undefined)[]): boolean {
  return expressions.every((expression) => (expression ?? '').length <= MAX_EXPRESSION_CHARS);
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
  for (const id of [...plan.removes, ...plan.clears]) remove.push(field(id));
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

/** A field-level update's expressions; `undefined` when they pass DynamoDB's 4 KB limit. */
export function fieldLevelExpressions(
  x: ExpressionBuilder,
  set: string[],
  remove: string[],
  conditions: string[],
) {
  const UpdateExpression = updateExpression(x, set, remove);
  const ConditionExpression = conditions.join(' AND ');
  if (!fitsExpressionLimit(UpdateExpression, ConditionExpression)) return undefined;
  return {
    UpdateExpression,
    ConditionExpression,
    ExpressionAttributeNames: x.names,
    ExpressionAttributeValues: x.values,
  };
}

/**
 * An update that writes a record's whole new state (`set`), conditioned on the version it
 * was planned from: a concurrent write makes it fail, and the engine plans it again.
 */
export function wholeStateExpressions(
  x: ExpressionBuilder,
  set: string[],
  version: number | undefined,
) {
  return {
    UpdateExpression: updateExpression(x, set, []),
    ConditionExpression:
      version === undefined
        ? `attribute_exists(pk) AND attribute_not_exists(${x.name('version')})`
        : `${x.name('version')} = ${x.value(version)}`,
    ExpressionAttributeNames: x.names,
    ExpressionAttributeValues: x.values,
  };
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
  consistent = true,
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

/**
 * Puts of new claims (free, or already ours) and deletes of released ones: ours, or already
 * gone (a value held from before its field became a key has no claim, and must not stop the
 * person from changing it). A claim another record holds makes the write fail instead
 * (`ClaimNotHeldError`), and the update is planned again without releasing it.
 */
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
        ConditionExpression: 'attribute_not_exists(pk) OR owner_id = :me',
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

const isSizeProblem = (message: string | undefined) =>
  /item size|size has exceeded/i.test(message ?? '');

/**
 * The marker of a queued request's record (requests table), put only if it is not there:
 * the record's outcome, recorded in the transaction that applies it. Goes last.
 */
export function markerPut(table: string, instanceId: string, marker: RecordMarker): TransactItem {
  return {
    Put: {
      TableName: table,
      Item: {
        ...markerKey(instanceId, marker.requestId, marker.index),
        outcome: marker.outcome,
        expires_at: ledgerExpiry(),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/** The marker put of a write, if it has one (a queued request's record); `[]` otherwise. */
export function markerPuts(
  table: string | undefined,
  instanceId: string,
  marker: RecordMarker | undefined,
): TransactItem[] {
  if (!marker) return [];
  if (!table) throw new Error('recording outcomes needs the requests table');
  return [markerPut(table, instanceId, marker)];
}

/**
 * Writes a merged record's transaction (its marker last, if any) and turns a failure into
 * the engine's errors (`mergeWriteError`).
 */
export async function writeMerged(
  db: DynamoDBDocumentClient,
  items: TransactItem[],
  claims: { released: [string, string][]; added: [string, string][] },
  marked: boolean,
): Promise<void> {
  try {
    await db.send(new TransactWriteCommand({ TransactItems: items }));
  } catch (error) {
    throw mergeWriteError(error, claims, marked);
  }
}

/**
 * Writes a merged record's items (its marker last, if any) and counters through a batcher,
 * which may share the call with other records of the request (each record stays atomic),
 * and turns a failure into the engine's errors (`mergeWriteError`).
 */
export async function writeMergedPart(
  batcher: TransactionBatcher,
  part: TransactionPart,
  claims: { released: [string, string][]; added: [string, string][] },
  marked: boolean,
): Promise<void> {
  try {
    await batcher.write(part);
  } catch (error) {
    throw mergeWriteError(error, claims, marked);
  }
}

/**
 * Turns a failed write of a merged record into the engine's errors. The transaction's items
 * are, in order: the record itself, the released claims, the added claims, items without
 * conditions (counters, activities), and last the marker of a queued request's record.
 */
export function mergeWriteError(
  error: unknown,
  claims: { released: [string, string][]; added: [string, string][] },
  marked = false,
): unknown {
  if (
    error instanceof Error &&
    error.name === 'ValidationException' &&
    isSizeProblem(error.message)
  ) {
    return new RecordTooLargeError(error.message);
  }
  const reasons = cancellationReasons(error);
  if (!reasons) return error;
  const codes = reasons.map((reason) => reason.Code);
  // Another delivery of the request recorded this record's outcome: nothing was applied.
  if (marked && codes.at(-1) === 'ConditionalCheckFailed') return new AlreadyAppliedError();
  if (
    reasons.some((reason) => reason.Code === 'ValidationError' && isSizeProblem(reason.Message))
  ) {
    return new RecordTooLargeError('item size');
  }
  const failed = (at: number) => codes[at] === 'ConditionalCheckFailed';
  const releasedAt = 1;
  const addedAt = releasedAt + claims.released.length;
  const taken = claims.added.filter((_, i) => failed(addedAt + i));
  if (taken.length > 0) return new ClaimTakenError(taken.map(([field]) => field));
  if (failed(0)) return new RecordChangedError();
  const notHeld = claims.released.filter((_, i) => failed(releasedAt + i));
  if (notHeld.length > 0) {
    return new ClaimNotHeldError(notHeld.map(([field, value]) => ({ field, value })));
  }
  // Nothing was applied and the same write may pass later (`TRANSIENT_REASONS`).
  if (codes.some((code) => code !== undefined && code !== 'None' && TRANSIENT_REASONS.has(code))) {
    return new WriteConflictError();
  }
  return error;
}
