/**
 * The regional deployments of the service (API.md, Base addresses). Each is an independent
 * deployment with its own data; which AWS region hosts it is deployment configuration.
 */
export const REGIONS = ['default', 'au', 'eu'] as const;
export type Region = (typeof REGIONS)[number];

export function isRegion(value: unknown): value is Region {
  return typeof value === 'string' && (REGIONS as readonly string[]).includes(value);
}

export const REGION_NAMES: Record<Region, string> = {
  default: 'default',
  au: 'Australia',
  eu: 'Europe',
};
