import { randomInt } from 'node:crypto';
import {
  GetCommand,
  PutCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import {
  StoredActivityDefinition,
  StoredInstance,
  StoredTemplate,
  type AssetConfig,
  type CampaignConfig,
  type KeyFieldState,
} from '../domain/instance-config.js';
import {
  fieldNameOf,
  type CustomFieldConfig,
  type CustomFieldKind,
} from '../domain/fields/custom-fields.js';
import type {
  AddFieldOutcome,
  CustomFieldLimits,
  CustomFieldWriter,
  DeleteFieldOutcome,
  UpdateFieldOutcome,
} from '../domain/fields/custom-field-api.js';
import type { DefinitionStore } from '../domain/activities/definition-create.js';
import type { DataSourceChange } from '../domain/console/console-data-sources.js';
import { ConfigurationChangedError } from '../domain/configuration.js';
import { REGIONS, type Region } from '../domain/regions.js';
import type { ApiKeyRecord, InstanceSchema, TenantDirectory } from '../domain/tenancy.js';
import { ServiceUnavailableError, ValidationError } from '../domain/errors.js';
import { backoffMs, canWait, currentDeadline, sleep } from '../lib/time-budget.js';
import { TtlCache } from '../lib/ttl-cache.js';
import type { VersionWatch } from '../lib/version-watch.js';
import {
  batchWrite,
  cancellationCodes,
  conditionally,
  ExpressionBuilder,
  isConditionFailure,
  queryPartition,
  type WriteRequest,
} from './dynamo-helpers.js';
import { LEGACY_KID, StoredKeyring, storedKey, type KeyWrapper } from '../domain/signing-keys.js';

/**
 * The config table. Items:
 * - `INST#<id>` / `SCHEMA`: the instance (settings, data sources, custom fields, activities)
 * - `INST#<id>` / `CAMPAIGN#<id>`, `ASSET#<id>`: email templates
 * - `INST#<id>` / `KEYREF#<hash>`: the keys of the instance, so that they can be revoked
 * - `INSTANCES` / `INST#<id>`: the region's list of instances (ID, name, plan, region)
 * - `KEY#<hash>` / `KEY`: what a key hash resolves to; in regions other than the instance's
 *   own, a marker that only names the home region (so the API can redirect the caller).
 */
const ApiKeyItem = z.object({
  key_hash: z.string(),
  instance_id: z.string(),
  data_source: z.string(),
  home_region: z.enum(REGIONS),
});

const KeyRefItem = z.object({
  sk: z.string(),
  key_hash: z.string(),
  data_source: z.string(),
  origin: z.enum(['file', 'minted']),
});

export type KeyOrigin = 'file' | 'minted';

/** A key of an instance as `admin key list` shows it: its hash, never the key. */
export interface KeyListing {
  key_hash: string;
  data_source: string;
  origin: KeyOrigin;
  created_at: string | undefined;
  revoked_at: string | undefined;
}
export type TemplateKind = 'campaign' | 'asset';

export interface FileKey {
  key_hash: string;
  data_source: string;
}

const instancePk = (id: string) => `INST#${id}`;
/**
 * The region's list of instances: one item per instance under one partition, put in the same
 * transaction as the instance itself by `apply`, so a Query lists them (a page of up to 1 MB
 * at a time) without a scan. It carries what a list shows: the ID, name, plan and region,
 * which only `apply` changes.
 */
const INSTANCE_LIST_PK = 'INSTANCES';
const instanceListKey = (id: string) => ({ pk: INSTANCE_LIST_PK, sk: `INST#${id}` });

/** An instance as the region's list of instances holds it. */
export const InstanceListing = z.object({
  id: z.string(),
  name: z.string(),
  plan: z.string(),
  region: z.enum(REGIONS),
});
export type InstanceListing = z.infer<typeof InstanceListing>;

const instanceListItem = (instance: InstanceListing) => ({
  ...instanceListKey(instance.id),
  id: instance.id,
  name: instance.name,
  plan: instance.plan,
  region: instance.region,
});
/**
 * The version of an instance's configuration, copied to `VERSION_SHARDS` items so that the
 * read every request makes of it (see `CachedTenantDirectory`) spreads over partitions.
 */
export const VERSION_SHARDS = 16;
const versionKey = (id: string, shard: number) => ({ pk: `INST#${id}#V${shard}`, sk: 'VERSION' });
const VersionItem = z.object({ version: z.number() });

/**
 * Indexes of the schema item kept beside `schema` (top-level attributes) so that a write can
 * be conditioned on them: custom field names (`cm#<name>` / `oc#<name>` → field ID, a
 * name is unique per kind), the person fields whose changes are tracked, and the IDs of the
 * activity definitions.
 */
const FIELD_NAMES = 'field_names';
const TRACKED = 'tracked_fields';
const ACTIVITY_IDS = 'activity_ids';
const listOf = (kind: CustomFieldKind) =>
  kind === 'person' ? 'person_fields' : 'organization_fields';
const nameKey = (kind: CustomFieldKind, fieldId: string) =>
  `${kind === 'person' ? 'cm' : 'oc'}#${fieldNameOf(fieldId)}`;

/** The indexes of a schema, computed from it (what `apply` writes and a missing one gets). */
export function schemaIndexes(schema: StoredInstance) {
  const names: Record<string, string> = {};
  for (const field of schema.person_fields) names[nameKey('person', field.id)] = field.id;
  for (const field of schema.organization_fields) {
    names[nameKey('organization', field.id)] = field.id;
  }
  return {
    [FIELD_NAMES]: names,
    [TRACKED]: Object.fromEntries(
      schema.person_fields.filter((f) => f.track_changes).map((f) => [f.id, true]),
    ),
    [ACTIVITY_IDS]: Object.fromEntries(schema.activities.map((a) => [a.id, true])),
  };
}

/** A schema write refused by DynamoDB for the item's size (400 KB). */
function tooLarge(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.name === 'ValidationException' &&
    /item size|size has exceeded/i.test(error.message)
  );
}
const keyPk = (hash: string) => `KEY#${hash}`;
/**
 * The deployment's signing secret of before the keyring, in plain form: read once to wrap it
 * into the keyring as its legacy key (`k0`), then deleted.
 */
