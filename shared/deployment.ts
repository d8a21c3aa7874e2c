import type { Region } from './domain/regions.js';

/**
 * Which AWS region hosts each regional deployment. Deployment configuration, not code: the
 * CDK app reads it (overridable with `-c awsRegions=...`), and so does the admin CLI
 * (overridable per region with `CDP_AWS_REGION_DEFAULT`, `CDP_AWS_REGION_AU`, ...).
 */
export const DEFAULT_AWS_REGIONS: Record<Region, string> = {
  default: 'us-east-1',
  au: 'ap-southeast-2',
  eu: 'eu-central-1',
};

export function awsRegionOf(region: Region, env: NodeJS.ProcessEnv = process.env): string {
  return env[`CDP_AWS_REGION_${region.toUpperCase()}`] ?? DEFAULT_AWS_REGIONS[region];
}
