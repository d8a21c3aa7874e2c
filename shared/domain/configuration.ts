import { hashApiKey } from './api-keys.js';
import type { AssetConfig, CampaignConfig, ConfigurationFile } from './instance-config.js';
import type { Region } from './regions.js';
import { instanceSchemaOf, type ApiKeyRecord, type InstanceSchema } from './tenancy.js';

/** The port applying a configuration writes through (the config table of one region). */
export interface ConfigurationWriter {
  applyInstance(
    schema: InstanceSchema,
    templates: { campaigns: CampaignConfig[]; assets: AssetConfig[] },
    fileKeys: { key_hash: string; data_source: string }[],
  ): Promise<void>;
  putForeignKeyMarkers(here: Region, markers: ApiKeyRecord[]): Promise<void>;
}

export interface ApplySummary {
  region: Region;
  instances: string[];
  foreignKeys: number;
}

/**
 * Applies a validated configuration file to one regional deployment: the instances of that
 * region are written in full (idempotently; see `applyInstance`), and the keys of instances
 * of other regions are left as markers naming their region, so that this region's API can
 * tell the caller which address to use.
 */
export async function applyConfiguration(
  file: ConfigurationFile,
  region: Region,
  writer: ConfigurationWriter,
): Promise<ApplySummary> {
  const markers: ApiKeyRecord[] = [];
  const applied: string[] = [];
  for (const instance of file.instances) {
    const fileKeys = instance.data_sources.flatMap((source) =>
      source.api_key === undefined
        ? []
        : [{ key_hash: hashApiKey(source.api_key), data_source: source.name }],
    );
    if (instance.region === region) {
      await writer.applyInstance(
        instanceSchemaOf(instance),
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
  return { region, instances: applied, foreignKeys: markers.length };
}
