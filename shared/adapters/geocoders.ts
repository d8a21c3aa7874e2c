import {
  SearchPlaceIndexForTextCommand,
  type LocationClient,
  type SearchPlaceIndexForTextCommandOutput,
} from '@aws-sdk/client-location';
import { ServiceUnavailableError } from '../domain/errors.js';
import type { AddressQuery, Geocoder, ResolvedLocation } from '../domain/location.js';
import { classifyStoreError } from './dynamo-resilience.js';

/**
 * Address geocoding through AWS Location Service (a place index). `country` filters with
 * the service's own filter when it is an ISO 3166 alpha-3 code and on the result otherwise;
 * `postal_code` filters on the result; `language` is passed on. The service has no region
 * boost, so `boost_region` is not used.
 */
export class AwsLocationGeocoder implements Geocoder {
  constructor(
    private readonly client: Pick<LocationClient, 'send'>,
    private readonly placeIndex: string,
  ) {}

  async geocode(query: AddressQuery): Promise<ResolvedLocation | undefined> {
    const alpha3 =
      query.country && /^[A-Za-z]{3}$/.test(query.country)
        ? query.country.toUpperCase()
        : undefined;
    let output: SearchPlaceIndexForTextCommandOutput;
    try {
      output = await this.client.send(
        new SearchPlaceIndexForTextCommand({
          IndexName: this.placeIndex,
          Text: query.address,
          MaxResults: 5,
          ...(alpha3 ? { FilterCountries: [alpha3] } : {}),
          ...(query.language ? { Language: query.language } : {}),
        }),
      );
    } catch (error) {
      // Throttled or unreachable (after the SDK's retries): a 503, nothing written yet.
      if (classifyStoreError(error) === undefined) throw error;
      throw new ServiceUnavailableError(
        'Address lookup (AWS Location Service) is unavailable; try again shortly',
      );
    }
    for (const result of output.Results ?? []) {
      const place = result.Place;
      if (!place) continue;
      if (query.postal_code && !(place.PostalCode ?? '').startsWith(query.postal_code)) continue;
      if (query.country && !alpha3 && !sameCountry(query.country, place.Country)) continue;
      const [lng, lat] = place.Geometry?.Point ?? [];
      return {
        source: 'address',
        ...(place.Municipality ? { city: place.Municipality } : {}),
        ...(place.Region ? { region: place.Region } : {}),
        ...(place.Country ? { country: place.Country } : {}),
        ...(place.PostalCode ? { postal_code: place.PostalCode } : {}),
        ...(lat !== undefined && lng !== undefined ? { lat, lng } : {}),
      };
    }
    return undefined;
  }
}

function sameCountry(filter: string, country: string | undefined): boolean {
  return (
    country !== undefined && country.toLowerCase().startsWith(filter.toLowerCase().slice(0, 2))
  );
}

interface Place {
  city: string;
  region: string;
  country: string;
  countryCode: string;
  postalCode: string;
  lat: number;
  lng: number;
}

