import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { OffsetCheckpoints } from '../domain/people/person-get.js';

/**
 * Where listings paged by `offset` got to (the requests table, docs/data-model.md):
 * `<inst>#OFS#<listing>` / the offset (12 digits) holds the cursor of the page that ended
 * there, for a day. A listing's next page by `offset` reads the nearest one at or before it:
 * one strongly consistent query of one item.
 */
const KEEP_SECONDS = 86_400;
const OFFSET_DIGITS = 12;

const checkpointPk = (instanceId: string, listing: string) => `${instanceId}#OFS#${listing}`;
const offsetKey = (offset: number) => String(offset).padStart(OFFSET_DIGITS, '0');

export class DynamoOffsetCheckpoints implements OffsetCheckpoints {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async nearest(instanceId: string, listing: string, offset: number) {
    const { Items = [] } = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk <= :offset',
        ExpressionAttributeValues: {
          ':pk': checkpointPk(instanceId, listing),
          ':offset': offsetKey(offset),
        },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const [item] = Items;
    if (!item || typeof item.cursor !== 'string') return undefined;
    return { offset: Number(item.sk), cursor: item.cursor };
  }

  async save(instanceId: string, listing: string, offset: number, cursor: string) {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: checkpointPk(instanceId, listing),
          sk: offsetKey(offset),
          cursor,
          expires_at: Math.floor(Date.now() / 1000) + KEEP_SECONDS,
        },
      }),
    );
  }
}
