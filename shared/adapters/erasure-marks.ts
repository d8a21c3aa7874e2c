import { createHash } from 'node:crypto';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Erased people's marks (docs/webhooks.md, "Erased people"): `person/delete` writes one in
 * the requests table (`<inst>#ERASED#<SHA-256 of the person's ID>`: not even the ID stays)
 * before it erases anything, and webhook
 * deliveries and replays read it before they send an event that names the person, so that
 * nothing about the person leaves once the erasure has answered, whatever the streams still
 * carry. A mark outlives every kept event (30 days) and every queued delivery (14 days).
 */
export const ERASURE_MARK_DAYS = 35;

export function erasureMarkKey(instanceId: string, personId: string) {
  const digest = createHash('sha256').update(`${instanceId}\n${personId}`).digest('hex');
  return { pk: `${instanceId}#ERASED#${digest}`, sk: 'ERASED' };
}

export async function markErased(
  db: DynamoDBDocumentClient,
  table: string,
  instanceId: string,
  personId: string,
  now = Date.now(),
): Promise<void> {
  await db.send(
    new PutCommand({
      TableName: table,
      Item: {
        ...erasureMarkKey(instanceId, personId),
        erased_at: new Date(now).toISOString(),
        expires_at: Math.floor(now / 1000) + ERASURE_MARK_DAYS * 86_400,
      },
    }),
  );
}

export class DynamoErasureMarks {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Whether the person was erased (strongly consistent: a mark written is always seen). */
  async isErased(instanceId: string, personId: string): Promise<boolean> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: erasureMarkKey(instanceId, personId),
        ConsistentRead: true,
        ProjectionExpression: 'pk',
      }),
    );
    return Item !== undefined;
  }
}
