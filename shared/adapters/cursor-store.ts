import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CursorStore, StoredCursor } from '../domain/cursor.js';

/**
 * Listing cursors (the requests table, docs/data-model.md): `<inst>#CUR#<cursor ID>` holds
 * the listing's name and the page's signed state until `expires_at` (the table's TTL removes
 * it some time after; reads check the time themselves).
 */
const cursorKey = (instanceId: string, id: string) => ({
  pk: `${instanceId}#CUR#${id}`,
  sk: 'CUR',
});

export class DynamoCursorStore implements CursorStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async put(instanceId: string, id: string, cursor: StoredCursor): Promise<void> {
    await this.db.send(
      new PutCommand({ TableName: this.table, Item: { ...cursorKey(instanceId, id), ...cursor } }),
    );
  }

  /** Strongly consistent: a client asks for the next page the moment it has the cursor. */
  async get(instanceId: string, id: string): Promise<StoredCursor | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: cursorKey(instanceId, id),
        ConsistentRead: true,
        ProjectionExpression: 'listing, #token, expires_at',
        ExpressionAttributeNames: { '#token': 'token' },
      }),
    );
    if (
      typeof Item?.listing !== 'string' ||
      typeof Item.token !== 'string' ||
      typeof Item.expires_at !== 'number'
    ) {
      return undefined;
    }
    return { listing: Item.listing, token: Item.token, expires_at: Item.expires_at };
  }
}
