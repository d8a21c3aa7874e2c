import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mintApiKey } from '../shared/domain/api-keys.js';
import { REGIONS, REGION_NAMES, type Region } from '../shared/domain/regions.js';

/**
 * The configuration `npm start` applies when no `CDP_SEED_FILE` is given: one demo instance
 * per region. Their keys are minted on the first run and kept under the data directory, so
 * that a restart finds the same keys (a new set each run with `CDP_EPHEMERAL=1`).
 */
export type DemoKeys = Record<Region, string>;

function loadOrMintKeys(dataDir: string, ephemeral: boolean): DemoKeys {
  const file = join(dataDir, 'demo-keys.json');
  if (!ephemeral && existsSync(file)) {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<DemoKeys>;
    if (REGIONS.every((region) => typeof stored[region] === 'string')) return stored as DemoKeys;
  }
  const keys = Object.fromEntries(
    REGIONS.map((region) => [region, mintApiKey(region)]),
  ) as DemoKeys;
  if (!ephemeral) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
  }
  return keys;
}

export function demoConfiguration(dataDir: string, ephemeral: boolean) {
  const keys = loadOrMintKeys(dataDir, ephemeral);
  const instances = REGIONS.map((region) => ({
    id: region === 'default' ? 'demo' : `demo-${region}`,
    name: `Demo Co (${REGION_NAMES[region]})`,
    region,
    plan: 'business',
    transactional_email: true,
    sending_domains: ['mail.demo.test'],
    // Above the default (100 a second, bursts of 200): the benchmarks in bench/ send bursts
    // with the demo key.
    rate_limit: { requests_per_second: 1000, burst: 2000 },
    data_sources: [{ name: 'Demo', api_key: keys[region], merge_by: ['str::email'] }],
    person_fields: [{ id: 'str:cm:favourite-colour', name: 'Favourite colour' }],
    organization_fields: [{ id: 'int:oc:revenue', name: 'Revenue' }],
    activities: [
      {
        id: 'act:cm:purchased',
        name: 'Purchased',
        display_text: 'Purchased {{attribute.item}}',
        attributes: [
          { id: 'str:cm:item', name: 'Item' },
          { id: 'int:cm:price', name: 'Price', kind: 'currency' },
        ],
        conversion_value: true,
        track_as_touch: true,
      },
    ],
  }));
  return { configuration: { instances }, keys };
}
