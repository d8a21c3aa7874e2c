import { hashApiKey } from './api-keys.js';
import type {
  AssetConfig,
  CampaignConfig,
  ConfigurationFile,
  InstanceConfig,
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
import { MAX_CUSTOM_FIELDS } from './fields/custom-fields.js';
import { fieldNameOf } from './fields/custom-fields.js';

/** The stored configuration changed between reading it and writing the file's over it. */
export class ConfigurationChangedError extends Error {}

/**
 * The file's schema, with what was created through the API and the file does not name:
 * custom fields (unless the file has one of the same name), activity definitions (unless the
 * file has one of the same ID) and data sources made in the console (unless the file has one
 * of the same name). The file's entries win; to remove something
 * created through the API, name it in the file, apply, then remove it and apply again.
 */
export function withApiCreated(file: InstanceSchema, stored: InstanceSchema | undefined) {
  if (!stored) return file;
  const keep = <T extends { source?: 'api' | undefined }>(
    mine: readonly T[],
    theirs: readonly T[],
    same: (a: T, b: T) => boolean,
  ) => [...mine, ...theirs.filter((t) => t.source === 'api' && !mine.some((m) => same(m, t)))];
  const sameName = (a: { id: string }, b: { id: string }) =>
    fieldNameOf(a.id) === fieldNameOf(b.id);
  // Fields deleted through the API stay deleted (their IDs reserved) unless the file names
  // them again: the file wins, and brings the field back with the values records kept.
  const named = new Set([...file.person_fields, ...file.organization_fields].map((f) => f.id));
  const deleted = Object.entries(stored.deleted_fields ?? {}).filter(([id]) => !named.has(id));
  const merged: InstanceSchema = {
    ...file,
    person_fields: keep(file.person_fields, stored.person_fields, sameName),
    organization_fields: keep(file.organization_fields, stored.organization_fields, sameName),
    activities: keep(file.activities, stored.activities, (a, b) => a.id === b.id),
    data_sources: keep(file.data_sources, stored.data_sources, (a, b) => a.name === b.name),
    ...(deleted.length > 0 ? { deleted_fields: Object.fromEntries(deleted) } : {}),
  };
  for (const kind of ['person_fields', 'organization_fields'] as const) {
    if (merged[kind].length > MAX_CUSTOM_FIELDS) {
      throw new Error(
        `instance ${file.id}: the file's ${kind} and those created through the API make ${merged[kind].length}, more than ${MAX_CUSTOM_FIELDS}; name fewer in the file`,
      );
    }
  }
  return merged;
}

/** The port applying a configuration writes through (the config table of one region). */
export interface ConfigurationWriter {
  getInstance(instanceId: string): Promise<InstanceSchema | undefined>;
  /**
   * Writes an instance's schema, templates and file keys. The schema is written only if the
   * stored one is still at `basedOn` (its `config_version` as read; `undefined`: none, or one
   * from before versions): else `ConfigurationChangedError`, and nothing was written.
   */
  applyInstance(
    schema: InstanceSchema,
    templates: { campaigns: CampaignConfig[]; assets: AssetConfig[] },
    fileKeys: { key_hash: string; data_source: string }[],
    basedOn?: number,
  ): Promise<void>;
  /** Moves a unique field of a stored instance to `state`. */
  setKeyFieldState(instanceId: string, field: string, state: KeyFieldState): Promise<void>;
  putForeignKeyMarkers(here: Region, markers: ApiKeyRecord[]): Promise<void>;
  /** Creates the deployment's signing keyring (cursors, links) if it has none. */
  ensureSigningKeys(): Promise<void>;
}

/** Applies an instance's `audiences` (its audience store and build queue in the region). */
export type AudienceApplier = (
  instanceId: string,
  definitions: InstanceConfig['audiences'],
  personFields: InstanceConfig['person_fields'],
) => Promise<void>;

export interface ApplyOptions {
  /** The region's audiences, for instances whose file has `audiences`. */
  audiences?: AudienceApplier;
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
      let was: Record<string, KeyFieldState> = {};
      const unique = instance.person_fields.filter((field) => field.unique).map((f) => f.id);
      // Fields and definitions created through the API meanwhile are kept: read, merge, and
      // write only over what was read (read again if it changed).
      for (let attempt = 0; ; attempt += 1) {
        const stored = await writer.getInstance(instance.id);
        was = stored?.key_fields ?? {};
        const keyFields = Object.fromEntries(
          unique.map((field): [string, KeyFieldState] => [field, was[field] ?? 'claiming']),
        );
        try {
          await writer.applyInstance(
            withApiCreated({ ...instanceSchemaOf(instance), key_fields: keyFields }, stored),
            { campaigns: instance.campaigns, assets: instance.assets },
            fileKeys,
            stored?.config_version,
          );
          break;
        } catch (error) {
          if (!(error instanceof ConfigurationChangedError) || attempt >= 9) throw error;
        }
      }
      for (const field of unique) {
        if ((was[field] ?? 'claiming') === 'claiming') {
          claiming.push({ instance: instance.id, field });
        }
      }
      for (const field of Object.keys(was)) {
        if (!unique.includes(field)) releasing.push({ instance: instance.id, field });
      }
      if (instance.audiences.length > 0) {
        if (!options.audiences) throw new Error("applying audiences needs the region's audiences");
        // Their filters may read fields made through the API as well as the file's.
        const fields = (await writer.getInstance(instance.id))?.person_fields;
        await options.audiences(instance.id, instance.audiences, fields ?? instance.person_fields);
      }
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
