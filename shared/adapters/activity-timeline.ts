import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { ActivityQuery, ActivityView } from '../domain/people/person-activities.js';
import { ExpressionBuilder } from './dynamo-helpers.js';

const ActivityItem = z.object({
  id: z.string(),
  field_id: z.string(),
  attr: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  display: z.string().optional(),
  value: z.number().optional(),
  location: z.record(z.string(), z.unknown()).optional(),
});

/**
 * The activities of one partition of the activities table (a person's `<inst>#P#<id>`, an
 * account's `<inst>#O#<id>`), newest first. Sort keys are `<created_at>#<id>`, so a time
 * range and a position are ranges of the key (a position is exclusive: `<=` it, then the
 * item at it is dropped).
 */
export class ActivityTimeline {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  private query(partition: string, options: ActivityQuery & { before?: string }) {
    const x = new ExpressionBuilder();
    const pk = `${x.name('pk')} = ${x.value(partition)}`;
    const upper =
      options.before !== undefined && options.to !== undefined
        ? options.before < options.to
          ? options.before
          : options.to
        : (options.before ?? options.to);
    const sk = options.from !== undefined || upper !== undefined ? x.name('sk') : '';
    const keyCondition =
      options.from !== undefined && upper !== undefined
        ? `${pk} AND ${sk} BETWEEN ${x.value(options.from)} AND ${x.value(upper)}`
        : options.from !== undefined
          ? `${pk} AND ${sk} >= ${x.value(options.from)}`
          : upper !== undefined
            ? `${pk} AND ${sk} <= ${x.value(upper)}`
            : pk;
    const filter = options.fieldIds
      ? `${x.name('field_id')} IN (${options.fieldIds.map((id) => x.value(id)).join(', ')})`
      : undefined;
    return {
      KeyConditionExpression: keyCondition,
      ...(filter ? { FilterExpression: filter } : {}),
      ExpressionAttributeNames: x.names,
      ExpressionAttributeValues: x.values,
    };
  }

  /** Up to `count` sort keys of the partition (strongly consistent). */
  async keys(partition: string, count: number): Promise<string[]> {
    const page = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': partition },
        ProjectionExpression: 'sk',
        ConsistentRead: true,
        Limit: count,
      }),
    );
    return (page.Items ?? []).map((item) => String(item.sk));
  }

  /** How many activities the query selects, counting at most `max`. */
  async count(partition: string, query: ActivityQuery, max: number): Promise<number> {
    let count = 0;
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          ...this.query(partition, query),
          Select: 'COUNT',
          // Eventually consistent (half the cost): the feed never answers fewer than it shows.
          Limit: max - count,
          ExclusiveStartKey,
        }),
      );
      count += page.Count ?? 0;
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey && count < max);
    return Math.min(count, max);
  }

  /**
   * A page: `skip` activities passed over, then `limit`, from the position `before`; with a
   * filter on activity IDs it reads on until the page is full or the timeline ends.
   */
  async page(
    partition: string,
    options: ActivityQuery & { limit: number; before?: string; skip?: number },
  ): Promise<{ activities: ActivityView[]; next?: string }> {
    const expression = this.query(partition, options);
    const skip = options.skip ?? 0;
    const wanted = skip + options.limit;
    const found: ActivityView[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          ...expression,
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: wanted + 2 - found.length,
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) {
        if (item.sk === options.before) continue; // the position itself: read by the page before
        const parsed = ActivityItem.parse(item);
        found.push({
          id: parsed.id,
          field_id: parsed.field_id,
          attr: parsed.attr,
          ...(parsed.display !== undefined ? { display: parsed.display } : {}),
          ...(parsed.value !== undefined ? { value: parsed.value } : {}),
          ...(parsed.location !== undefined ? { location: parsed.location } : {}),
          created_at: parsed.created_at,
        });
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey && found.length <= wanted);
    const hasMore = found.length > wanted;
    const activities = found.slice(skip, wanted);
    const last = activities.at(-1);
    // Positions are the timeline's sort keys (`<created_at>#<id>`).
    return { activities, ...(hasMore && last ? { next: `${last.created_at}#${last.id}` } : {}) };
  }
}
