import {
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import {
  MAX_MEMBERS,
  type LinkResult,
  type MembershipStore,
} from '../domain/organizations/memberships.js';
import { logger } from '../lib/logger.js';
import { batchGet, cancellationCodes, conditionally } from './dynamo-helpers.js';
import { organizationKey } from './organization-store.js';
import { personKey } from './people-store.js';

/**
 * Memberships span both tables: a person's `organization_id` (people table) and an
 * organization's `members` count (organizations table), changed together in one transaction.
 */
export class DynamoMembershipStore implements MembershipStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { people: string; organizations: string },
  ) {}

  async members(instanceId: string, organizationId: string) {
    const [item] = await batchGet(
      this.db,
      this.tables.organizations,
      [organizationKey(instanceId, organizationId)],
      true,
    );
    return item && item.archived_at === undefined ? Number(item.members ?? 0) : undefined;
  }

  async archivedAmong(instanceId: string, personIds: string[], organizationId: string) {
    const [people, [organization]] = await Promise.all([
      batchGet(
        this.db,
        this.tables.people,
        personIds.map((id) => personKey(instanceId, id)),
        true,
      ),
      batchGet(
        this.db,
        this.tables.organizations,
        [organizationKey(instanceId, organizationId)],
        true,
      ),
    ]);
    return {
      people: people
        .filter((item) => item.archived_at !== undefined)
        .map((item) => String(item.id)),
      organization: organization !== undefined && organization.archived_at !== undefined,
    };
  }

  async organizationsOf(instanceId: string, personIds: string[]) {
    const items = await batchGet(
      this.db,
      this.tables.people,
      personIds.map((id) => personKey(instanceId, id)),
      true,
    );
    return new Map(
      items
        .filter((item) => item.archived_at === undefined)
        .map((item) => [
          String(item.id),
          typeof item.organization_id === 'string' ? item.organization_id : undefined,
        ]),
    );
  }

  async reserve(instanceId: string, organizationId: string, count: number) {
    return conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.tables.organizations,
        Key: organizationKey(instanceId, organizationId),
        UpdateExpression: 'ADD members :n',
        // DynamoDB conditions have no arithmetic: "members + n <= max" is "members <= max - n".
        ConditionExpression:
          'attribute_exists(pk) AND attribute_not_exists(archived_at) AND (attribute_not_exists(members) OR members <= :room)',
        ExpressionAttributeValues: { ':n': count, ':room': MAX_MEMBERS - count },
      }),
    );
  }

  async release(instanceId: string, organizationId: string, count: number) {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tables.organizations,
          Key: organizationKey(instanceId, organizationId),
          UpdateExpression: 'ADD members :n',
          ExpressionAttributeValues: { ':n': -count },
        }),
      );
    } catch (error) {
      logger.error('Reserved room could not be given back; `admin repair counts` fixes it', {
        instance: instanceId,
        organization: organizationId,
        unused: count,
        error: error as Error,
      });
      throw error;
    }
  }

  link(instanceId: string, personId: string, from: string | undefined, to: string) {
    return this.move(instanceId, personId, from, to);
  }

  unlink(instanceId: string, personId: string, from: string) {
    return this.move(instanceId, personId, from, undefined);
  }

  /** One transaction: the person's link (conditioned on where it was) and the old count. */
  private async move(
    instanceId: string,
    personId: string,
    from: string | undefined,
    to: string | undefined,
  ): Promise<LinkResult> {
    const condition =
      from === undefined ? 'attribute_not_exists(organization_id)' : 'organization_id = :from';
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tables.people,
                Key: personKey(instanceId, personId),
                UpdateExpression:
                  to === undefined ? 'REMOVE organization_id' : 'SET organization_id = :to',
                // Never an archived person (archived meanwhile: read again, then refused).
                ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(archived_at) AND ${condition}`,
                ...(from !== undefined || to !== undefined
                  ? {
                      ExpressionAttributeValues: {
                        ...(from !== undefined ? { ':from': from } : {}),
                        ...(to !== undefined ? { ':to': to } : {}),
                      },
                    }
                  : {}),
              },
            },
            ...(from !== undefined
              ? [
                  {
                    Update: {
                      TableName: this.tables.organizations,
                      Key: organizationKey(instanceId, from),
                      UpdateExpression: 'ADD members :minus',
                      ExpressionAttributeValues: { ':minus': -1 },
                    },
                  },
                ]
              : []),
          ],
        }),
      );
      return 'done';
    } catch (error) {
      // The person is no longer where the move expected them. (Conflicts with concurrent
      // transactions are retried by the client before they get here.)
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return 'changed';
      throw error;
    }
  }
}
