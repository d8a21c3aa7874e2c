import { randomInt } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type {
  AuditEntry,
  JobPosition,
  LifecycleStore,
  RecordState,
} from '../domain/lifecycle/lifecycle.js';
import { claimsOf } from '../domain/merge/field-changes.js';
import {
  ORGANIZATION_KEY_FIELDS,
  ORGANIZATION_NAME,
} from '../domain/organizations/organization-merge.js';
import { batchGet, cancellationCodes, queryPartition, sumCounters } from './dynamo-helpers.js';
import { currentDeadline } from '../lib/time-budget.js';
import { logger } from '../lib/logger.js';
import {
  nameToken,
  ORGANIZATION_SHARDS,
  organizationFromItem,
  organizationHolder,
  organizationKey,
} from './organization-store.js';
import { auditPut, listingPage, untilSettled } from './people-lifecycle-store.js';
import { claimWrites, type TransactItem } from './record-writes.js';
import { DynamoAccountActivityStore } from './account-activity-store.js';
import { directTagCountWrites, DynamoTagStore } from './tag-store.js';
import { TransactionBatcher } from './transaction-batcher.js';
import { tagCountDeltas } from '../domain/people/tag-counts.js';

/**
 * Archive, restore and delete of organizations: as for people (the archived move to the
 * `list` index's `<inst>#X#<shard>` partitions and leave the name index and the
 * `organizations` counter), with their people left linked. Only an archived organization
 * without people can be deleted (its item, its claims, its count).
 */
const counterPk = (instanceId: string) => `${instanceId}#C`;
/** A deleted account whose activities are still to delete (the requests table). */
const forgetMarker = (instanceId: string, id: string) => ({
  pk: `${instanceId}#OFORGET`,
  sk: id,
});
/** What deleting leftover activities leaves of the call's time. */
const FORGET_MARGIN_MS = 5_000;
const shardOf = (id: string) => parseInt(id.slice(-4), 16) % ORGANIZATION_SHARDS;

