import { randomInt } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { ClaimKey, RecordMarker } from '../domain/merge/merge-engine.js';
import {
  ORGANIZATION_NAME,
  type Organization,
  type OrganizationCreatePlan,
  type OrganizationStore,
  type OrganizationUpdatePlan,
} from '../domain/organizations/organization-merge.js';
import { normalizeSearch } from '../domain/people/person-index.js';
import { tagCountDeltas, type TagHolder } from '../domain/people/tag-counts.js';
import { directTagCountWrites, DynamoTagStore } from './tag-store.js';
import { TransactionBatcher } from './transaction-batcher.js';
import type {
  OrganizationIndex,
  OrganizationListing,
} from '../domain/organizations/organization-get.js';
import { countRange, shardedPage, type ShardQuery } from './sharded-index.js';
import type { FieldValue } from '../domain/fields/field-values.js';
import { batchGet, ExpressionBuilder, sumCounters, type Item } from './dynamo-helpers.js';
import {
  claimWrites,
  findClaimOwners,
  fieldLevelExpressions,
  fieldUpdate,
  markerPuts,
  writeMerged,
  wholeStateExpressions,
  type TransactItem,
} from './record-writes.js';

/**
 * The organizations table (see docs/data-model.md):
 * - organization `<inst>#O#<id>` / `O`: fields, `members` (people linked), timestamps, and
 *   the index keys `lpk`/`lsk` (creation) and `npk`/`nsk` (name);
 * - key claim `<inst>#K#<field>#<value>` / `K`;
 * - counter shard `<inst>#C` / `<n>`: `organizations`.
 */
export const ORGANIZATION_SHARDS = 16;

export const organizationKey = (instanceId: string, id: string) => ({
  pk: `${instanceId}#O#${id}`,
  sk: 'O',
});
const counterPk = (instanceId: string) => `${instanceId}#C`;
const shardOf = (id: string) => parseInt(id.slice(-4), 16) % ORGANIZATION_SHARDS;

export function nameToken(name: FieldValue | undefined): string {
  return typeof name === 'string' && name.trim() !== '' ? `1${normalizeSearch(name)}` : '2';
}

const OrganizationItem = z.object({
  id: z.string(),
  fields: z.record(z.string(), z.unknown()),
  tags: z.record(z.string(), z.unknown()).optional(),
  members: z.number().optional(),
  created_at: z.string(),
  updated_at: z.string(),
  version: z.number().optional(),
  archived_at: z.string().optional(),
});

export function organizationFromItem(item: Item): Organization & { members: number } {
  const parsed = OrganizationItem.parse(item);
  return {
    id: parsed.id,
    // Field values are only ever written by this service, after validation.
    fields: parsed.fields as Organization['fields'],
    tags: Object.keys(parsed.tags ?? {}),
    members: parsed.members ?? 0,
    created_at: parsed.created_at,
    updated_at: parsed.updated_at,
    ...(parsed.version !== undefined ? { version: parsed.version } : {}),
    ...(parsed.archived_at !== undefined ? { archived_at: parsed.archived_at } : {}),
  };
}

/** What an organization contributes to its tags' counts (archived ones count nowhere). */
export const organizationHolder = (
  organization: Pick<Organization, 'tags' | 'archived_at'>,
): TagHolder => ({
  tags: organization.tags,
  counted: organization.archived_at === undefined,
  email: false,
  sms: false,
});

export class DynamoOrganizationStore implements OrganizationStore, OrganizationListing {
  /** The organizations' tags: their IDs, listing and counts (the `OT` items). */
  readonly tags: DynamoTagStore;

  constructor(
    protected readonly db: DynamoDBDocumentClient,
    protected readonly table: string,
    /** Where queued requests record their records' outcomes (the ingest worker's). */
    protected readonly requestsTable?: string,
  ) {
    this.tags = new DynamoTagStore(db, table, new TransactionBatcher(db), 'OT');
  }

  /** The count changes of a write, as items of its transaction (or outbox items). */
  private tagCounts(
    instanceId: string,
    before: TagHolder | undefined,
    after: TagHolder,
    at: string,
  ) {
    return directTagCountWrites(this.table, instanceId, tagCountDeltas(before, after), at, 'OT');
  }

  findClaimOwners(instanceId: string, keys: ClaimKey[], consistent = true) {
    return findClaimOwners(this.db, this.table, instanceId, keys, consistent);
  }

  async getOrganizations(instanceId: string, ids: string[], consistent = true) {
    const items = await batchGet(
      this.db,
      this.table,
      ids.map((id) => organizationKey(instanceId, id)),
      consistent,
    );
    return new Map(items.map((item) => [String(item.id), organizationFromItem(item)]));
  }

