import { describe, expect, it } from '@jest/globals';
import { SearchPlaceIndexForTextCommand } from '@aws-sdk/client-location';
import { AwsLocationGeocoder, OfflineGeocoder } from '../../../shared/adapters/geocoders.js';
import { MaxmindIpLocator } from '../../../shared/adapters/ip-locator.js';
import { ForbiddenError } from '../../../shared/domain/errors.js';
import {
  billableLookups,
  checkAddressLookups,
  locationFields,
  resolveLocation,
  type LocationServices,
} from '../../../shared/domain/location.js';

/** A Location Service client that answers from a list and remembers what it was asked. */
function fakeClient(results: unknown[]) {
  const sent: SearchPlaceIndexForTextCommand[] = [];
  return {
    sent,
    send: (command: SearchPlaceIndexForTextCommand) => {
      sent.push(command);
      return Promise.resolve({ Results: results });
    },
  };
}

const sydney = {
  Place: {
    Municipality: 'Sydney',
    Region: 'New South Wales',
    Country: 'AUS',
    PostalCode: '2000',
    Geometry: { Point: [151.2, -33.87] },
  },
};
const melbourne = {
  Place: { Municipality: 'Melbourne', Region: 'Victoria', Country: 'AUS', PostalCode: '3000' },
};

describe('AwsLocationGeocoder', () => {
  it('searches the place index and maps the first match', async () => {
    const client = fakeClient([sydney]);
    const geocoder = new AwsLocationGeocoder(client as never, 'cdp-au-places');
    expect(
      await geocoder.geocode({ address: '1 Martin Place Sydney', country: 'aus', language: 'en' }),
    ).toEqual({
      source: 'address',
      city: 'Sydney',
      region: 'New South Wales',
      country: 'AUS',
      postal_code: '2000',
      lat: -33.87,
      lng: 151.2,
    });
    expect(client.sent[0]?.input).toEqual({
      IndexName: 'cdp-au-places',
      Text: '1 Martin Place Sydney',
      MaxResults: 5,
      FilterCountries: ['AUS'],
      Language: 'en',
    });
  });

  it('ignores matches outside the postal code filter', async () => {
    const geocoder = new AwsLocationGeocoder(fakeClient([sydney, melbourne]) as never, 'index');
    expect((await geocoder.geocode({ address: 'Collins St', postal_code: '3000' }))?.city).toBe(
      'Melbourne',
    );
    expect(await geocoder.geocode({ address: 'Collins St', postal_code: '4000' })).toBeUndefined();
  });
});

describe('OfflineGeocoder', () => {
  const geocoder = new OfflineGeocoder();
  it('finds a known city and honours country, postal code and region boost', async () => {
    expect((await geocoder.geocode({ address: 'Perth', country: 'AU' }))?.region).toBe(
      'Western Australia',
    );
    expect((await geocoder.geocode({ address: 'Perth', country: 'United Kingdom' }))?.region).toBe(
      'Scotland',
    );
    expect((await geocoder.geocode({ address: 'Perth', boost_region: 'gb' }))?.country).toBe(
      'United Kingdom',
    );
    expect(await geocoder.geocode({ address: 'Sydney', country: 'FR' })).toBeUndefined();
    expect(await geocoder.geocode({ address: 'Sydney', postal_code: '3000' })).toBeUndefined();
    expect(await geocoder.geocode({ address: 'Atlantis' })).toBeUndefined();
  });
});

describe('MaxmindIpLocator', () => {
  it('locates IPv4 and IPv6 addresses offline', async () => {
    const locator = new MaxmindIpLocator();
    expect(await locator.locate('203.2.218.214')).toMatchObject({
      city: 'Sydney',
      region: 'New South Wales',
      country: 'Australia',
      source: 'ip',
    });
    expect((await locator.locate('2001:4860:4860::8888'))?.country).toBe('United States');
    expect(await locator.locate('10.0.0.1')).toBeUndefined();
  });
});

describe('resolving a location', () => {
  const calls: string[] = [];
  const services: LocationServices = {
    ipLocator: {
      locate: (ip) => (
        calls.push(`ip ${ip}`),
        Promise.resolve({ source: 'ip', country: 'IP land' })
      ),
    },
    geocoder: {
      geocode: (q) => (
        calls.push(`address ${q.address}`),
        Promise.resolve(
          q.address === 'nowhere' ? undefined : { source: 'address', city: 'Geo city' },
        )
      ),
    },
    meter: { record: (id, n) => (calls.push(`meter ${id} ${n}`), Promise.resolve()) },
  };

  it('prefers custom, then address, then IP, falling back when nothing is found', async () => {
    const now = new Date();
    expect(
      await resolveLocation(
        { custom: { city_name: 'C' }, source_ip: '1.1.1.1' },
        'i',
        services,
        now,
      ),
    ).toEqual({ source: 'custom', city: 'C' });
    expect(
      (
        await resolveLocation(
          { address: { address: 'x' }, source_ip: '1.1.1.1' },
          'i',
          services,
          now,
        )
      )?.city,
    ).toBe('Geo city');
    expect(
      (
        await resolveLocation(
          { address: { address: 'nowhere' }, source_ip: '1.1.1.1' },
          'i',
          services,
          now,
        )
      )?.country,
    ).toBe('IP land');
    expect(calls).toEqual(['address x', 'meter i 1', 'address nowhere', 'meter i 1', 'ip 1.1.1.1']);
    expect(locationFields({ source: 'ip', city: 'A', country: 'B' })).toEqual({
      'geo::city': { name: 'A' },
      'geo::country': { name: 'B' },
    });
  });

  it('refuses address lookups below the Business plan', () => {
    expect(() => {
      checkAddressLookups([{ address: { address: 'x' } }], 'professional');
    }).toThrow(ForbiddenError);
    expect(() => {
      checkAddressLookups([{ source_ip: '1.1.1.1' }], 'free');
    }).not.toThrow();
    expect(() => {
      checkAddressLookups([{ address: { address: 'x' } }], 'enterprise');
    }).not.toThrow();
  });

  it('bills lookups rounded up to the next 1000', () => {
    expect([0, 1, 999, 1000, 1001].map(billableLookups)).toEqual([0, 1000, 1000, 1000, 2000]);
  });
});