export class DynamoOrganizationLifecycleStore implements LifecycleStore {
  private readonly tags: DynamoTagStore;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { organizations: string; requests: string; activities?: string },
    private readonly now: () => Date = () => new Date(),
  ) {
    this.tags = new DynamoTagStore(db, tables.organizations, new TransactionBatcher(db), 'OT');
  }

  async states(instanceId: string, ids: string[]) {
    const items = await batchGet(
      this.db,
      this.tables.organizations,
      ids.map((id) => organizationKey(instanceId, id)),
      true,
    );
    return new Map<string, RecordState>(
      items.map((item) => [String(item.id), item.archived_at ? 'archived' : 'active']),
    );
  }

  /** Archived organizations that still have people: only those without can be deleted. */
  async heldBack(instanceId: string, ids: string[]) {
    const items = await batchGet(
      this.db,
      this.tables.organizations,
      ids.map((id) => organizationKey(instanceId, id)),
      true,
    );
    return new Map(
      items
        .map((item) => organizationFromItem(item))
        .filter((organization) => organization.members > 0)
        .map((organization) => [
          organization.id,
          `it has ${organization.members} people: remove them first`,
        ]),
    );
  }

  private async read(instanceId: string, id: string) {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tables.organizations,
        Key: organizationKey(instanceId, id),
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    return { ...organizationFromItem(Item), archived: typeof Item.archived_at === 'string' };
  }

  private counter(instanceId: string, organizations: number, archived: number): TransactItem {
    return {
      Update: {
        TableName: this.tables.organizations,
        Key: { pk: counterPk(instanceId), sk: String(randomInt(ORGANIZATION_SHARDS)) },
        UpdateExpression: 'ADD organizations :o, archived :a',
        ExpressionAttributeValues: { ':o': organizations, ':a': archived },
      },
    };
  }

  /**
   * The count changes of its tags when an organization is archived or restored, and the
   * condition they depend on: its tags as read (its `version`, which every write moves).
   */
  private tagCounts(
    instanceId: string,
    organization: { tags: string[]; version?: number },
    counted: boolean,
    at: string,
  ) {
    // Conditioned on the version even without tags: a merge may tag it meanwhile.
    const condition =
      organization.version === undefined
        ? { expression: ' AND attribute_not_exists(version)', values: {} }
        : { expression: ' AND version = :v', values: { ':v': organization.version } };
    if (organization.tags.length === 0) return { items: [], pending: [], condition };
    const holder = organizationHolder(organization);
    const { items, pending } = directTagCountWrites(
      this.tables.organizations,
      instanceId,
      tagCountDeltas({ ...holder, counted: !counted }, { ...holder, counted }),
      at,
      'OT',
    );
    return { items, pending, condition };
  }

  async archive(instanceId: string, id: string) {
    return untilSettled(`organization ${id}`, async () => {
      const organization = await this.read(instanceId, id);
      if (!organization || organization.archived) return false;
      const at = this.now().toISOString();
      const counts = this.tagCounts(instanceId, organization, false, at);
      const applied = await this.transact([
        {
          Update: {
            TableName: this.tables.organizations,
            Key: organizationKey(instanceId, id),
            UpdateExpression: 'SET archived_at = :at, lpk = :lpk REMOVE npk ADD version :one',
            ConditionExpression:
              'attribute_exists(pk) AND attribute_not_exists(archived_at)' +
              counts.condition.expression,
            ExpressionAttributeValues: {
              ':at': at,
              ':lpk': `${instanceId}#X#${shardOf(id)}`,
              ':one': 1,
              ...counts.condition.values,
            },
          },
        },
        this.counter(instanceId, -1, 1),
        ...counts.items,
      ]);
      // It changed since it was read (archived, or tagged): read again.
      if (!applied) return 'again';
      if (counts.pending.length > 0) await this.tags.applyOutbox(instanceId, counts.pending);
      return true;
    });
  }

  async restore(instanceId: string, id: string) {
    return untilSettled(`organization ${id}`, async () => {
      const organization = await this.read(instanceId, id);
      if (!organization?.archived) return false;
      const shard = shardOf(id);
      const name = `${nameToken(organization.fields[ORGANIZATION_NAME])}#${id}`;
      const counts = this.tagCounts(instanceId, organization, true, this.now().toISOString());
      const applied = await this.transact([
        {
          Update: {
            TableName: this.tables.organizations,
            Key: organizationKey(instanceId, id),
            UpdateExpression:
              'SET lpk = :lpk, npk = :npk, nsk = :nsk REMOVE archived_at ADD version :one',
            // Archived organizations are not merged into: the name read is still the name.
            ConditionExpression: 'attribute_exists(archived_at)' + counts.condition.expression,
            ExpressionAttributeValues: {
              ':lpk': `${instanceId}#L#${shard}`,
              ':npk': `${instanceId}#N#${shard}`,
              ':nsk': name,
              ':one': 1,
              ...counts.condition.values,
            },
          },
        },
        this.counter(instanceId, 1, -1),
        ...counts.items,
      ]);
      if (!applied) return 'again';
      if (counts.pending.length > 0) await this.tags.applyOutbox(instanceId, counts.pending);
      return true;
    });
  }

  async erase(instanceId: string, id: string) {
    const organization = await this.read(instanceId, id);
    if (!organization?.archived) return false;
    const released = [...claimsOf(organization.fields, ORGANIZATION_KEY_FIELDS)];
    const erased = await untilSettled(`organization ${id}`, async () => {
      const items: TransactItem[] = [
        {
          Delete: {
            TableName: this.tables.organizations,
            Key: organizationKey(instanceId, id),
            // Only without people: their links would point nowhere.
            ConditionExpression:
              'attribute_exists(archived_at) AND (attribute_not_exists(members) OR members <= :none)',
            ExpressionAttributeValues: { ':none': 0 },
          },
        },
        ...claimWrites(this.tables.organizations, instanceId, id, [], released).released,
        {
          Update: {
            TableName: this.tables.organizations,
            Key: { pk: counterPk(instanceId), sk: String(randomInt(ORGANIZATION_SHARDS)) },
            UpdateExpression: 'ADD archived :minus',
            ExpressionAttributeValues: { ':minus': -1 },
          },
        },
        // Its activities are deleted right after: this says so until they are.
        ...(this.tables.activities
          ? [{ Put: { TableName: this.tables.requests, Item: forgetMarker(instanceId, id) } }]
          : []),
      ];
      try {
        await this.db.send(new TransactWriteCommand({ TransactItems: items }));
        return true;
      } catch (error) {
        const codes = cancellationCodes(error);
        if (!codes?.includes('ConditionalCheckFailed')) throw error;
        if (codes[0] === 'ConditionalCheckFailed') return false;
        const taken = new Set(released.filter((_, i) => codes[1 + i] === 'ConditionalCheckFailed'));
        for (const claim of taken) released.splice(released.indexOf(claim), 1);
        return 'again';
      }
    });
    if (erased) await this.forgetActivities(instanceId);
    return erased;
  }

  /**
   * Deletes the activities of the instance's deleted accounts whose markers are left (this
   * one's, and any an earlier delete left part-way), each marker last, while time allows.
   * A failure is logged, not thrown: the account is deleted, and the next delete goes on.
   */
  private async forgetActivities(instanceId: string): Promise<void> {
    const { activities, requests, organizations } = this.tables;
    if (!activities) return;
    const store = new DynamoAccountActivityStore(this.db, { activities, organizations });
    try {
      const markers = await queryPartition(this.db, requests, forgetMarker(instanceId, '').pk);
      for (const marker of markers) {
        if (currentDeadline() - Date.now() < FORGET_MARGIN_MS) return;
        await store.forget(instanceId, String(marker.sk));
        await this.db.send(
          new DeleteCommand({ TableName: requests, Key: { pk: marker.pk, sk: marker.sk } }),
        );
      }
    } catch (error) {
      logger.warn('Activities of a deleted account left; the next delete goes on', {
        instanceId,
        error: error as Error,
      });
    }
  }

  /** True when applied; false when its first item's condition failed (nothing changed). */
  private async transact(items: TransactItem[]): Promise<boolean> {
    try {
      await this.db.send(new TransactWriteCommand({ TransactItems: items }));
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  async totals(instanceId: string) {
    const counters = await sumCounters(this.db, this.tables.organizations, counterPk(instanceId));
    return { active: counters.organizations ?? 0, archived: counters.archived ?? 0 };
  }

  page(instanceId: string, state: RecordState, position: JobPosition, count: number) {
    return listingPage(
      this.db,
      this.tables.organizations,
      (shard) => `${instanceId}#${state === 'active' ? 'L' : 'X'}#${shard}`,
      ORGANIZATION_SHARDS,
      position,
      count,
    );
  }

  audit(instanceId: string, entry: AuditEntry) {
    return auditPut(this.db, this.tables.requests, instanceId, entry);
  }
}
