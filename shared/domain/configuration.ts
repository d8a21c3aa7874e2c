import { hashApiKey } from './api-keys.js';
import type {
  AssetConfig,
  CampaignConfig,
  ConfigurationFile,
  KeyFieldState,
} from './instance-config.js';
import {
  claimExistingValues,
  releaseClaims,
  type ClaimReport,
  type KeyClaimStore,
} from './key-fields.js';
import type { Region } from './regions.js';
import { instanceSchemaOf, type ApiKeyRecord, type InstanceSchema } from './tenancy.js';

/** The port applying a configuration writes through (the config table of one region). */
export interface ConfigurationWriter {
  getInstance(instanceId: string): Promise<InstanceSchema | undefined>;
  applyInstance(
    schema: InstanceSchema,
    templates: { campaigns: CampaignConfig[]; assets: AssetConfig[] },
    fileKeys: { key_hash: string; data_source: string }[],
  ): Promise<void>;
  /** Moves a unique field of a stored instance to `state`. */
  setKeyFieldState(instanceId: string, field: string, state: KeyFieldState): Promise<void>;
  putForeignKeyMarkers(here: Region, markers: ApiKeyRecord[]): Promise<void>;
  /** Creates the deployment's signing keyring (cursors, links) if it has none. */
  ensureSigningKeys(): Promise<void>;
}

export interface ApplyOptions {
  /** The people of the region, for claiming the values of fields made unique. */
  keyClaims?: KeyClaimStore;
  /**
   * How long running functions may keep the previous configuration (their cache lasts a
   * minute): values they write meanwhile without claims are claimed by a second pass after
   * it. Zero when no function runs yet (the local stack applies before it starts them).
   */
  settleMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export interface ApplySummary {
  region: Region;
  instances: string[];
  foreignKeys: number;
  /** Fields made unique by this apply (or a previous one that stopped): what was claimed. */
  claimed: (ClaimReport & { instance: string })[];
  /** Fields no longer unique: how many claims were given back. */
  released: { instance: string; field: string; claims: number }[];
}

/**
 * Applies a validated configuration file to one regional deployment: the instances of that
 * region are written in full (idempotently; see `applyInstance`), and the keys of instances
 * of other regions are left as markers naming their region, so that this region's API can
 * tell the caller which address to use.
 *
 * A custom field newly declared unique is written as `claiming` (merges start claiming the
 * values they write), the values people already hold are claimed, and only then is the
 * field `active` (a merge key). A field no longer unique stops being a key at once and its
 * claims are given back.
 */
export async function applyConfiguration(
  file: ConfigurationFile,
  region: Region,
  writer: ConfigurationWriter,
  options: ApplyOptions = {},
): Promise<ApplySummary> {
  await writer.ensureSigningKeys();
  const markers: ApiKeyRecord[] = [];
  const applied: string[] = [];
  const claiming: { instance: string; field: string }[] = [];
  const releasing: { instance: string; field: string }[] = [];
  for (const instance of file.instances) {
    const fileKeys = instance.data_sources.flatMap((source) =>
      source.api_key === undefined
        ? []
        : [{ key_hash: hashApiKey(source.api_key), data_source: source.name }],
    );
    if (instance.region === region) {
      const was = (await writer.getInstance(instance.id))?.key_fields ?? {};
      const unique = instance.person_fields.filter((field) => field.unique).map((f) => f.id);
      const keyFields = Object.fromEntries(
        unique.map((field): [string, KeyFieldState] => [field, was[field] ?? 'claiming']),
      );
      for (const field of unique) {
        if (keyFields[field] === 'claiming') claiming.push({ instance: instance.id, field });
      }
      for (const field of Object.keys(was)) {
        if (!unique.includes(field)) releasing.push({ instance: instance.id, field });
      }
      await writer.applyInstance(
        { ...instanceSchemaOf(instance), key_fields: keyFields },
        { campaigns: instance.campaigns, assets: instance.assets },
        fileKeys,
      );
      applied.push(instance.id);
    } else {
      markers.push(
        ...fileKeys.map((key) => ({
          ...key,
          instance_id: instance.id,
          home_region: instance.region,
        })),
      );
    }
  }
  await writer.putForeignKeyMarkers(region, markers);

  const claimed: ApplySummary['claimed'] = [];
  const released: ApplySummary['released'] = [];
  if (claiming.length > 0 || releasing.length > 0) {
    const store = options.keyClaims;
    if (!store) throw new Error('applying unique fields needs the people table of the region');
    const claimAll = () =>
      Promise.all(
        claiming.map(async ({ instance, field }) => ({
          instance,
          ...(await claimExistingValues(store, instance, field)),
        })),
      );
    let reports = await claimAll();
    const settleMs = options.settleMs ?? 60_000;
    if (claiming.length > 0 && settleMs > 0) {
      await (options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))))(
        settleMs,
      );
      reports = await claimAll();
    }
    for (const { instance, field } of claiming) {
      await writer.setKeyFieldState(instance, field, 'active');
    }
    claimed.push(...reports);
    for (const { instance, field } of releasing) {
      released.push({ instance, field, claims: await releaseClaims(store, instance, field) });
    }
  }
  return { region, instances: applied, foreignKeys: markers.length, claimed, released };
}
