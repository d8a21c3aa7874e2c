import { isIP } from 'node:net';
import { z } from 'zod';
import { ForbiddenError } from './errors.js';
import type { FieldValue } from './fields/field-values.js';
import type { Plan } from './instance-config.js';

/**
 * The location object of people, activities and emails (API.md, Location object): a custom
 * location as given, an address to geocode, or an IP address to look up. When several are
 * given the most specific wins: custom, then address, then IP; a less specific one is used
 * only when the more specific one finds nothing.
 */
export const LocationInput = z
  .strictObject({
    source_ip: z
      .string()
      .refine((ip) => isIP(ip) !== 0, 'expected an IPv4 or IPv6 address')
      .optional(),
    custom: z
      .strictObject({
        country_name: z.string().max(255).optional(),
        region_name: z.string().max(255).optional(),
        city_name: z.string().max(255).optional(),
        position_name: z.string().max(255).optional(),
        lat: z.number().min(-90).max(90).optional(),
        lng: z.number().min(-180).max(180).optional(),
      })
      .optional(),
    address: z
      .strictObject({
        address: z.string().trim().min(1).max(500),
        postal_code: z.string().max(20).optional(),
        country: z.string().max(100).optional(),
        boost_region: z.string().max(10).optional(),
        language: z.string().max(20).optional(),
      })
      .optional(),
  })
  .nullable();
export type LocationInput = z.infer<typeof LocationInput>;

export interface ResolvedLocation {
  city?: string;
  region?: string;
  country?: string;
  postal_code?: string;
  lat?: number;
  lng?: number;
  position_name?: string;
  source: 'custom' | 'address' | 'ip';
}

export type AddressQuery = NonNullable<NonNullable<LocationInput>['address']>;

/** Offline IP geolocation (a database shipped with the code; no network at run time). */
export interface IpLocator {
  locate(ip: string): Promise<ResolvedLocation | undefined>;
}

/** Address geocoding: AWS Location Service on AWS, an offline gazetteer locally. */
export interface Geocoder {
  geocode(query: AddressQuery): Promise<ResolvedLocation | undefined>;
}

/** Counts address lookups per instance per month (they are billed). */
export interface GeocodingMeter {
  record(instanceId: string, lookups: number, at: Date): Promise<void>;
}

export interface LocationServices {
  ipLocator: IpLocator;
  geocoder: Geocoder;
  meter: GeocodingMeter;
}

const ADDRESS_PLANS: readonly Plan[] = ['business', 'enterprise'];

/** Address lookups need the Business plan or higher: checked before any work is done. */
export function checkAddressLookups(locations: (LocationInput | undefined)[], plan: Plan): void {
  if (ADDRESS_PLANS.includes(plan)) return;
  if (locations.some((location) => location?.address)) {
    throw new ForbiddenError(
      `Address lookup (location.address) requires the Business plan or higher; this instance is on the ${plan} plan`,
    );
  }
}

export async function resolveLocation(
  input: LocationInput | undefined,
  instanceId: string,
  services: LocationServices,
  now: Date,
): Promise<ResolvedLocation | undefined> {
  if (!input) return undefined;
  const { custom, address, source_ip: ip } = input;
  if (custom && Object.keys(custom).length > 0) {
    return {
      source: 'custom',
      ...(custom.city_name ? { city: custom.city_name } : {}),
      ...(custom.region_name ? { region: custom.region_name } : {}),
      ...(custom.country_name ? { country: custom.country_name } : {}),
      ...(custom.position_name ? { position_name: custom.position_name } : {}),
      ...(custom.lat !== undefined ? { lat: custom.lat } : {}),
      ...(custom.lng !== undefined ? { lng: custom.lng } : {}),
    };
  }
  if (address) {
    const found = await services.geocoder.geocode(address);
    await services.meter.record(instanceId, 1, now);
    if (found) return found;
  }
  return ip ? services.ipLocator.locate(ip) : undefined;
}

/** The person fields a location sets: city, region and country (`geo` values). */
export function locationFields(location: ResolvedLocation | undefined): Record<string, FieldValue> {
  const fields: Record<string, FieldValue> = {};
  if (location?.city) fields['geo::city'] = { name: location.city };
  if (location?.region) fields['geo::region'] = { name: location.region };
  if (location?.country) fields['geo::country'] = { name: location.country };
  return fields;
}

/** Billable lookups: the monthly count rounded up to the next 1000 (API.md). */
export function billableLookups(count: number): number {
  return Math.ceil(count / 1000) * 1000;
}