/** A small gazetteer of well-known cities, enough to exercise address lookups locally. */
const PLACES: readonly Place[] = [
  {
    city: 'Sydney',
    region: 'New South Wales',
    country: 'Australia',
    countryCode: 'AU',
    postalCode: '2000',
    lat: -33.8688,
    lng: 151.2093,
  },
  {
    city: 'Melbourne',
    region: 'Victoria',
    country: 'Australia',
    countryCode: 'AU',
    postalCode: '3000',
    lat: -37.8136,
    lng: 144.9631,
  },
  {
    city: 'Brisbane',
    region: 'Queensland',
    country: 'Australia',
    countryCode: 'AU',
    postalCode: '4000',
    lat: -27.4698,
    lng: 153.0251,
  },
  {
    city: 'Perth',
    region: 'Western Australia',
    country: 'Australia',
    countryCode: 'AU',
    postalCode: '6000',
    lat: -31.9523,
    lng: 115.8613,
  },
  {
    city: 'Perth',
    region: 'Scotland',
    country: 'United Kingdom',
    countryCode: 'GB',
    postalCode: 'PH1',
    lat: 56.3969,
    lng: -3.4371,
  },
  {
    city: 'London',
    region: 'England',
    country: 'United Kingdom',
    countryCode: 'GB',
    postalCode: 'EC1A',
    lat: 51.5072,
    lng: -0.1276,
  },
  {
    city: 'London',
    region: 'Ontario',
    country: 'Canada',
    countryCode: 'CA',
    postalCode: 'N6A',
    lat: 42.9849,
    lng: -81.2453,
  },
  {
    city: 'Paris',
    region: 'Île-de-France',
    country: 'France',
    countryCode: 'FR',
    postalCode: '75001',
    lat: 48.8566,
    lng: 2.3522,
  },
  {
    city: 'Berlin',
    region: 'Berlin',
    country: 'Germany',
    countryCode: 'DE',
    postalCode: '10115',
    lat: 52.52,
    lng: 13.405,
  },
  {
    city: 'Amsterdam',
    region: 'North Holland',
    country: 'Netherlands',
    countryCode: 'NL',
    postalCode: '1012',
    lat: 52.3676,
    lng: 4.9041,
  },
  {
    city: 'New York',
    region: 'New York',
    country: 'United States',
    countryCode: 'US',
    postalCode: '10001',
    lat: 40.7128,
    lng: -74.006,
  },
  {
    city: 'San Francisco',
    region: 'California',
    country: 'United States',
    countryCode: 'US',
    postalCode: '94103',
    lat: 37.7749,
    lng: -122.4194,
  },
  {
    city: 'Springfield',
    region: 'Illinois',
    country: 'United States',
    countryCode: 'US',
    postalCode: '62701',
    lat: 39.7817,
    lng: -89.6501,
  },
  {
    city: 'Auckland',
    region: 'Auckland',
    country: 'New Zealand',
    countryCode: 'NZ',
    postalCode: '1010',
    lat: -36.8485,
    lng: 174.7633,
  },
  {
    city: 'Tokyo',
    region: 'Tokyo',
    country: 'Japan',
    countryCode: 'JP',
    postalCode: '100-0001',
    lat: 35.6762,
    lng: 139.6503,
  },
];

const normalize = (text: string) =>
  text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '');

/**
 * The local stack's geocoder: finds a known city named in the address and honours the
 * `country` (ISO code or name) and `postal_code` filters, ignoring matches outside them.
 * `boost_region` picks among equally good matches (Perth, AU or Perth, GB).
 */
export class OfflineGeocoder implements Geocoder {
  geocode(query: AddressQuery): Promise<ResolvedLocation | undefined> {
    const address = normalize(query.address);
    const candidates = PLACES.filter((place) => address.includes(normalize(place.city)))
      .filter(
        (place) =>
          !query.country ||
          [place.countryCode, place.country].some(
            (c) => normalize(c) === normalize(query.country ?? ''),
          ),
      )
      .filter(
        (place) =>
          !query.postal_code ||
          place.postalCode.startsWith(query.postal_code) ||
          query.postal_code.startsWith(place.postalCode),
      )
      .sort((a, b) => {
        const boost = (place: Place) =>
          query.boost_region && place.countryCode.toLowerCase() === query.boost_region.toLowerCase()
            ? 1
            : 0;
        return (
          boost(b) - boost(a) ||
          (address.includes(normalize(b.postalCode)) ? 1 : 0) -
            (address.includes(normalize(a.postalCode)) ? 1 : 0)
        );
      });
    const place = candidates[0];
    return Promise.resolve(
      place && {
        source: 'address',
        city: place.city,
        region: place.region,
        country: place.country,
        postal_code: place.postalCode,
        lat: place.lat,
        lng: place.lng,
      },
    );
  }
}
