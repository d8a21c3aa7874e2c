import { randomInt } from 'node:crypto';
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  EMAIL_TALLIES,
  TALLY_RETENTION_DAYS,
  tallyDay,
  type EmailTally,
  type EmailTallyReader,
  type EmailTotals,
} from '../domain/email/email-tallies.js';

/**
 * The emails' daily counters in the emails table: `<inst>#ES#<YYYY-MM-DD>` / `<shard>`, with
 * `sent`, `bounced` and `complained`, spread over `TALLY_SHARDS` items so that a busy
 * instance's sends do not all write one item; read by summing a day's shards (one query a
 * day). They expire `TALLY_RETENTION_DAYS` after their day. Their sort keys are never `M`, so
 * the emails' webhook fan-out (which reads `M` items only) never sees them.
 */
export const TALLY_SHARDS = 8;

const tallyPk = (instanceId: string, day: string) => `${instanceId}#ES#${day}`;

/** The transaction item that adds one to a day's counter (a shard picked at random). */
export function tallyUpdate(table: string, instanceId: string, tally: EmailTally, at: Date) {
  const day = tallyDay(at);
  const expires = Math.floor(Date.parse(`${day}T00:00:00Z`) / 1000) + TALLY_RETENTION_DAYS * 86_400;
  return {
    Update: {
      TableName: table,
      Key: { pk: tallyPk(instanceId, day), sk: String(randomInt(TALLY_SHARDS)) },
      UpdateExpression: 'ADD #tally :one SET expires_at = if_not_exists(expires_at, :expires)',
      ExpressionAttributeNames: { '#tally': tally },
      ExpressionAttributeValues: { ':one': 1, ':expires': expires },
    },
  };
}

export class DynamoEmailTallies implements EmailTallyReader {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** One query per day (its few shards), in parallel. */
  async tallies(instanceId: string, days: readonly string[]): Promise<EmailTotals> {
    const totals: EmailTotals = { sent: 0, bounced: 0, complained: 0 };
    const pages = await Promise.all(
      days.map((day) =>
        this.db.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': tallyPk(instanceId, day) },
            // Through names: some of them may be words DynamoDB reserves.
            ProjectionExpression: EMAIL_TALLIES.map((_, i) => `#t${i}`).join(', '),
            ExpressionAttributeNames: Object.fromEntries(
              EMAIL_TALLIES.map((tally, i) => [`#t${i}`, tally]),
            ),
            Limit: TALLY_SHARDS,
          }),
        ),
      ),
    );
    for (const { Items = [] } of pages) {
      for (const item of Items) {
        for (const tally of EMAIL_TALLIES) {
          const value: unknown = item[tally];
          if (typeof value === 'number') totals[tally] += value;
        }
      }
    }
    return totals;
  }
}
