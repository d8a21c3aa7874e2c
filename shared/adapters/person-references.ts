import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchWrite, queryPartition, type WriteRequest } from './dynamo-helpers.js';

/**
 * Reference items: `<inst>#PREF#<person_id>` / `<what>` (`IDEM#<key hash>`, `REQ#<request
 * id>` in the requests table; `M#<message id>` in the emails table), written with each kept
 * record that names a person and expiring with it, so that erasing the person finds those
 * records with one query per table instead of a scan. Cost: one small write per person a
 * kept answer names (in the record's own batch for emails), nothing on requests without an
 * `Idempotency-Key` that are not asynchronous.
 */
export const referencePk = (instanceId: string, personId: string) =>
  `${instanceId}#PREF#${personId}`;

export function referencePuts(
  instanceId: string,
  personIds: readonly string[],
  ref: string,
  expiresAt: number,
): WriteRequest[] {
  return [...new Set(personIds)].map((personId) => ({
    PutRequest: {
      Item: { pk: referencePk(instanceId, personId), sk: ref, expires_at: expiresAt },
    },
  }));
}

export async function writeReferences(
  db: DynamoDBDocumentClient,
  table: string,
  instanceId: string,
  personIds: readonly string[],
  ref: string,
  expiresAt: number,
): Promise<void> {
  if (personIds.length === 0) return;
  await batchWrite(db, table, referencePuts(instanceId, personIds, ref, expiresAt));
}

/** Every reference of a person in one table (strongly consistent). */
export async function referencesOf(
  db: DynamoDBDocumentClient,
  table: string,
  instanceId: string,
  personId: string,
): Promise<string[]> {
  const items = await queryPartition(db, table, referencePk(instanceId, personId), ['sk']);
  return items.map((item) => String(item.sk));
}