const SIGNING_SECRET_KEY = { pk: 'DEPLOYMENT', sk: 'SIGNING_SECRET' };
const SigningSecretItem = z.object({ secret: z.string().min(32) });
/** The deployment's signing keyring (signing-keys.ts): every key wrapped. */
const SIGNING_KEYS_KEY = { pk: 'DEPLOYMENT', sk: 'SIGNING_KEYS' };
const SigningKeysItem = z.object({ keyring: StoredKeyring, version: z.number().int() });
/** The keys version: bumped by every change of a key, so that warm functions drop their cache. */
const KEYS_VERSION_KEY = { pk: 'DEPLOYMENT', sk: 'KEYS_VERSION' };

export class DynamoConfigStore implements TenantDirectory, CustomFieldWriter, DefinitionStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    /** Wraps new signing keys (`admin apply` and the local stack create the keyring). */
    private readonly keyWrapper?: KeyWrapper,
  ) {}

  async findApiKey(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const { Item } = await this.db.send(
      // Strongly consistent: a key minted a moment ago works at once (a miss is cached).
      new GetCommand({
        TableName: this.table,
        Key: { pk: keyPk(keyHash), sk: 'KEY' },
        ConsistentRead: true,
      }),
    );
    return Item ? ApiKeyItem.parse(Item) : undefined;
  }

  async getInstance(instanceId: string): Promise<InstanceSchema | undefined> {
    const Item = await this.schemaItem(instanceId);
    return Item ? instanceOf(Item) : undefined;
  }

  /** The current configuration version of an instance (0 before its first versioned change). */
  async configVersion(instanceId: string): Promise<number> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: versionKey(instanceId, randomInt(VERSION_SHARDS)),
        ConsistentRead: true,
      }),
    );
    return Item ? VersionItem.parse(Item).version : 0;
  }

  /**
   * Copies a new configuration version to every version item (never backwards: a slower
   * writer of an older version leaves a newer one alone).
   */
  private async publishVersion(instanceId: string, version: number): Promise<void> {
    await Promise.all(
      Array.from({ length: VERSION_SHARDS }, (_, shard) =>
        conditionally(
          this.db,
          new UpdateCommand({
            TableName: this.table,
            Key: versionKey(instanceId, shard),
            UpdateExpression: 'SET version = :v',
            ConditionExpression: 'attribute_not_exists(version) OR version < :v',
            ExpressionAttributeValues: { ':v': version },
          }),
        ),
      ),
    );
  }

  private async schemaItem(instanceId: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: instancePk(instanceId), sk: 'SCHEMA' },
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  /**
   * A change of the schema item: read it (strongly consistent), let `plan` decide the write
   * (an update conditioned on what it read, or an answer without a write), and write it.
   * A condition that fails means the configuration changed meanwhile: read again. Every
   * write bumps `config_version` and publishes it, so that every function's cache learns of
   * the change before the caller hears of it.
   */
  private async changeSchema<T>(
    instanceId: string,
    plan: (
      item: Record<string, unknown>,
      schema: StoredInstance,
      x: ExpressionBuilder,
    ) => { answer: T } | { set: string[]; remove?: string[]; conditions: string[]; answer: T },
  ): Promise<T> {
    const deadline = currentDeadline();
    for (let attempt = 0; ; attempt += 1) {
      const item = await this.schemaItem(instanceId);
      if (!item) throw new Error(`instance ${instanceId} has no schema`);
      if (item[FIELD_NAMES] === undefined) {
        await this.indexSchema(item);
        continue;
      }
      const x = new ExpressionBuilder();
      const decided = plan(item, instanceOf(item), x);
      if (!('set' in decided)) return decided.answer;
      const set = [
        ...decided.set,
        `${x.name('updated_at')} = ${x.value(new Date().toISOString())}`,
      ];
      const remove = decided.remove ?? [];
      try {
        const { Attributes } = await this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: instancePk(instanceId), sk: 'SCHEMA' },
            UpdateExpression:
              `SET ${set.join(', ')} ADD ${x.name('config_version')} ${x.value(1)}` +
              (remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''),
            // Conditioned on the whole configuration as read (its version), besides the
            // plan's own conditions: a change decided on a read another change overtook (two
            // option lists merged, a flag turned back) is decided again on a fresh read.
            ConditionExpression: [
              typeof item.config_version === 'number'
                ? `${x.name('config_version')} = ${x.value(item.config_version)}`
                : `attribute_not_exists(${x.name('config_version')})`,
              ...decided.conditions,
            ].join(' AND '),
            ExpressionAttributeNames: x.names,
            ExpressionAttributeValues: x.values,
            ReturnValues: 'UPDATED_NEW',
          }),
        );
        await this.publishVersion(instanceId, Number(Attributes?.config_version ?? 0));
        return decided.answer;
      } catch (error) {
        if (tooLarge(error)) {
          throw new ValidationError(
            'The instance configuration would be larger than the store allows (400 KB): it holds too many fields, options or activity definitions',
            [{ field: 'body', error: 'the instance configuration would be too large' }],
          );
        }
        if (!isConditionFailure(error)) throw error;
      }
      const wait = backoffMs(attempt);
      if (!canWait(wait, deadline)) {
        throw new ServiceUnavailableError(
          'The instance configuration kept changing concurrently; try again shortly',
        );
      }
      await sleep(wait);
    }
  }

  /** Gives a schema item written before its indexes existed its indexes (once). */
  private async indexSchema(item: Record<string, unknown>): Promise<void> {
    const x = new ExpressionBuilder();
    const indexes = schemaIndexes(instanceOf(item));
    const seen = item.updated_at;
    await conditionally(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: item.pk, sk: 'SCHEMA' },
        UpdateExpression: `SET ${Object.entries(indexes)
          .map(([name, value]) => `${x.name(name)} = ${x.value(value)}`)
          .join(', ')}`,
        ConditionExpression:
          `attribute_not_exists(${x.name(FIELD_NAMES)}) AND ` +
          (seen === undefined
            ? `attribute_not_exists(${x.name('updated_at')})`
            : `${x.name('updated_at')} = ${x.value(seen)}`),
        ExpressionAttributeNames: x.names,
        ExpressionAttributeValues: x.values,
      }),
    );
  }

  async addCustomField(
    instanceId: string,
    kind: CustomFieldKind,
    field: CustomFieldConfig,
    limits: CustomFieldLimits,
  ): Promise<AddFieldOutcome> {
    return this.changeSchema<AddFieldOutcome>(instanceId, (item, schema, x) => {
      const deletedAt = schema.deleted_fields?.[field.id];
      if (deletedAt !== undefined)
        return { answer: { kind: 'deleted', id: field.id, at: deletedAt } };
      const names = (item[FIELD_NAMES] ?? {}) as Record<string, string>;
      const list = schema[listOf(kind)];
      const taken = names[nameKey(kind, field.id)] ?? list.find((f) => f.id === field.id)?.id;
      // The name of a deleted field (of any type) stays reserved with its ID.
      const deletedWith = taken === undefined ? undefined : schema.deleted_fields?.[taken];
      if (taken !== undefined && deletedWith !== undefined) {
        return { answer: { kind: 'deleted', id: taken, at: deletedWith } };
      }
      if (taken !== undefined) return { answer: { kind: 'name-taken', id: taken } };
      if (list.length >= limits.fields) return { answer: { kind: 'full' } };
      const trackedCount = Object.keys(item[TRACKED] ?? {}).length;
      if (field.track_changes && trackedCount >= limits.tracked) {
        return { answer: { kind: 'tracked-full' } };
      }
      const path = `${x.name('schema')}.${x.name(listOf(kind))}`;
      const nameEntry = `${x.name(FIELD_NAMES)}.${x.name(nameKey(kind, field.id))}`;
      // Names are registered as they are written: only those the expressions use.
      const tracked = field.track_changes
        ? [`${x.name(TRACKED)}.${x.name(field.id)} = ${x.value(true)}`]
        : [];
      return {
        set: [
          `${path} = list_append(${path}, ${x.value([field])})`,
          `${nameEntry} = ${x.value(field.id)}`,
          ...tracked,
        ],
        conditions: [
          `attribute_not_exists(${nameEntry})`,
          `size(${path}) < ${x.value(limits.fields)}`,
          ...(field.track_changes ? [`size(${x.name(TRACKED)}) < ${x.value(limits.tracked)}`] : []),
        ],
        answer: { kind: 'added' },
      };
    });
  }

  async updateCustomField(
    instanceId: string,
    kind: CustomFieldKind,
    fieldId: string,
    change: (field: CustomFieldConfig) => CustomFieldConfig,
    limits: CustomFieldLimits,
  ): Promise<UpdateFieldOutcome> {
    return this.changeSchema<UpdateFieldOutcome>(instanceId, (item, schema, x) => {
      const list = schema[listOf(kind)];
      const index = list.findIndex((f) => f.id === fieldId);
      const field = list[index];
      if (!field) return { answer: { kind: 'unknown' } };
      const next = change(field);
      const tracked = (item[TRACKED] ?? {}) as Record<string, unknown>;
      const tracking = next.track_changes === true && tracked[fieldId] === undefined;
      if (tracking && Object.keys(tracked).length >= limits.tracked) {
        return { answer: { kind: 'tracked-full' } };
      }
      const entry = `${x.name('schema')}.${x.name(listOf(kind))}[${index}]`;
      const trackedEntry = `${x.name(TRACKED)}.${x.name(fieldId)}`;
      return {
        set: [
          `${entry} = ${x.value(next)}`,
          ...(next.track_changes ? [`${trackedEntry} = ${x.value(true)}`] : []),
        ],
        remove: next.track_changes ? [] : [trackedEntry],
        conditions: [
          `${entry}.${x.name('id')} = ${x.value(fieldId)}`,
          ...(tracking ? [`size(${x.name(TRACKED)}) < ${x.value(limits.tracked)}`] : []),
        ],
        answer: { kind: 'updated', field: next },
      };
    });
  }

  /** The custom fields deleted through the API (their values stay on records, unread). */
  async deletedFields(instanceId: string): Promise<ReadonlySet<string>> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: instancePk(instanceId), sk: 'SCHEMA' },
        ProjectionExpression: '#schema.#deleted',
        ExpressionAttributeNames: { '#schema': 'schema', '#deleted': 'deleted_fields' },
      }),
    );
    const deleted = (Item?.schema as { deleted_fields?: Record<string, unknown> } | undefined)
      ?.deleted_fields;
    return new Set(Object.keys(deleted ?? {}));
  }

  async deleteCustomField(
    instanceId: string,
    kind: CustomFieldKind,
    fieldId: string,
  ): Promise<DeleteFieldOutcome> {
    return this.changeSchema<DeleteFieldOutcome>(instanceId, (item, schema, x) => {
      const list = schema[listOf(kind)];
      const index = list.findIndex((f) => f.id === fieldId);
      const field = list[index];
      const deletedAt = schema.deleted_fields?.[fieldId];
      if (!field) return { answer: { kind: 'unknown', ...(deletedAt ? { deletedAt } : {}) } };
      const mergingBy = schema.data_sources
        .filter((source) => source.merge_by.includes(fieldId))
        .map((source) => source.name);
      if (field.unique || mergingBy.length > 0) {
        return { answer: { kind: 'merge-key', dataSources: mergingBy } };
      }
      const entry = `${x.name('schema')}.${x.name(listOf(kind))}[${index}]`;
      const deleted = `${x.name('schema')}.${x.name('deleted_fields')}`;
      const at = new Date().toISOString();
      const tracked = item[TRACKED] as Record<string, unknown> | undefined;
      return {
        set: [
          schema.deleted_fields
            ? `${deleted}.${x.name(fieldId)} = ${x.value(at)}`
            : `${deleted} = ${x.value({ [fieldId]: at })}`,
        ],
        // The name stays registered (`field_names`): a create of it finds it deleted.
        remove: [
          entry,
          ...(tracked?.[fieldId] !== undefined ? [`${x.name(TRACKED)}.${x.name(fieldId)}`] : []),
        ],
        conditions: [`${entry}.${x.name('id')} = ${x.value(fieldId)}`],
        answer: { kind: 'deleted' },
      };
    });
  }

  /** The IDs of every instance of this region, from the list of instances (a Query). */
  async listInstanceIds(): Promise<string[]> {
    return (await this.listInstances()).map((instance) => instance.id);
  }

  /**
   * Every instance of this region, by ID, from the list `apply` keeps: a Query of one
   * partition, page after page, whatever the table holds besides.
   */
  async listInstances(): Promise<InstanceListing[]> {
    const items = await queryPartition(this.db, this.table, INSTANCE_LIST_PK, [
      'id',
      'name',
      'plan',
      'region',
    ]);
    return items
      .map((item) => InstanceListing.parse(item))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Puts in the list of instances every instance that is not in it: those written before the
   * list existed (`npm run admin -- repair instances`, once after the upgrade; `apply` puts
   * the instances of its file too). The one scan of the config table, run by hand, never by
   * a request. Returns the IDs it added.
   */
  async repairInstanceList(): Promise<string[]> {
    const listed = new Set(await this.listInstanceIds());
    const missing: InstanceListing[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new ScanCommand({
          TableName: this.table,
          FilterExpression: 'sk = :schema',
          ExpressionAttributeValues: { ':schema': 'SCHEMA' },
          ProjectionExpression: '#schema',
          ExpressionAttributeNames: { '#schema': 'schema' },
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const instance = StoredInstance.parse(item.schema);
        if (!listed.has(instance.id)) missing.push(instance);
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    await batchWrite(
      this.db,
      this.table,
      missing.map((instance) => ({ PutRequest: { Item: instanceListItem(instance) } })),
    );
    return missing.map((instance) => instance.id).sort();
  }

  /** The activity definitions of an instance, read afresh (cached tenants may lack new ones). */
  async activityDefinitions(instanceId: string): Promise<StoredActivityDefinition[]> {
    return (await this.getInstance(instanceId))?.activities ?? [];
  }

  /** Moves a unique field of a stored instance to `state` (see `key-fields.ts`). */
  async setKeyFieldState(instanceId: string, field: string, state: KeyFieldState): Promise<void> {
    const { Attributes } = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: instancePk(instanceId), sk: 'SCHEMA' },
        UpdateExpression:
          'SET #schema.#keys.#field = :state, updated_at = :now ADD config_version :one',
        ConditionExpression: 'attribute_exists(#schema.#keys)',
        ExpressionAttributeNames: { '#schema': 'schema', '#keys': 'key_fields', '#field': field },
        ExpressionAttributeValues: { ':state': state, ':now': new Date().toISOString(), ':one': 1 },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    await this.publishVersion(instanceId, Number(Attributes?.config_version ?? 0));
  }

  /** The deployment's signing secret of before the keyring, if it is still there. */
  async getLegacySigningSecret(): Promise<string | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.table, Key: SIGNING_SECRET_KEY, ConsistentRead: true }),
    );
    return Item ? SigningSecretItem.parse(Item).secret : undefined;
  }

  /** The signing keyring and its version (strongly consistent), if it exists. */
  async getSigningKeys(): Promise<{ keyring: StoredKeyring; version: number } | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.table, Key: SIGNING_KEYS_KEY, ConsistentRead: true }),
    );
    return Item ? SigningKeysItem.parse(Item) : undefined;
  }

  /**
   * Writes the keyring if it is still at `version` (undefined: if there is none); false when
   * another change came first. With `dropLegacy`, the plain legacy secret goes in the same
   * transaction.
   */
  async putSigningKeys(
    keyring: StoredKeyring,
    version: number | undefined,
    dropLegacy = false,
  ): Promise<boolean> {
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.table,
                Item: {
                  ...SIGNING_KEYS_KEY,
                  keyring,
                  version: (version ?? 0) + 1,
                  updated_at: new Date().toISOString(),
                },
                ConditionExpression:
                  version === undefined ? 'attribute_not_exists(pk)' : 'version = :version',
                ...(version === undefined
                  ? {}
                  : { ExpressionAttributeValues: { ':version': version } }),
              },
            },
            ...(dropLegacy ? [{ Delete: { TableName: this.table, Key: SIGNING_SECRET_KEY } }] : []),
          ],
        }),
      );
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /**
   * Creates the signing keyring once: the legacy plain secret, if the deployment has one, as
   * its first key (`k0`, so that cursors and links made before keep working; the plain item
   * is deleted), else a new key. Later calls leave it as it is.
   */
  async ensureSigningKeys(now = new Date()): Promise<void> {
    const wrapper = this.keyWrapper;
    if (!wrapper) throw new Error('Creating the signing keyring needs a key wrapper');
    if (await this.getSigningKeys()) return;
    const legacy = await this.getLegacySigningSecret();
    const key = legacy
      ? await storedKey(wrapper, now, now, LEGACY_KID, legacy)
      : await storedKey(wrapper, now, now);
    // A concurrent apply that created it first: theirs stands.
    await this.putSigningKeys({ keys: [key] }, undefined, legacy !== undefined);
    await this.bumpKeysVersion();
  }

  /**
   * The version of keys and signing keys: functions read it every few seconds and drop
   * their cached keys when it moves (a key revoked or minted, a signing key rotated).
   */
  async keysVersion(): Promise<number> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.table, Key: KEYS_VERSION_KEY, ConsistentRead: true }),
    );
    return typeof Item?.version === 'number' ? Item.version : 0;
  }

  async bumpKeysVersion(): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: KEYS_VERSION_KEY,
        UpdateExpression: 'ADD version :one SET updated_at = :now',
        ExpressionAttributeValues: { ':one': 1, ':now': new Date().toISOString() },
      }),
    );
  }

  async getTemplate(
    instanceId: string,
    kind: TemplateKind,
    id: string,
  ): Promise<CampaignConfig | AssetConfig | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: instancePk(instanceId), sk: `${kind.toUpperCase()}#${id}` },
        ConsistentRead: true,
      }),
    );
    return Item ? StoredTemplate.parse(Item.template) : undefined;
  }

  /**
   * Makes the stored instance match the given configuration: writes its schema, templates
   * and file keys, and deletes templates and file keys the configuration no longer has, and
   * every key of a data source it no longer has. Applying the same configuration twice
   * changes nothing.
   */
  async applyInstance(
    schema: InstanceSchema,
    templates: { campaigns: CampaignConfig[]; assets: AssetConfig[] },
    fileKeys: FileKey[],
    basedOn?: number,
  ): Promise<void> {
    const pk = instancePk(schema.id);
    const { config_version: _ignored, ...stored } = schema;
    const version = (basedOn ?? 0) + 1;
    const parsed = StoredInstance.parse(stored);
    try {
      // The instance and its entry in the list of instances, together or not at all.
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.table,
                Item: {
                  pk,
                  sk: 'SCHEMA',
                  schema: stored,
                  ...schemaIndexes(parsed),
                  config_version: version,
                  updated_at: new Date().toISOString(),
                },
                ConditionExpression:
                  basedOn === undefined
                    ? 'attribute_not_exists(config_version)'
                    : 'config_version = :based',
                ...(basedOn === undefined
                  ? {}
                  : { ExpressionAttributeValues: { ':based': basedOn } }),
              },
            },
            { Put: { TableName: this.table, Item: instanceListItem(parsed) } },
          ],
        }),
      );
    } catch (error) {
      // Changed since it was read, or being changed right now: apply reads again and retries.
      const codes = cancellationCodes(error);
      if (codes?.[0] === 'ConditionalCheckFailed' || codes?.includes('TransactionConflict')) {
        throw new ConfigurationChangedError();
      }
      throw error;
    }
    await this.publishVersion(schema.id, version);
    const existing = await this.queryAll(pk);
    const revoked = new Set(
      existing
        .filter((item) => String(item.sk).startsWith('REVOKED#'))
        .map((item) => String(item.key_hash)),
    );
    const comeBack = fileKeys.filter((key) => revoked.has(key.key_hash));
    if (comeBack.length > 0) {
      throw new Error(
        `instance ${schema.id}: the api_key of data source ${comeBack.map((key) => `"${key.data_source}"`).join(', ')} was revoked (npm run admin -- key revoke): put a new key in the file`,
      );
    }
    const dataSources = new Set(schema.data_sources.map((source) => source.name));
    const wantedFileKeys = new Set(fileKeys.map((key) => key.key_hash));
    const desiredSks = new Set<string>(['SCHEMA']);
    const writes: WriteRequest[] = [];
    const put = (Item: Record<string, unknown>) => writes.push({ PutRequest: { Item } });
    const remove = (key: { pk: string; sk: string }) =>
      writes.push({ DeleteRequest: { Key: key } });

    for (const [kind, list] of [
      ['CAMPAIGN', templates.campaigns],
      ['ASSET', templates.assets],
    ] as const) {
      for (const template of list) {
        desiredSks.add(`${kind}#${template.id}`);
        put({ pk, sk: `${kind}#${template.id}`, template });
      }
    }
    for (const key of fileKeys) {
      desiredSks.add(`KEYREF#${key.key_hash}`);
      put({ pk, sk: `KEYREF#${key.key_hash}`, ...key, origin: 'file' });
      put({
        pk: keyPk(key.key_hash),
        sk: 'KEY',
        key_hash: key.key_hash,
        instance_id: schema.id,
        data_source: key.data_source,
        home_region: schema.region,
        origin: 'file',
      });
    }
    for (const item of existing) {
      const sk = String(item.sk);
      if (desiredSks.has(sk) || sk.startsWith('REVOKED#')) continue;
      if (sk.startsWith('KEYREF#')) {
        const ref = KeyRefItem.parse(item);
        const revoked =
          !dataSources.has(ref.data_source) ||
          (ref.origin === 'file' && !wantedFileKeys.has(ref.key_hash));
        if (!revoked) continue;
        remove({ pk: keyPk(ref.key_hash), sk: 'KEY' });
      }
      remove({ pk, sk });
    }
    await batchWrite(this.db, this.table, writes);
    // Keys may have come or gone: warm functions drop what they cached.
    await this.bumpKeysVersion();
  }

  /**
   * Leaves, in this region, a marker for each key of an instance of another region, so that
   * a request with it is told the address to use. A real key of this region is overwritten
   * only when it belongs to the same instance (whose region has changed).
   */
  async putForeignKeyMarkers(here: Region, markers: ApiKeyRecord[]): Promise<void> {
    for (const marker of markers) {
      try {
        await this.db.send(
          new PutCommand({
            TableName: this.table,
            Item: { pk: keyPk(marker.key_hash), sk: 'KEY', ...marker, origin: 'file' },
            ConditionExpression:
              'attribute_not_exists(pk) OR home_region <> :here OR instance_id = :instance',
            ExpressionAttributeValues: { ':here': here, ':instance': marker.instance_id },
          }),
        );
      } catch (error) {
        if (!isConditionFailure(error)) {
          throw error;
        }
      }
    }
  }

  /**
   * Adds an activity definition to an instance, conditioned on no definition having its ID
   * (archived ones included). False if one has.
   */
  /** Adds a data source; false when the instance has one of that name. */
  async addDataSource(
    instanceId: string,
    source: StoredInstance['data_sources'][number],
  ): Promise<boolean> {
    // The write is conditioned on the configuration's version as read: the name check holds.
    return this.changeSchema(instanceId, (_item, schema, x) => {
      if (schema.data_sources.some((existing) => existing.name === source.name)) {
        return { answer: false };
      }
      const path = `${x.name('schema')}.${x.name('data_sources')}`;
      return {
        set: [`${path} = list_append(${path}, ${x.value([source])})`],
        conditions: [],
        answer: true,
      };
    });
  }

  async changeDataSource(
    instanceId: string,
    name: string,
    preferences: Pick<
      StoredInstance['data_sources'][number],
      'merge_by' | 'merge_strategy' | 'find_strategy'
    >,
  ): Promise<DataSourceChange> {
    return this.changeSchema<DataSourceChange>(instanceId, (_item, schema, x) => {
      const index = schema.data_sources.findIndex((source) => source.name === name);
      const current = schema.data_sources[index];
      if (!current) return { answer: { kind: 'missing' } };
      if (current.source !== 'api') return { answer: { kind: 'file' } };
      const next = { ...current, ...preferences };
      const entry = `${x.name('schema')}.${x.name('data_sources')}[${index}]`;
      return {
        set: [`${entry} = ${x.value(next)}`],
        conditions: [`${entry}.${x.name('name')} = ${x.value(name)}`],
        answer: { kind: 'changed', source: next },
      };
    });
  }

  async addActivityDefinition(
    instanceId: string,
    definition: StoredActivityDefinition,
  ): Promise<boolean> {
    return this.changeSchema(instanceId, (item, _schema, x) => {
      const ids = (item[ACTIVITY_IDS] ?? {}) as Record<string, unknown>;
      if (ids[definition.id] !== undefined) return { answer: false };
      const path = `${x.name('schema')}.${x.name('activities')}`;
      const entry = `${x.name(ACTIVITY_IDS)}.${x.name(definition.id)}`;
      return {
        set: [
          `${path} = list_append(${path}, ${x.value([definition])})`,
          `${entry} = ${x.value(true)}`,
        ],
        conditions: [`attribute_not_exists(${entry})`],
        answer: true,
      };
    });
  }

  /**
   * Changes a stored activity definition to what `change` makes of it (read afresh; the
   * write is conditioned on the definition still being where it was read). `undefined` when
   * the instance has no such definition.
   */
  async changeActivityDefinition(
    instanceId: string,
    id: string,
    change: (definition: StoredActivityDefinition) => StoredActivityDefinition,
  ): Promise<StoredActivityDefinition | undefined> {
    return this.changeSchema(instanceId, (_item, schema, x) => {
      const index = schema.activities.findIndex((a) => a.id === id);
      const current = schema.activities[index];
      if (!current) return { answer: undefined };
      const next = StoredActivityDefinition.parse(change(current));
      const entry = `${x.name('schema')}.${x.name('activities')}[${index}]`;
      return {
        set: [`${entry} = ${x.value(next)}`],
        conditions: [`${entry}.${x.name('id')} = ${x.value(id)}`],
        answer: next,
      };
    });
  }

  /** Stores a newly minted key (its hash) for a data source of an instance of this region. */
  async addMintedKey(record: ApiKeyRecord): Promise<void> {
    const created_at = new Date().toISOString();
    await this.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.table,
              Item: {
                pk: keyPk(record.key_hash),
                sk: 'KEY',
                ...record,
                origin: 'minted',
                created_at,
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: this.table,
              Item: {
                pk: instancePk(record.instance_id),
                sk: `KEYREF#${record.key_hash}`,
                key_hash: record.key_hash,
                data_source: record.data_source,
                origin: 'minted',
                created_at,
              },
            },
          },
          {
            ConditionCheck: {
              TableName: this.table,
              Key: { pk: instancePk(record.instance_id), sk: 'SCHEMA' },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        ],
      }),
    );
    // A function that met this key before it existed forgets that within seconds.
    await this.bumpKeysVersion();
  }

  /** The keys of an instance (hashes only), newest first. */
  async listKeys(instanceId: string): Promise<KeyListing[]> {
    const items = await this.queryAll(instancePk(instanceId));
    return items
      .filter(
        (item) => String(item.sk).startsWith('KEYREF#') || String(item.sk).startsWith('REVOKED#'),
      )
      .map((item) => ({
        key_hash: String(item.key_hash),
        data_source: String(item.data_source),
        origin: item.origin === 'minted' ? ('minted' as const) : ('file' as const),
        created_at: typeof item.created_at === 'string' ? item.created_at : undefined,
        revoked_at: typeof item.revoked_at === 'string' ? item.revoked_at : undefined,
      }))
      .sort((a, b) => (b.created_at ?? '').localeCompare(a.created_at ?? ''));
  }

  /**
   * Revokes a key of an instance: its lookup item and its reference go, and a tombstone
   * stays so that applying a file that still holds the key does not bring it back. Then the
   * keys version moves, so that warm functions forget it within seconds. False if the
   * instance has no such key.
   */
  async revokeKey(instanceId: string, keyHash: string): Promise<boolean> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: instancePk(instanceId), sk: `KEYREF#${keyHash}` },
        ConsistentRead: true,
      }),
    );
    if (!Item) return false;
    const ref = KeyRefItem.parse(Item);
    await this.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: this.table,
              Key: { pk: keyPk(keyHash), sk: 'KEY' },
              ConditionExpression: 'attribute_not_exists(pk) OR instance_id = :instance',
              ExpressionAttributeValues: { ':instance': instanceId },
            },
          },
          {
            Delete: {
              TableName: this.table,
              Key: { pk: instancePk(instanceId), sk: `KEYREF#${keyHash}` },
            },
          },
          {
            Put: {
              TableName: this.table,
              Item: {
                pk: instancePk(instanceId),
                sk: `REVOKED#${keyHash}`,
                key_hash: keyHash,
                data_source: ref.data_source,
                origin: ref.origin,
                revoked_at: new Date().toISOString(),
              },
            },
          },
        ],
      }),
    );
    await this.bumpKeysVersion();
    return true;
  }

  private queryAll(pk: string): Promise<Record<string, unknown>[]> {
    return queryPartition(this.db, this.table, pk);
  }
}

