import { randomBytes } from 'node:crypto';
import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { AuditEntry } from '../domain/console/audit.js';

/**
 * The console's audit log: one item per change made through the console, in the config
 * table under the instance (`INST#<id>#AUDIT`, sorted by time), kept as long as the instance.
 * Console changes are a person's clicks, a few a minute at most, so one partition per
 * instance holds them without becoming hot.
 */

const Item = z.object({
  at: z.string(),
  actor_subject: z.string(),
  actor_email: z.string().nullable(),
  action: z.string(),
  target: z.string(),
  source_ip: z.string(),
  request_id: z.string(),
  details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
});

const auditPk = (instanceId: string) => `INST#${instanceId}#AUDIT`;
/** A page's position: the sort key of the last entry it held. */
export const AUDIT_CURSOR = /^\d{4}-\d\d-\d\dT[\d:.]+Z#[0-9a-f]{12}$/;

export class DynamoAuditLog {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async record(instanceId: string, entry: AuditEntry): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: auditPk(instanceId),
          sk: `${entry.at}#${randomBytes(6).toString('hex')}`,
          at: entry.at,
          actor_subject: entry.actor.subject,
          actor_email: entry.actor.email,
          action: entry.action,
          target: entry.target,
          source_ip: entry.source_ip,
          request_id: entry.request_id,
          details: entry.details,
        },
      }),
    );
  }

  /** Newest first, `limit` at a time; `before` is the previous page's `next`. */
  async list(
    instanceId: string,
    limit: number,
    before?: string,
  ): Promise<{ entries: AuditEntry[]; next: string | null }> {
    const { Items = [], LastEvaluatedKey } = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': auditPk(instanceId) },
        ScanIndexForward: false,
        Limit: limit,
        ...(before ? { ExclusiveStartKey: { pk: auditPk(instanceId), sk: before } } : {}),
      }),
    );
    const entries = Items.map((raw) => {
      const item = Item.parse(raw);
      return {
        at: item.at,
        actor: { subject: item.actor_subject, email: item.actor_email },
        action: item.action,
        target: item.target,
        source_ip: item.source_ip,
        request_id: item.request_id,
        details: item.details,
      };
    });
    const last: unknown = LastEvaluatedKey?.sk;
    return { entries, next: typeof last === 'string' ? last : null };
  }
}
