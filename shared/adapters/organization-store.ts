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
    members: parsed.members ?? 0,
    created_at: parsed.created_at,
    updated_at: parsed.updated_at,
    ...(parsed.version !== undefined ? { version: parsed.version } : {}),
    ...(parsed.archived_at !== undefined ? { archived_at: parsed.archived_at } : {}),
  };
}

export class DynamoOrganizationStore implements OrganizationStore, OrganizationListing {
  constructor(
    protected readonly db: DynamoDBDocumentClient,
    protected readonly table: string,
    /** Where queued requests record their records' outcomes (the ingest worker's). */
    protected readonly requestsTable?: string,
  ) {}

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
    const transactItems: TransactItem[] = [
      {
        Put: {
          TableName: this.table,
          Item: {
            ...organizationKey(instanceId, organization.id),
            ...organization,
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
      ...markerPuts(this.requestsTable, instanceId, marker),
    ];
    await writeMerged(
      this.db,
      transactItems,
      { released: [], added: claims },
      marker !== undefined,
    );
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
    await writeMerged(
      this.db,
      [
        {
          Update: {
            TableName: this.table,
            Key: organizationKey(instanceId, id),
            ...(this.fieldLevelUpdate(plan) ?? this.wholeStateUpdate(plan)),
          },
        },
        ...claims.released,
        ...claims.added,
        ...markerPuts(this.requestsTable, instanceId, marker),
      ],
      { released, added },
      marker !== undefined,
    );
  }

  /** Field-level `SET`/`REMOVE`; `undefined` past DynamoDB's expression limit. */
  private fieldLevelUpdate(plan: OrganizationUpdatePlan) {
    const id = plan.before.id;
    const x = new ExpressionBuilder();
    const { set, remove, conditions } = fieldUpdate(x, {
      ...plan,
      updatedAt: plan.after.updated_at,
    });
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