/**
 * Key lookups and instances cached in the container (`ttlMs`, a minute by default), and keys
 * that are no one's for `missTtlMs` (five minutes: each costs a strongly consistent read, so
 * a caller trying keys is not answered from the table every time). Both are dropped as soon
 * as the keys version moves (`VersionWatch`: a key revoked, minted or applied), which every
 * container reads every few seconds: so a revoked key stops working within seconds, and a
 * key minted a moment ago works although it was once unknown here.
 * An instance's configuration is also checked against its version (one small strongly
 * consistent read) each time it is asked for: a field or definition created through the API,
 * in any function of the region, is seen by the next request of every other.
 */
export class CachedTenantDirectory implements TenantDirectory {
  private readonly keys = new TtlCache<ApiKeyRecord | null>(1000);
  private readonly instances = new TtlCache<InstanceSchema | null>(200);

  constructor(
    private readonly inner: TenantDirectory,
    private readonly ttlMs = 60_000,
    private readonly missTtlMs = 300_000,
    private readonly versions?: VersionWatch,
  ) {
    versions?.onChange(() => {
      this.keys.clear();
      this.instances.clear();
    });
  }

  /** Whether this container holds the key's record (known to exist) right now. */
  knows(keyHash: string): boolean {
    return Boolean(this.keys.get(keyHash));
  }

