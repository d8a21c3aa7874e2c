import { apiKeyMatches, hashApiKey, regionOfApiKey } from './api-keys.js';
import { MissingApiKeyError, UnknownApiKeyError, WrongRegionError } from './errors.js';
import { FieldCatalog } from './fields/field-catalog.js';
import type { InstanceConfig, StoredInstance } from './instance-config.js';
import type { Region } from './regions.js';

/**
 * The configuration of one instance as the API reads it (the file's shape, without keys),
 * with the version every change of it bumps (absent before the first versioned change).
 */
export type InstanceSchema = StoredInstance & { config_version?: number };

/** What a key hash resolves to. `home_region` differs from the serving region for markers. */
export interface ApiKeyRecord {
  key_hash: string;
  instance_id: string;
  data_source: string;
  home_region: Region;
}

/** The port authentication reads through (the config table, cached). */
export interface TenantDirectory {
  findApiKey(keyHash: string): Promise<ApiKeyRecord | undefined>;
  getInstance(instanceId: string): Promise<InstanceSchema | undefined>;
  /**
   * The instance's current configuration version, read fresh (cheap: one small item), so a
   * cached configuration can be checked against it before every use.
   */
  configVersion?(instanceId: string): Promise<number>;
}

/** Who is calling: the instance and data source a key belongs to, with their field catalogs. */
export interface Tenant {
  instance: InstanceSchema;
  dataSource: InstanceSchema['data_sources'][number];
  personFields: FieldCatalog;
  organizationFields: FieldCatalog;
  /**
   * The SHA-256 of the API key the request came with (its rate-limit bucket); absent for
   * tenants rebuilt from a queued request or acting as the service.
   */
  apiKeyHash?: string;
}

export function instanceSchemaOf(config: InstanceConfig): InstanceSchema {
  return {
    id: config.id,
    name: config.name,
    region: config.region,
    plan: config.plan,
    ...(config.timezone ? { timezone: config.timezone } : {}),
    transactional_email: config.transactional_email,
    sending_domains: config.sending_domains,
    data_sources: config.data_sources.map(({ api_key: _key, ...source }) => source),
    ...(config.rate_limit ? { rate_limit: config.rate_limit } : {}),
    person_fields: config.person_fields,
    // Where each unique field stands is decided when the configuration is applied.
    organization_fields: config.organization_fields,
    activities: config.activities,
  };
}

export interface AuthenticationSettings {
  region: Region;
  baseUrls: Record<Region, string>;
  directory: TenantDirectory;
}

/**
 * Resolves an `X-Api-Key` value to a tenant. A key minted for another region is recognised
 * by its prefix without a lookup; a key from a configuration file is recognised by the
 * marker that applying the file leaves in every other region. Both get the address to use.
 */
export async function authenticate(
  apiKey: string | undefined,
  { region, baseUrls, directory }: AuthenticationSettings,
): Promise<Tenant> {
  if (apiKey === undefined || apiKey.trim() === '') throw new MissingApiKeyError();
  const key = apiKey.trim();
  const keyRegion = regionOfApiKey(key);
  if (keyRegion !== undefined && keyRegion !== region) {
    throw new WrongRegionError(keyRegion, baseUrls[keyRegion]);
  }
  const keyHash = hashApiKey(key);
  const record = await directory.findApiKey(keyHash);
  if (!record || !apiKeyMatches(key, record.key_hash)) throw new UnknownApiKeyError();
  if (record.home_region !== region) {
    throw new WrongRegionError(record.home_region, baseUrls[record.home_region]);
  }
  const tenant = await tenantOf(directory, record.instance_id, record.data_source);
  if (!tenant) throw new UnknownApiKeyError();
  return { ...tenant, apiKeyHash: record.key_hash };
}

/** The tenant of a data source of an instance (a queued request names both), if they exist. */
export async function tenantOf(
  directory: Pick<TenantDirectory, 'getInstance'>,
  instanceId: string,
  dataSourceName: string,
): Promise<Tenant | undefined> {
  const instance = await directory.getInstance(instanceId);
  const dataSource = instance?.data_sources.find((source) => source.name === dataSourceName);
  if (!instance || !dataSource) return undefined;
  return { instance, dataSource, ...catalogsOf(instance) };
}

/**
 * The tenant the service itself acts as, for the writes it makes on its own (email links,
 * SES events): the instance, with a data source named after what made the change.
 */
export async function serviceTenant(
  directory: Pick<TenantDirectory, 'getInstance'>,
  instanceId: string,
  source: string,
): Promise<Tenant | undefined> {
  const instance = await directory.getInstance(instanceId);
  if (!instance) return undefined;
  const dataSource = {
    name: source,
    merge_by: ['str::person_id'],
    merge_strategy: 2 as const,
    find_strategy: 0 as const,
  };
  return { instance, dataSource, ...catalogsOf(instance) };
}

/** Catalogs per schema object: the cached directory hands out one object per instance. */
const catalogs = new WeakMap<InstanceSchema, Pick<Tenant, 'personFields' | 'organizationFields'>>();

function catalogsOf(instance: InstanceSchema): Pick<Tenant, 'personFields' | 'organizationFields'> {
  let entry = catalogs.get(instance);
  if (!entry) {
    entry = {
      personFields: FieldCatalog.forPerson(instance.person_fields, instance.timezone),
      organizationFields: FieldCatalog.forOrganization(
        instance.organization_fields,
        instance.timezone,
      ),
    };
    catalogs.set(instance, entry);
  }
  return entry;
}
