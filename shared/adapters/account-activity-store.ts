import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type {
  AccountActivityStore,
  AccountActivityToWrite,
} from '../domain/organizations/account-activities.js';
import type { ActivityQuery, ActivityReader } from '../domain/people/person-activities.js';
import { ActivityTimeline } from './activity-timeline.js';
import { batchGet, batchWrite } from './dynamo-helpers.js';
import { organizationKey } from './organization-store.js';

/**
 * Accounts' activities (the activities table, `<inst>#O#<organization>` / `<time>#<id>`),
 * beside people's: written 25 a call, read as a timeline like a person's.
 */
export class DynamoAccountActivityStore implements AccountActivityStore, ActivityReader {
  private readonly timeline: ActivityTimeline;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { activities: string; organizations: string },
  ) {
    this.timeline = new ActivityTimeline(db, tables.activities);
  }

  async writeAccountActivities(instanceId: string, activities: AccountActivityToWrite[]) {
    await batchWrite(
      this.db,
      this.tables.activities,
      activities.map((activity) => ({
        PutRequest: {
          Item: {
            pk: `${instanceId}#O#${activity.organization_id}`,
            sk: `${activity.created_at}#${activity.id}`,
            ...activity,
          },
        },
      })),
    );
  }

  /** Whether the account is the instance's (archived ones keep their activities readable). */
  async personExists(instanceId: string, organizationId: string) {
    const items = await batchGet(
      this.db,
      this.tables.organizations,
      [organizationKey(instanceId, organizationId)],
      true,
    );
    return items.length > 0;
  }

  activities(
    instanceId: string,
    organizationId: string,
    options: ActivityQuery & { limit: number; before?: string; skip?: number },
  ) {
    return this.timeline.page(`${instanceId}#O#${organizationId}`, options);
  }

  countActivities(instanceId: string, organizationId: string, query: ActivityQuery, max: number) {
    return this.timeline.count(`${instanceId}#O#${organizationId}`, query, max);
  }

  /** Every activity of an account, deleted (when the account is). */
  async forget(instanceId: string, organizationId: string): Promise<void> {
    const partition = `${instanceId}#O#${organizationId}`;
    for (;;) {
      const page = await this.timeline.keys(partition, 100);
      if (page.length === 0) return;
      await batchWrite(
        this.db,
        this.tables.activities,
        page.map((sk) => ({ DeleteRequest: { Key: { pk: partition, sk } } })),
      );
    }
  }
}
