import {
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import {
  StoredInstance,
  StoredTemplate,
  type ActivityDefinitionConfig,
  type AssetConfig,
  type CampaignConfig,
  type KeyFieldState,
} from '../domain/instance-config.js';
import { REGIONS, type Region } from '../domain/regions.js';
import type { ApiKeyRecord, InstanceSchema, TenantDirectory } from '../domain/tenancy.js';
import { ServiceUnavailableError } from '../domain/errors.js';
import { backoffMs, canWait, currentDeadline, sleep } from '../lib/time-budget.js';
import { TtlCache } from '../lib/ttl-cache.js';
import type { VersionWatch } from '../lib/version-watch.js';
import {
  batchWrite,
  cancellationCodes,
  isConditionFailure,
  type WriteRequest,
} from './dynamo-helpers.js';
import { LEGACY_KID, StoredKeyring, storedKey, type KeyWrapper } from '../domain/signing-keys.js';

/**
 * The config table. Items:
 * - `INST#<id>` / `SCHEMA`: the instance (settings, data sources, custom fields, activities)
 * - `INST#<id>` / `CAMPAIGN#<id>`, `ASSET#<id>`: email templates
 * - `INST#<id>` / `KEYREF#<hash>`: the keys of the instance, so that they can be revoked
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

export class DynamoConfigStore implements TenantDirectory {
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
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: instancePk(instanceId), sk: 'SCHEMA' },
        ConsistentRead: true,
      }),
    );
    return Item ? StoredInstance.parse(Item.schema) : undefined;
  }

  /**
   * The IDs of every instance of this region. A scan, with a filter: the config table is
   * small (instances, keys, templates) and only the admin CLI asks this.
   */
  async listInstanceIds(): Promise<string[]> {
    const ids: string[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new ScanCommand({
          TableName: this.table,
          FilterExpression: 'sk = :schema',
          ExpressionAttributeValues: { ':schema': 'SCHEMA' },
          ProjectionExpression: 'pk',
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) ids.push(String(item.pk).replace(/^INST#/, ''));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return ids.sort();
  }

  /** The activity definitions of an instance, read afresh (cached tenants may lack new ones). */
  async activityDefinitions(instanceId: string): Promise<ActivityDefinitionConfig[]> {
    return (await this.getInstance(instanceId))?.activities ?? [];
  }

  /** Moves a unique field of a stored instance to `state` (see `key-fields.ts`). */
  async setKeyFieldState(instanceId: string, field: string, state: KeyFieldState): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: instancePk(instanceId), sk: 'SCHEMA' },
        UpdateExpression: 'SET #schema.#keys.#field = :state, updated_at = :now',
        ConditionExpression: 'attribute_exists(#schema.#keys)',
        ExpressionAttributeNames: { '#schema': 'schema', '#keys': 'key_fields', '#field': field },
        ExpressionAttributeValues: { ':state': state, ':now': new Date().toISOString() },
      }),
    );
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
  ): Promise<void> {
    const pk = instancePk(schema.id);
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

    put({ pk, sk: 'SCHEMA', schema, updated_at: new Date().toISOString() });
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
   * Adds an activity definition to an instance (optimistic: conditioned on the schema not
   * having changed since it was read). False if the instance already has that ID.
   */
  async addActivityDefinition(
    instanceId: string,
    definition: ActivityDefinitionConfig,
  ): Promise<boolean> {
    const deadline = currentDeadline();
    for (let attempt = 0; ; attempt += 1) {
      const { Item } = await this.db.send(
        new GetCommand({
          TableName: this.table,
          Key: { pk: instancePk(instanceId), sk: 'SCHEMA' },
          ConsistentRead: true,
        }),
      );
      if (!Item) throw new Error(`instance ${instanceId} has no schema`);
      const schema = StoredInstance.parse(Item.schema);
      if (schema.activities.some((activity) => activity.id === definition.id)) return false;
      try {
        await this.db.send(
          new PutCommand({
            TableName: this.table,
            Item: {
              ...Item,
              schema: { ...schema, activities: [...schema.activities, definition] },
              updated_at: new Date().toISOString(),
            },
            ConditionExpression: 'updated_at = :seen',
            ExpressionAttributeValues: { ':seen': String(Item.updated_at) },
          }),
        );
        return true;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
      }
      // The configuration changed meanwhile (another definition, an apply): read it again.
      const wait = backoffMs(attempt);
      if (!canWait(wait, deadline)) {
        throw new ServiceUnavailableError(
          'The instance configuration kept changing concurrently; try again shortly',
        );
      }
      await sleep(wait);
    }
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

  private async queryAll(pk: string): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      items.push(...(page.Items ?? []));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return items;
  }
}

/**
 * Key lookups and instances cached in the container (`ttlMs`, a minute by default), and keys
 * that are no one's for `missTtlMs` (five minutes: each costs a strongly consistent read, so
 * a caller trying keys is not answered from the table every time). Both are dropped as soon
 * as the keys version moves (`VersionWatch`: a key revoked, minted or applied), which every
 * container reads every few seconds: so a revoked key stops working within seconds, and a
 * key minted a moment ago works although it was once unknown here.
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
    const schema = await this.instances.getOrLoad(instanceId, ttl, async () => {
      return (await this.inner.getInstance(instanceId)) ?? null;
    });
    return schema ?? undefined;
  }
}
