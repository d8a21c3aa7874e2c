import { describe, expect, it } from '@jest/globals';
import { hashApiKey, mintApiKey, regionOfApiKey } from '../../../shared/domain/api-keys.js';
import {
  applyConfiguration,
  type ConfigurationWriter,
} from '../../../shared/domain/configuration.js';
import {
  MissingApiKeyError,
  UnknownApiKeyError,
  WrongRegionError,
} from '../../../shared/domain/errors.js';
import { parseConfigurationFile } from '../../../shared/domain/instance-config.js';
import type { Region } from '../../../shared/domain/regions.js';
import {
  authenticate,
  type ApiKeyRecord,
  type InstanceSchema,
  type TenantDirectory,
} from '../../../shared/domain/tenancy.js';

/** An in-memory config table: what applying a configuration writes, authentication reads. */
class MemoryDirectory implements TenantDirectory, ConfigurationWriter {
  readonly keys = new Map<string, ApiKeyRecord>();
  readonly instances = new Map<string, InstanceSchema>();

  findApiKey(hash: string) {
    return Promise.resolve(this.keys.get(hash));
  }
  getInstance(id: string) {
    return Promise.resolve(this.instances.get(id));
  }
  applyInstance(
    schema: InstanceSchema,
    _templates: unknown,
    fileKeys: { key_hash: string; data_source: string }[],
  ) {
    this.instances.set(schema.id, schema);
    for (const key of fileKeys) {
      this.keys.set(key.key_hash, { ...key, instance_id: schema.id, home_region: schema.region });
    }
    return Promise.resolve();
  }
  putForeignKeyMarkers(_here: Region, markers: ApiKeyRecord[]) {
    for (const marker of markers) this.keys.set(marker.key_hash, marker);
    return Promise.resolve();
  }
  setKeyFieldState(instanceId: string, field: string, state: 'claiming' | 'active') {
    const instance = this.instances.get(instanceId);
    if (instance) instance.key_fields = { ...instance.key_fields, [field]: state };
    return Promise.resolve();
  }
  ensureSigningKeys() {
    return Promise.resolve();
  }
}

const file = parseConfigurationFile({
  instances: [
    {
      id: 'acme',
      name: 'Acme',
      data_sources: [{ name: 'Web', api_key: 'acme-key-32-characters-or-more-x' }],
    },
    {
      id: 'koala',
      name: 'Koala',
      region: 'au',
      data_sources: [{ name: 'App', api_key: 'koala-key-32-characters-or-more-x' }],
    },
  ],
});

const baseUrls = {
  default: 'https://api.test',
  au: 'https://au.api.test',
  eu: 'https://eu.api.test',
};

async function regionDirectory(region: Region) {
  const directory = new MemoryDirectory();
  await applyConfiguration(file, region, directory);
  return directory;
}

describe('API keys', () => {
  it('carry their region when minted, and are stored as SHA-256 hashes', () => {
    const key = mintApiKey('au');
    expect(key).toMatch(/^cdp_au_[A-Za-z0-9_-]{43}$/);
    expect(regionOfApiKey(key)).toBe('au');
    expect(regionOfApiKey('acme-key-32-characters-or-more-x')).toBeUndefined();
    expect(hashApiKey('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    expect(mintApiKey('au')).not.toBe(key);
  });
});

describe('authentication', () => {
  it('resolves a key to its instance and data source', async () => {
    const directory = await regionDirectory('default');
    const tenant = await authenticate('acme-key-32-characters-or-more-x', {
      region: 'default',
      baseUrls,
      directory,
    });
    expect(tenant.instance.id).toBe('acme');
    expect(tenant.dataSource).toEqual({
      name: 'Web',
      merge_by: ['str::email'],
      merge_strategy: 2,
      find_strategy: 0,
    });
    expect(tenant.personFields.get('str::email')?.type).toBe('str');
  });

  it('refuses a missing key and an unknown one', async () => {
    const directory = await regionDirectory('default');
    await expect(
      authenticate(undefined, { region: 'default', baseUrls, directory }),
    ).rejects.toThrow(MissingApiKeyError);
    await expect(authenticate('  ', { region: 'default', baseUrls, directory })).rejects.toThrow(
      MissingApiKeyError,
    );
    await expect(authenticate('guess', { region: 'default', baseUrls, directory })).rejects.toThrow(
      UnknownApiKeyError,
    );
  });

  it('sends a file key of another region to its address', async () => {
    const directory = await regionDirectory('eu');
    expect(directory.instances.size).toBe(0);
    await expect(
      authenticate('koala-key-32-characters-or-more-x', { region: 'eu', baseUrls, directory }),
    ).rejects.toThrow(new WrongRegionError('au', 'https://au.api.test'));
    await expect(
      authenticate('acme-key-32-characters-or-more-x', { region: 'eu', baseUrls, directory }),
    ).rejects.toThrow(/send requests to https:\/\/api\.test/);
  });

  it('sends a minted key of another region to its address without a lookup', async () => {
    const directory = new MemoryDirectory();
    await expect(
      authenticate(mintApiKey('eu'), { region: 'au', baseUrls, directory }),
    ).rejects.toThrow(/https:\/\/eu\.api\.test/);
  });

  it('refuses a key whose data source has gone', async () => {
    const directory = await regionDirectory('default');
    const acme = directory.instances.get('acme');
    if (!acme) throw new Error('fixture');
    directory.instances.set('acme', { ...acme, data_sources: [] });
    await expect(
      authenticate('acme-key-32-characters-or-more-x', { region: 'default', baseUrls, directory }),
    ).rejects.toThrow(UnknownApiKeyError);
  });
});

describe('applying a configuration', () => {
  it('writes the instances of the region and markers for the others', async () => {
    const writer = new MemoryDirectory();
    const summary = await applyConfiguration(file, 'au', writer);
    expect(summary).toEqual({
      region: 'au',
      instances: ['koala'],
      foreignKeys: 1,
      claimed: [],
      released: [],
    });
    expect(writer.keys.get(hashApiKey('acme-key-32-characters-or-more-x'))).toEqual({
      key_hash: hashApiKey('acme-key-32-characters-or-more-x'),
      data_source: 'Web',
      instance_id: 'acme',
      home_region: 'default',
    });
    expect(writer.instances.get('koala')?.data_sources[0]).not.toHaveProperty('api_key');
  });

  it('keeps a data source made in the console, unless the file has one of its name', async () => {
    const writer = await regionDirectory('default');
    const acme = writer.instances.get('acme');
    if (!acme) throw new Error('fixture');
    const console = {
      name: 'Mobile',
      merge_by: ['str::ei'],
      merge_strategy: 1 as const,
      find_strategy: 0 as const,
      source: 'api' as const,
    };
    writer.instances.set('acme', { ...acme, data_sources: [...acme.data_sources, console] });
    await applyConfiguration(file, 'default', writer);
    expect(writer.instances.get('acme')?.data_sources.map((s) => s.name)).toEqual([
      'Web',
      'Mobile',
    ]);

    const named = parseConfigurationFile({
      instances: [
        {
          id: 'acme',
          name: 'Acme',
          data_sources: [
            { name: 'Web', api_key: 'acme-key-32-characters-or-more-x' },
            { name: 'Mobile', merge_by: ['str::email'] },
          ],
        },
      ],
    });
    await applyConfiguration(named, 'default', writer);
    expect(writer.instances.get('acme')?.data_sources).toEqual([
      expect.objectContaining({ name: 'Web' }),
      { name: 'Mobile', merge_by: ['str::email'], merge_strategy: 2, find_strategy: 0 },
    ]);
  });
});