  async findApiKey(keyHash: string): Promise<ApiKeyRecord | undefined> {
    await this.versions?.check();
    const ttl = (value: unknown) => (value ? this.ttlMs : this.missTtlMs);
    const record = await this.keys.getOrLoad(keyHash, ttl, async () => {
      return (await this.inner.findApiKey(keyHash)) ?? null;
    });
    return record ?? undefined;
  }

  async getInstance(instanceId: string): Promise<InstanceSchema | undefined> {
    const ttl = (value: unknown) => (value ? this.ttlMs : Math.min(this.ttlMs, 5_000));
    const load = async () => (await this.inner.getInstance(instanceId)) ?? null;
    if (this.inner.configVersion) {
      const current = await this.inner.configVersion(instanceId);
      const cached = this.instances.get(instanceId);
      if (cached !== undefined && (cached?.config_version ?? 0) >= current) {
        return cached ?? undefined;
      }
      // Older than the version (or not cached): read afresh, shared by concurrent misses.
      const fresh = await this.instances.reload(instanceId, ttl, load);
      return fresh ?? undefined;
    }
    const schema = await this.instances.getOrLoad(instanceId, ttl, load);
    return schema ?? undefined;
  }
}

/** The stored instance of a schema item, with its configuration version. */
function instanceOf(item: Record<string, unknown>): InstanceSchema {
  const schema = StoredInstance.parse(item.schema);
  const version = item.config_version;
  return typeof version === 'number' ? { ...schema, config_version: version } : schema;
}
