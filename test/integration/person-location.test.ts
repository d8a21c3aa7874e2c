import { describe, expect, it } from '@jest/globals';
import { adminEnv, run } from './cli.js';
import { KEYS, call } from './stack.js';
import { fieldsOf, mergeOne, uniqueEmail } from './people.js';

const key = KEYS.people; // a Business-plan instance
const GEO = ['geo::city', 'geo::region', 'geo::country'];

describe('person merge: location', () => {
  it('uses a custom location as given', async () => {
    const { person_id } = await mergeOne(key, {
      fields: { 'str::email': uniqueEmail() },
      location: {
        custom: {
          city_name: 'Hobart',
          region_name: 'Tasmania',
          country_name: 'Australia',
          lat: -42.88,
          lng: 147.32,
        },
      },
    });
    expect(await fieldsOf(key, person_id ?? '', GEO)).toEqual({
      'geo::city': { name: 'Hobart' },
      'geo::region': { name: 'Tasmania' },
      'geo::country': { name: 'Australia' },
    });
  });

  it('looks up source_ip in the offline database', async () => {
    const { person_id } = await mergeOne(key, {
      fields: { 'str::email': uniqueEmail() },
      location: { source_ip: '203.2.218.214' },
    });
    expect(await fieldsOf(key, person_id ?? '', GEO)).toEqual({
      'geo::city': { name: 'Sydney' },
      'geo::region': { name: 'New South Wales' },
      'geo::country': { name: 'Australia' },
    });
    const us = await mergeOne(key, {
      fields: { 'str::email': uniqueEmail() },
      location: { source_ip: '8.8.8.8' },
    });
    expect(await fieldsOf(key, us.person_id ?? '', GEO)).toEqual({
      'geo::country': { name: 'United States' },
    });
  });

  it('lets the most specific member win, and fields sent explicitly win over it', async () => {
    const { person_id } = await mergeOne(key, {
      fields: { 'str::email': uniqueEmail(), 'geo::region': { name: 'Given' } },
      location: { source_ip: '8.8.8.8', custom: { city_name: 'Custom City' } },
    });
    expect(await fieldsOf(key, person_id ?? '', GEO)).toEqual({
      'geo::city': { name: 'Custom City' },
      'geo::region': { name: 'Given' },
    });
  });

  it('geocodes an address on the Business plan, honouring the filters', async () => {
    const { person_id } = await mergeOne(key, {
      fields: { 'str::email': uniqueEmail() },
      location: { address: { address: '1 Main Street, Perth', country: 'GB' } },
    });
    expect(await fieldsOf(key, person_id ?? '', GEO)).toEqual({
      'geo::city': { name: 'Perth' },
      'geo::region': { name: 'Scotland' },
      'geo::country': { name: 'United Kingdom' },
    });
    // Outside the postal-code filter: ignored, and the IP address is used instead.
    const filtered = await mergeOne(key, {
      fields: { 'str::email': uniqueEmail() },
      location: {
        address: { address: '1 George Street, Sydney', postal_code: '3000' },
        source_ip: '8.8.8.8',
      },
    });
    expect(await fieldsOf(key, filtered.person_id ?? '', GEO)).toEqual({
      'geo::country': { name: 'United States' },
    });
  });

  it('counts address lookups for billing, reported by the admin CLI', async () => {
    const env = adminEnv();
    const before = await run(['local/admin.ts', 'usage', '--instance', 'people'], env);
    const count = (text: string) => Number(/: (\d+)\n/.exec(text)?.[1] ?? NaN);
    await mergeOne(key, {
      fields: { 'str::email': uniqueEmail() },
      location: { address: { address: 'Berlin' } },
    });
    const after = await run(['local/admin.ts', 'usage', '--instance', 'people'], env);
    expect(count(after.stdout)).toBe(count(before.stdout) + 1);
    expect(after.stdout).toMatch(/Billable \(rounded up to the next 1000\): 1000/);
  });

  it('refuses address lookups below the Business plan with 403, writing nothing', async () => {
    const email = uniqueEmail();
    const response = await call('/v1/person/merge', {
      key: KEYS.freeplan,
      body: {
        people: [
          { fields: { 'str::email': email } },
          { fields: { 'str::email': uniqueEmail() }, location: { address: { address: 'Paris' } } },
        ],
      },
    });
    expect(response.status).toBe(403);
    expect(response.body.error).toMatch(
      /Address lookup \(location\.address\) requires the Business plan or higher; this instance is on the free plan/,
    );
    expect((await mergeOne(KEYS.freeplan, { fields: { 'str::email': email } })).status).toBe(
      'created',
    );
  });

  it('reports a malformed location for that record only', async () => {
    const response = await call('/v1/person/merge', {
      key,
      body: {
        people: [
          { fields: { 'str::email': uniqueEmail() }, location: { source_ip: 'not-an-ip' } },
          { fields: { 'str::email': uniqueEmail() }, location: { custom: { lat: 123 } } },
          { fields: { 'str::email': uniqueEmail() }, location: null },
        ],
      },
    });
    expect(response.status).toBe(200);
    expect(response.body.people).toEqual([
      {
        status: 'invalid',
        error: 'people[0].location.source_ip: expected an IPv4 or IPv6 address',
      },
      {
        status: 'invalid',
        error: expect.stringMatching(/^people\[1\]\.location\.custom\.lat: /) as unknown,
      },
      { person_id: expect.any(String) as unknown, status: 'created' },
    ]);
  });
});
