import { z } from 'zod';
import { recordChange, type AuditSink, type ChangeAuthor } from './audit.js';
import type { InstanceListing, KeyListing } from '../../adapters/config-store.js';
import { hashApiKey, mintApiKey } from '../api-keys.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Region } from '../regions.js';
import type { ApiKeyRecord, InstanceSchema } from '../tenancy.js';
import { mayManage, type ConsoleUser } from './console-user.js';

/**
 * What the console does with instances, their data sources and API keys: the same objects
 * the admin CLI and `apply` make (a key minted here is one `admin key list` shows), each
 * change recorded in the audit log. An instance the user may not manage is answered as one
 * that does not exist, so that nobody learns another tenant's instance IDs.
 */
export interface ConsoleStore {
  getInstance(instanceId: string): Promise<InstanceSchema | undefined>;
  /** Every instance of the region, from its list of instances (a Query, never a scan). */
  listInstances(): Promise<InstanceListing[]>;
  listKeys(instanceId: string): Promise<KeyListing[]>;
  addMintedKey(record: ApiKeyRecord): Promise<void>;
  revokeKey(instanceId: string, keyHash: string): Promise<boolean>;
}

/** Who made a change, from where (the audit log's "who" and "from where"). */
export interface ConsoleCaller extends ChangeAuthor {
  user: ConsoleUser;
}

/** An instance ID as every console route takes it. */
export const ConsoleInstanceId = z.string().min(1).max(64);
const instanceId = ConsoleInstanceId;
export const ConsoleInstanceRequest = z.strictObject({ instance_id: instanceId });
export const ConsoleKeyCreateRequest = z.strictObject({
  instance_id: instanceId,
  data_source: z.string().trim().min(1).max(100),
});
export const ConsoleKeyRevokeRequest = z.strictObject({
  instance_id: instanceId,
  key_hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/, "must be the key's SHA-256 as 64 lowercase hexadecimal digits"),
});

/** An instance of this region the user may manage, or a 404 naming `instance_id`. */
export async function managedInstance(
  store: Pick<ConsoleStore, 'getInstance'>,
  user: ConsoleUser,
  region: Region,
  id: string,
): Promise<InstanceSchema> {
  const instance = mayManage(user, id) ? await store.getInstance(id) : undefined;
  if (!instance || instance.region !== region) {
    throw new NotFoundError(`instance_id: no instance "${id}" here that you may manage`, [
      { field: 'instance_id', error: 'not found' },
    ]);
  }
  return instance;
}

export interface InstanceSummary {
  id: string;
  name: string;
  plan: string;
  region: Region;
}

/** The instances of this region the user may manage, by ID. */
export async function instancesOf(
  store: ConsoleStore,
  user: ConsoleUser,
  region: Region,
): Promise<InstanceSummary[]> {
  // A platform admin sees the region's list of instances (one Query); anyone else the few
  // instances their groups name.
  const instances: (InstanceListing | undefined)[] = user.platformAdmin
    ? await store.listInstances()
    : await Promise.all([...user.instances].sort().map((id) => store.getInstance(id)));
  return instances
    .filter((instance): instance is InstanceListing => instance?.region === region)
    .map((instance) => ({
      id: instance.id,
      name: instance.name,
      plan: instance.plan,
      region: instance.region,
    }));
}

/** The data sources of an instance with their merge preferences and keys (hashes only). */
export async function dataSourcesOf(store: ConsoleStore, instance: InstanceSchema) {
  const keys = await store.listKeys(instance.id);
  return instance.data_sources.map((source) => ({
    name: source.name,
    merge_by: source.merge_by,
    merge_strategy: source.merge_strategy,
    find_strategy: source.find_strategy,
    declared_in_file: source.source !== 'api',
    keys: keys
      .filter((key) => key.data_source === source.name)
      .map((key) => ({
        key_hash: key.key_hash,
        origin: key.origin,
        created_at: key.created_at ?? null,
        revoked_at: key.revoked_at ?? null,
      })),
  }));
}

/** Mints a key for a data source: shown in this answer only, its SHA-256 kept. */
export async function createConsoleKey(
  store: ConsoleStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleKeyCreateRequest>,
) {
  const instance = await managedInstance(store, caller.user, region, request.instance_id);
  if (!instance.data_sources.some((source) => source.name === request.data_source)) {
    throw new ValidationError(
      `data_source: instance "${instance.id}" has no data source "${request.data_source}"`,
      [{ field: 'data_source', error: 'no such data source' }],
    );
  }
  const key = mintApiKey(region);
  const keyHash = hashApiKey(key);
  await recordChange(audit, caller, instance.id, {
    action: 'key.create',
    target: `data_source:${request.data_source}`,
    details: { key_hash: keyHash },
  });
  await store.addMintedKey({
    key_hash: keyHash,
    instance_id: instance.id,
    data_source: request.data_source,
    home_region: region,
  });
  return { instance_id: instance.id, data_source: request.data_source, key, key_hash: keyHash };
}

/** Revokes a key of the instance: refused everywhere within seconds (docs/operations.md). */
export async function revokeConsoleKey(
  store: ConsoleStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleKeyRevokeRequest>,
) {
  const instance = await managedInstance(store, caller.user, region, request.instance_id);
  const key = (await store.listKeys(instance.id)).find(
    (k) => k.key_hash === request.key_hash && k.revoked_at === undefined,
  );
  const notFound = () =>
    new NotFoundError(
      `key_hash: instance "${instance.id}" has no live key ${request.key_hash.slice(0, 16)}…`,
      [{ field: 'key_hash', error: 'not found' }],
    );
  if (!key) throw notFound();
  await recordChange(audit, caller, instance.id, {
    action: 'key.revoke',
    target: `data_source:${key.data_source}`,
    details: { key_hash: key.key_hash },
  });
  if (!(await store.revokeKey(instance.id, key.key_hash))) throw notFound();
  return { instance_id: instance.id, key_hash: key.key_hash, revoked: true as const };
}

/** A page of an instance's audit log, newest first. */
export const ConsoleAuditRequest = z.strictObject({
  instance_id: instanceId,
  limit: z.number().int().min(1).max(100).default(50),
  before: z
    .string()
    .regex(/^\d{4}-\d\d-\d\dT[\d:.]+Z#[0-9a-f]{12}$/, 'must be the `next` of the previous page')
    .optional(),
});