  async createOrganization(
    instanceId: string,
    plan: OrganizationCreatePlan,
    marker?: RecordMarker,
  ) {
    const { organization } = plan;
    const claims = [...plan.claims];
    const shard = shardOf(organization.id);
    if (organization.tags.length > 0) await this.tags.ensureTags(instanceId, organization.tags);
    const counts = this.tagCounts(
      instanceId,
      undefined,
      organizationHolder(organization),
      organization.created_at,
    );
    const transactItems: TransactItem[] = [
      {
        Put: {
          TableName: this.table,
          Item: {
            ...organizationKey(instanceId, organization.id),
            ...organization,
            tags: Object.fromEntries(organization.tags.map((name) => [name, true])),
            members: 0,
            version: 1,
            lpk: `${instanceId}#L#${shard}`,
            lsk: organization.id,
            npk: `${instanceId}#N#${shard}`,
            nsk: `${nameToken(organization.fields[ORGANIZATION_NAME])}#${organization.id}`,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      ...claimWrites(this.table, instanceId, organization.id, claims, []).added,
      {
        Update: {
          TableName: this.table,
          Key: { pk: counterPk(instanceId), sk: String(randomInt(ORGANIZATION_SHARDS)) },
          UpdateExpression: 'ADD organizations :one',
          ExpressionAttributeValues: { ':one': 1 },
        },
      },
      ...counts.items,
      ...markerPuts(this.requestsTable, instanceId, marker),
    ];
    await writeMerged(
      this.db,
      transactItems,
      { released: [], added: claims },
      marker !== undefined,
    );
    if (counts.pending.length > 0) await this.tags.applyOutbox(instanceId, counts.pending);
  }

  async updateOrganization(
    instanceId: string,
    plan: OrganizationUpdatePlan,
    marker?: RecordMarker,
  ) {
    const id = plan.before.id;
    const added = [...plan.claimsAdded];
    const released = [...plan.claimsReleased];
    const claims = claimWrites(this.table, instanceId, id, added, released);
    if (plan.addTags.length > 0) await this.tags.ensureTags(instanceId, plan.addTags);
    const counts = this.tagCounts(
      instanceId,
      organizationHolder(plan.before),
      organizationHolder(plan.after),
      plan.after.updated_at,
    );
    // An organization holding no tag may have no tag map to add to: its whole state then.
    const update =
      plan.addTags.length > 0 && plan.before.tags.length === 0
        ? this.wholeStateUpdate(plan)
        : (this.fieldLevelUpdate(plan) ?? this.wholeStateUpdate(plan));
    await writeMerged(
      this.db,
      [
        { Update: { TableName: this.table, Key: organizationKey(instanceId, id), ...update } },
        ...claims.released,
        ...claims.added,
        ...counts.items,
        ...markerPuts(this.requestsTable, instanceId, marker),
      ],
      { released, added },
      marker !== undefined,
    );
    if (counts.pending.length > 0) await this.tags.applyOutbox(instanceId, counts.pending);
  }

  /** Field-level `SET`/`REMOVE`; `undefined` past DynamoDB's expression limit. */
  private fieldLevelUpdate(plan: OrganizationUpdatePlan) {
    const id = plan.before.id;
    const x = new ExpressionBuilder();
    const { set, remove, conditions } = fieldUpdate(x, {
      ...plan,
      updatedAt: plan.after.updated_at,
    });
    // Tags: each added one still absent, each unset one as read (its count depends on it).
    const tag = (name: string) => `${x.name('tags')}.${x.name(name)}`;
    for (const name of plan.addTags) {
      set.push(`${tag(name)} = ${x.value(true)}`);
      conditions.push(`attribute_not_exists(${tag(name)})`);
    }
    for (const name of plan.unsetTags) {
      if (plan.before.tags.includes(name)) {
        remove.push(tag(name));
        conditions.push(`attribute_exists(${tag(name)})`);
      } else {
        conditions.push(`attribute_not_exists(${tag(name)})`);
      }
    }
    if (plan.tagRoom !== undefined) {
      conditions.push(`size(${x.name('tags')}) <= ${x.value(plan.tagRoom)}`);
    }
    // Never into an archived organization (archived since it was read: it is read again).
    conditions.push(`attribute_not_exists(${x.name('archived_at')})`);
    const before = nameToken(plan.before.fields[ORGANIZATION_NAME]);
    const after = nameToken(plan.after.fields[ORGANIZATION_NAME]);
    if (before !== after) set.push(`${x.name('nsk')} = ${x.value(`${after}#${id}`)}`);
    return fieldLevelExpressions(x, set, remove, conditions);
  }

  /** The whole new state, conditioned on the version it was planned from. */
  private wholeStateUpdate(plan: OrganizationUpdatePlan) {
    const id = plan.before.id;
    const x = new ExpressionBuilder();
    const set = [
      `${x.name('fields')} = ${x.value(plan.after.fields)}`,
      `${x.name('tags')} = ${x.value(Object.fromEntries(plan.after.tags.map((name) => [name, true])))}`,
      `${x.name('updated_at')} = ${x.value(plan.after.updated_at)}`,
      `${x.name('nsk')} = ${x.value(`${nameToken(plan.after.fields[ORGANIZATION_NAME])}#${id}`)}`,
    ];
    return wholeStateExpressions(x, set, plan.before.version);
  }

  private indexQuery(
    instanceId: string,
    index: OrganizationIndex,
  ): Omit<ShardQuery, 'order' | 'count'> {
    const [partitionKey, sortKey, tag] =
      index === 'list' ? ['lpk', 'lsk', 'L'] : ['npk', 'nsk', 'N'];
    return {
      table: this.table,
      index,
      partitionKey,
      sortKey,
      partition: (shard) => `${instanceId}#${tag}#${shard}`,
    };
  }

  indexPage(
    instanceId: string,
    index: OrganizationIndex,
    order: 'asc' | 'desc',
    position: { after?: string; between?: [string, string] },
    count: number,
  ) {
    return shardedPage(
      this.db,
      { ...this.indexQuery(instanceId, index), order, ...position, count },
      ORGANIZATION_SHARDS,
    );
  }

  countRange(instanceId: string, between: [string, string], cap: number) {
    return countRange(
      this.db,
      { ...this.indexQuery(instanceId, 'name'), between },
      ORGANIZATION_SHARDS,
      cap,
    );
  }

  async total(instanceId: string) {
    return (await sumCounters(this.db, this.table, counterPk(instanceId))).organizations ?? 0;
  }
}
