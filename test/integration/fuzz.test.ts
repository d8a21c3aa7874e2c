import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { LinkSigner } from '../../shared/domain/email/link-tokens.js';
import { singleKeyring } from '../../shared/domain/signing-keys.js';
import { TIME_ZONES } from '../../shared/domain/timezones.js';
import { TABLES, tableName } from '../../shared/resources.js';
import { ROUTES, routeKey, type RouteDefinition } from '../../shared/routes.js';
import { adminEnv, run } from './cli.js';
import { baseUrl, stackDb } from './stack.js';
import { consoleUser, signIn } from './console/sign-in.js';
import { checkedFetch } from '../contract.js';

/**
 * Bad input, fuzzed: generated malformed bodies to every route of the routes
 * table, the public email links included. Every body is built to be invalid in one known way
 * (a member of the wrong type, missing, out of range, too long, a wrong field ID, a bad time
 * zone, bad base64, a lone surrogate, invalid UTF-8, a prototype key, too deep, truncated),
 * so every answer must be the error envelope with a 4xx (the spec's 500 for a bad time zone),
 * its message naming what was broken, and nothing may be written.
 *
 * The requests go to an instance of their own (`fuzz`, applied below), whose rate limit is
 * high enough for thousands of requests a second and whose items are counted alone (the
 * other test files write to the same stack at the same time).
 */
const INSTANCE = 'fuzz';
const KEY = 'test-key-32-characters-or-more-fuzz';
/**
 * 100 bodies for each of the 60 routes: 6,000 bodies in about 45 s on two cores (200 took 90 s
 * alone and up to 166 s in CI, against its 45-minute budget). The tally printed after the run
 * says how many kinds of breakage (`jsonCases`) each route met; `CDP_FUZZ_RUNS` runs more (or
 * fewer) locally.
 */
const RUNS_PER_ROUTE = Number(process.env.CDP_FUZZ_RUNS ?? 100);

const CONFIG = {
  instances: [
    {
      id: INSTANCE,
      name: 'Fuzz',
      region: 'default',
      plan: 'business',
      transactional_email: true,
      sending_domains: ['mail.fuzz.test'],
      rate_limit: { requests_per_second: 10_000, burst: 100_000 },
      data_sources: [{ name: 'Fuzzer', api_key: KEY }],
      person_fields: [
        { id: 'str:cm:colour', name: 'Colour' },
        {
          id: 'str:cm:fuzz-select',
          name: 'Fuzz select',
          display_type: 'single_select',
          values: ['A'],
        },
      ],
      organization_fields: [
        { id: 'int:oc:size', name: 'Size' },
        {
          id: 'str:oc:fuzz-select',
          name: 'Fuzz select',
          display_type: 'single_select',
          values: ['A'],
        },
      ],
      activities: [
        {
          id: 'act:cm:bought',
          name: 'Bought',
          attributes: [
            { id: 'str:cm:item', name: 'Item' },
            { id: 'dtz:cm:when', name: 'When', kind: 'date' },
          ],
        },
        {
          id: 'act:oc:booked',
          name: 'Booked',
          attributes: [{ id: 'dtz:cm:when', name: 'When', kind: 'date' }],
        },
      ],
    },
  ],
};

/** JSON text spliced in as is: numbers JSON.stringify cannot write (`1e400`), duplicate keys. */
class Raw {
  constructor(readonly text: string) {}
}
/** An object written with its entries in order, duplicates included. */
class Entries {
  constructor(readonly entries: readonly (readonly [string, unknown])[]) {}
}

function toJson(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof Entries) {
    return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(',')}}`;
  }
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (typeof value === 'object' && value !== null)
    return toJson(new Entries(Object.entries(value)));
  // JSON.stringify answers undefined for undefined (and functions), whatever its type says.
  const text = JSON.stringify(value) as string | undefined;
  return text ?? 'null';
}

/** What a case expects: a 4xx naming `mention`, or the spec's 500 for a time zone. */
interface Case {
  kind: string;
  body?: unknown;
  /** The body as bytes (invalid UTF-8, truncations), instead of `body`. */
  bytes?: Buffer;
  mention: string | RegExp;
  timeZone?: boolean;
  /** The public links: the query string. */
  query?: string;
}

const MARKER = 'ZZBADUTF8ZZ';
const INVALID_UTF8 = [
  Buffer.from([0xff]),
  Buffer.from([0xc0, 0x80]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xe2, 0x82]),
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
  Buffer.from([0x80, 0xbf]),
];

/** Member names no schema knows, prototype-ish ones first (`__proto__` has its own case). */
const extraKey = fc.oneof(
  fc.constantFrom('constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'),
  fc.string({ minLength: 1, maxLength: 12 }).map((s) => `x_${s}`),
);
const scalar = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.string({ maxLength: 8 }));
const smallJson = fc.oneof(
  scalar,
  fc.array(scalar, { maxLength: 3 }),
  fc.dictionary(extraKey, scalar, { maxKeys: 3 }),
);

type JsonType = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object';
const BY_TYPE: Record<JsonType, fc.Arbitrary<unknown>> = {
  string: fc.string({ maxLength: 20 }),
  number: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
  boolean: fc.boolean(),
  null: fc.constant(null),
  array: fc.array(scalar, { maxLength: 3 }),
  object: fc.dictionary(extraKey, scalar, { maxKeys: 3 }),
};
/** A value of none of `allowed`'s JSON types. */
const wrongType = (...allowed: JsonType[]) =>
  fc.oneof(
    ...(Object.keys(BY_TYPE) as JsonType[])
      .filter((type) => !allowed.includes(type))
      .map((type) => BY_TYPE[type]),
  );
/**
 * A string of `min` to `max` characters, cheap to make however long. Characters, not UTF-16
 * units: the schemas' limits count code points (an emoji is one).
 */
const longString = (min: number, max: number) =>
  fc
    .tuple(fc.integer({ min, max }), fc.constantFrom('x', 'é', '😀', ' ', '\\', '"'))
    .map(([length, char]) => char.repeat(length));
/** Integers and numbers outside `[min, max]` or not whole, `1e400` (Infinity) included. */
const badInteger = (min: number, max: number) =>
  fc.oneof(
    wrongType('number'),
    fc.integer({ max: min - 1 }),
    fc.integer({ min: max + 1 }),
    fc.double({ min: min - 1, max: max + 1, noNaN: true }).filter((n) => !Number.isInteger(n)),
    fc.constantFrom(new Raw('1e400'), new Raw('-1e400'), 2 ** 53 + 2, 1e308, new Raw('1.5e0')),
  );
/** Strings with a lone UTF-16 surrogate somewhere. */
const loneSurrogate = fc
  .tuple(
    fc.string({ maxLength: 6 }),
    fc.integer({ min: 0xd800, max: 0xdfff }),
    fc.string({ maxLength: 6 }),
  )
  .map(([before, unit, after]) => `${before}${String.fromCharCode(unit)}${after}`);
/** Nested arrays deeper than the body parser takes. */
const tooDeep = fc
  .integer({ min: 65, max: 20_000 })
  .map((depth) => new Raw(`${'['.repeat(depth)}${']'.repeat(depth)}`));
const badTimeZone = fc
  .oneof(
    fc.string({ maxLength: 30 }),
    fc.constantFrom('Mars/Olympus', 'utc', 'Europe/Berlin ', 'GMT+25', 'Europe/../etc/passwd'),
  )
  .filter((zone) => !TIME_ZONES.has(zone));
/** Times that are not ISO 8601 with an offset, or not a day that exists. */
const badTime = fc.oneof(
  fc.string({ maxLength: 20 }).filter((s) => !/^\d{4}-/.test(s)),
  fc.constantFrom(
    'yesterday',
    '2026-11-24',
    '2026-11-24T10:00:00',
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '1732442400',
  ),
);
const hexId = fc.stringMatching(/^[0-9a-f]{24}$/);
const notHexId = fc.oneof(
  wrongType('string'),
  fc.string({ maxLength: 30 }).filter((s) => !/^[0-9a-f]{24}$/.test(s)),
  fc.constantFrom('0'.repeat(23), `${'a'.repeat(24)} `, 'A'.repeat(24)),
);
/** Field IDs that are none of the instance's: malformed, unknown built-ins, undeclared, prototype names. */
const wrongFieldId = fc.oneof(
  fc.constantFrom(
    'str::nope',
    'xyz:cm:a',
    'str:cm:undeclared',
    'int::',
    '::',
    'constructor',
    'prototype',
    'toString',
    'str:xx:a',
    'STR::email',
  ),
  fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/^[a-z]{3}:[a-z]*:/.test(s)),
  longString(300, 5_000).map((s) => `str::${s}`),
);

/** One member of a request: how to break it, and whether leaving it out breaks the request. */
interface Member {
  name: string;
  required?: boolean;
  invalid: fc.Arbitrary<unknown>;
}

interface RouteFuzz {
  /** A valid body (or a function of a unique suffix, for bodies that would write). */
  base: (unique: string) => Record<string, unknown>;
  members: Member[];
  /** Cases particular to the route (records, field IDs, time zones, attachments). */
  special?: (unique: string) => fc.Arbitrary<Case>;
  /** A constrained string member, for invalid UTF-8 where no member is required. */
  utf8Member?: string;
}

const personGetLike: Member[] = [
  { name: 'limit', invalid: badInteger(1, 500) },
  { name: 'offset', invalid: badInteger(0, 10_000_000) },
  { name: 'cursor_id', invalid: fc.oneof(wrongType('string'), longString(2001, 5000)) },
  {
    name: 'sort_order',
    invalid: fc.oneof(
      wrongType('string'),
      fc.string().filter((s) => !['asc', 'desc'].includes(s)),
    ),
  },
  { name: 'fields', invalid: wrongType('array') },
  { name: 'q', invalid: fc.oneof(wrongType('string'), longString(256, 10_000)) },
];

const email = (unique: string) => `fuzz-${unique}@example.com`;
const dtzBad = fc.record({
  year: fc.integer({ min: 1990, max: 2020 }),
  month: fc.integer({ min: 1, max: 12 }),
  day: fc.integer({ min: 1, max: 28 }),
  timezone: badTimeZone,
});
const dtzBroken = fc.oneof(
  // null clears the field: valid.
  wrongType('object', 'null'),
  fc.record({
    year: badInteger(1, 9999),
    month: fc.constant(1),
    day: fc.constant(1),
    timezone: fc.constant('UTC'),
  }),
  fc.record({
    year: fc.constant(2000),
    month: badInteger(1, 12),
    day: fc.constant(1),
    timezone: fc.constant('UTC'),
  }),
  fc.record({
    year: fc.constant(2001),
    month: fc.constant(2),
    day: fc.integer({ min: 29, max: 99 }),
    timezone: fc.constant('UTC'),
  }),
  fc.record({
    year: fc.constant(2000),
    month: fc.constant(1),
    day: fc.constant(1),
    timezone: wrongType('string'),
  }),
);

/** Cases breaking one field of a record's `fields` (`path` is where the record's fields are). */
function fieldCases(
  path: string,
  record: (fields: Record<string, unknown>) => unknown,
  unique: string,
) {
  const withFields = (extra: Record<string, unknown>) =>
    record({ 'str::email': email(unique), ...extra });
  return fc.oneof(
    wrongFieldId.map((id) => ({
      kind: 'wrong field ID',
      body: withFields({ [id]: 'x' }),
      mention: `${path}.${id}`.slice(0, 200),
    })),
    fc
      .record({
        field: fc.constantFrom('str::email', 'str::first', 'str:cm:colour'),
        // null clears a field: valid.
        value: wrongType('string', 'null'),
      })
      .map(({ field, value }) => ({
        kind: 'field of the wrong type',
        body: record({ 'str::email': email(unique), [field]: value }),
        mention: `${path}.${field}`,
      })),
    fc
      .oneof(
        longString(300, 5_000),
        fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !s.includes('@')),
      )
      .map((value) => ({
        kind: 'bad email',
        body: record({ 'str::email': value }),
        mention: `${path}.str::email`,
      })),
    dtzBad.map((value) => ({
      kind: 'bad time zone',
      body: withFields({ 'dtz::b': value }),
      mention: 'dtz::b',
      timeZone: true,
    })),
    dtzBroken.map((value) => ({
      kind: 'bad date',
      body: withFields({ 'dtz::b': value }),
      mention: `${path}.dtz::b`,
    })),
  );
}

/** Archive, restore and delete: IDs nobody holds, so even a well-formed body changes nothing. */
const lifecycle: RouteFuzz = {
  base: () => ({ inclusion_ids: ['0'.repeat(24)] }),
  members: [
    {
      name: 'inclusion_ids',
      required: true,
      invalid: fc.oneof(
        wrongType('array'),
        fc.constant([]),
        fc.array(notHexId, { minLength: 1, maxLength: 3 }),
        fc.constant(Array.from({ length: 101 }, () => '0'.repeat(24))),
      ),
    },
    { name: 'all_rows_selected', invalid: fc.oneof(wrongType('boolean'), fc.constant(false)) },
    { name: 'exclusion_ids', invalid: fc.oneof(wrongType('array'), fc.constant([])) },
  ],
};
const LIFECYCLE_ROUTES = [
  'PUT /v1/person/archive',
  'PUT /v1/person/restore',
  'DELETE /v1/person/delete',
  'PUT /v1/organizations/archive',
  'PUT /v1/organizations/restore',
  'DELETE /v1/organizations/delete',
  'PUT /v1/accounts/archive',
  'PUT /v1/accounts/restore',
  'DELETE /v1/accounts/delete',
];

/** The custom-field create routes (people, accounts, organizations): a new field per body. */
const customFieldCreate: RouteFuzz = {
  base: (u) => ({ name: `Fuzz ${u}`, type: 'text' }),
  members: [
    {
      name: 'name',
      required: true,
      invalid: fc.oneof(wrongType('string'), fc.constant('  '), longString(256, 2000)),
    },
    {
      name: 'type',
      required: true,
      invalid: fc.oneof(wrongType('string'), fc.constantFrom('', 'Text', 'texty', 'str')),
    },
    { name: 'values', invalid: fc.oneof(wrongType('array'), fc.constant(['A'])) },
    { name: 'track_changes', invalid: wrongType('boolean') },
  ],
};

/** The custom-field update routes: a select field of the instance's kind. */
function customFieldUpdate(fieldId: string): RouteFuzz {
  return {
    base: () => ({ field_id: fieldId, add_values: ['Fuzzed'] }),
    members: [
      {
        name: 'field_id',
        required: true,
        invalid: fc.oneof(
          wrongType('string'),
          fc.constantFrom('', 'str::email', 'str:cm:nobody-has-it', 'int:o:employees'),
        ),
      },
      { name: 'replace_values', invalid: fc.oneof(wrongType('array'), fc.constant([])) },
      { name: 'remove_values', invalid: wrongType('array') },
      { name: 'track_changes', invalid: wrongType('boolean') },
    ],
  };
}

/** The console's routes: an instance named by its ID (the signed-in admin may manage all). */
const consoleInstance: Member = {
  name: 'instance_id',
  required: true,
  invalid: fc.oneof(wrongType('string'), fc.constant(''), longString(65, 500)),
};

/** The console's custom fields: of people or of organizations. */
const consoleFieldKind = fc.oneof(wrongType('string'), fc.constantFrom('', 'people', 'account'));

const ROUTE_FUZZ: Record<string, RouteFuzz> = {
  'POST /console/v1/instances/get': { base: () => ({}), members: [] },
  'POST /console/v1/keys/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [consoleInstance],
  },
  'POST /console/v1/keys/create': {
    base: () => ({ instance_id: 'acme', data_source: 'Website' }),
    members: [
      consoleInstance,
      {
        name: 'data_source',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant(''), longString(101, 500)),
      },
    ],
  },
  'PUT /console/v1/keys/revoke': {
    base: () => ({ instance_id: 'acme', key_hash: '0'.repeat(64) }),
    members: [
      consoleInstance,
      {
        name: 'key_hash',
        required: true,
        invalid: fc.oneof(
          wrongType('string'),
          fc.string({ maxLength: 70 }).filter((s) => !/^[0-9a-f]{64}$/.test(s)),
          fc.constant('A'.repeat(64)),
        ),
      },
    ],
  },
  'POST /console/v1/activities/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [consoleInstance],
  },
  ...Object.fromEntries(
    ['POST /console/v1/activities/create', 'PUT /console/v1/activities/modify'].map((route) => [
      route,
      {
        base: () => ({
          instance_id: 'acme',
          definition: { id: 'act:cm:purchased', name: 'Purchased' },
        }),
        members: [
          consoleInstance,
          {
            name: 'definition',
            required: true,
            invalid: fc.oneof(
              wrongType('object'),
              fc.constant({}),
              fc.constant({ id: 'act:cm:Not Kebab', name: 'x' }),
              fc.constant({ id: 'act:cm:ok', name: 'x', attributes: 'none' }),
            ),
          },
        ],
      },
    ]),
  ),
  'PUT /console/v1/activities/archive': {
    base: () => ({ instance_id: 'acme', activity_field_id: 'act:cm:purchased' }),
    members: [
      consoleInstance,
      {
        name: 'activity_field_id',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant(''), longString(256, 500)),
      },
    ],
  },
  'POST /console/v1/data-sources/create': {
    base: () => ({
      instance_id: 'acme',
      data_source: { name: 'Fuzzed', merge_by: ['str::email'] },
    }),
    members: [
      consoleInstance,
      {
        name: 'data_source',
        required: true,
        invalid: fc.oneof(
          wrongType('object'),
          fc.constant({}),
          fc.constant({ name: 'x', merge_by: [] }),
          fc.constant({ name: 'x', merge_strategy: 4 }),
        ),
      },
    ],
  },
  'PUT /console/v1/data-sources/modify': {
    base: () => ({
      instance_id: 'acme',
      data_source: {
        name: 'Fuzzed',
        merge_by: ['str::email'],
        merge_strategy: 2,
        find_strategy: 0,
      },
    }),
    members: [
      consoleInstance,
      {
        name: 'data_source',
        required: true,
        invalid: fc.oneof(
          wrongType('object'),
          fc.constant({}),
          fc.constant({ name: 'x', merge_by: [], merge_strategy: 2, find_strategy: 0 }),
          fc.constant({ name: 'x', merge_by: ['str::email'], merge_strategy: 4, find_strategy: 0 }),
          fc.constant({ name: 'x', merge_by: ['str::email'], merge_strategy: 2 }),
          fc.constant({ name: '', merge_by: ['str::email'], merge_strategy: 2, find_strategy: 0 }),
        ),
      },
    ],
  },
  'POST /console/v1/people/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [
      consoleInstance,
      { name: 'q', invalid: fc.oneof(wrongType('string'), longString(256, 2000)) },
      { name: 'filter', invalid: wrongType('object') },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'offset', invalid: badInteger(0, 10_000_000) },
    ],
    // A filter the parser refuses (after the body's shape passed), alone in a valid body.
    special: () =>
      fc
        .constantFrom(
          { $and: [] },
          { '$str::sounds_like': { field_id: 'str::first', value: 'x' } },
          { $and: [{ '$str::is': { field_id: 'str:cm:nope', value: 'x' } }] },
        )
        .map((filter) => ({
          kind: 'malformed filter',
          body: { instance_id: 'acme', filter },
          mention: 'filter',
        })),
  },
  'POST /console/v1/emails/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [
      consoleInstance,
      { name: 'person_id', invalid: notHexId },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'before', invalid: notHexId },
    ],
  },
  'POST /console/v1/emails/preview': {
    base: () => ({ instance_id: 'acme', message_id: '0'.repeat(24) }),
    members: [consoleInstance, { name: 'message_id', required: true, invalid: notHexId }],
  },
  'POST /console/v1/webhooks/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [consoleInstance],
  },
  'POST /console/v1/webhooks/attempts': {
    base: () => ({ instance_id: 'acme', webhook_id: '0'.repeat(24) }),
    members: [
      consoleInstance,
      { name: 'webhook_id', required: true, invalid: notHexId },
      {
        name: 'status',
        invalid: fc.oneof(wrongType('string'), fc.constantFrom('', 'ok', 'SUCCEEDED')),
      },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'cursor_id', invalid: fc.oneof(wrongType('string'), longString(2001, 3000)) },
    ],
  },
  'POST /console/v1/webhooks/replay': {
    base: () => ({
      instance_id: 'acme',
      webhook_id: '0'.repeat(24),
      event_id: `msg_${'0'.repeat(32)}`,
    }),
    members: [
      consoleInstance,
      { name: 'webhook_id', required: true, invalid: notHexId },
      {
        name: 'event_id',
        required: true,
        invalid: fc.oneof(
          wrongType('string'),
          fc.constantFrom('', 'msg_', `msg_${'g'.repeat(32)}`),
        ),
      },
    ],
  },
  'PUT /console/v1/webhooks/rotate': {
    base: () => ({ instance_id: 'acme', webhook_id: '0'.repeat(24) }),
    members: [consoleInstance, { name: 'webhook_id', required: true, invalid: notHexId }],
  },
  'POST /console/v1/people/profile': {
    base: () => ({ instance_id: 'acme', person_id: '0'.repeat(24) }),
    members: [consoleInstance, { name: 'person_id', required: true, invalid: notHexId }],
  },
  'POST /console/v1/organizations/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [
      consoleInstance,
      { name: 'q', invalid: fc.oneof(wrongType('string'), longString(256, 2000)) },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'offset', invalid: badInteger(0, 10_000_000) },
      { name: 'cursor_id', invalid: fc.oneof(wrongType('string'), longString(2001, 3000)) },
    ],
  },
  'POST /console/v1/organizations/profile': {
    base: () => ({ instance_id: 'acme', organization_id: '0'.repeat(24) }),
    members: [
      consoleInstance,
      { name: 'organization_id', required: true, invalid: notHexId },
      { name: 'limit', invalid: badInteger(1, 100) },
    ],
  },
  'POST /console/v1/audiences/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [
      consoleInstance,
      { name: 'archived', invalid: wrongType('boolean') },
      { name: 'search_term', invalid: fc.oneof(wrongType('string'), longString(256, 600)) },
      { name: 'offset', invalid: badInteger(0, 100) },
    ],
  },
  'POST /console/v1/audiences/create': {
    base: (u) => ({
      instance_id: 'acme',
      name: `fuzz ${u}`,
      filter: { $and: [{ '$str::is': { field_id: 'str::first', value: u } }] },
    }),
    members: [
      consoleInstance,
      {
        name: 'name',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant('  '), longString(256, 600)),
      },
      { name: 'filter', required: true, invalid: fc.oneof(wrongType('object')) },
      { name: 'exit_filter', invalid: wrongType('object', 'null') },
    ],
    // A filter the parser refuses (after the body's shape passed), alone in a valid body.
    special: (u) =>
      fc
        .constantFrom(
          { filter: { $and: [] } },
          { filter: { '$str::sounds_like': { field_id: 'str::first', value: 'x' } } },
          { filter: { $and: [{ '$int::is': { field_id: 'str::first', value: 1 } }] } },
          { filter: { $and: [{ '$str::is': { field_id: 'str:cm:nope', value: 'x' } }] } },
          { exit_filter: {} },
        )
        .map((body) => ({
          kind: 'malformed filter',
          body: {
            instance_id: 'acme',
            name: `fuzz ${u}`,
            filter: { $and: [{ '$str::is': { field_id: 'str::first', value: u } }] },
            ...body,
          },
          mention: 'exit_filter' in body ? 'exit_filter' : 'filter',
        })),
  },
  'PUT /console/v1/audiences/archive': {
    base: () => ({ instance_id: 'acme', audience_id: '0'.repeat(24) }),
    members: [consoleInstance, { name: 'audience_id', required: true, invalid: notHexId }],
  },
  'POST /console/v1/audiences/members': {
    base: () => ({ instance_id: 'acme', audience_id: '0'.repeat(24) }),
    members: [
      consoleInstance,
      { name: 'audience_id', required: true, invalid: notHexId },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'offset', invalid: badInteger(0, 10_000_000) },
    ],
  },
  'POST /console/v1/audit/get': {
    base: () => ({ instance_id: 'acme' }),
    members: [
      consoleInstance,
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'before', invalid: fc.oneof(wrongType('string'), fc.string({ maxLength: 30 })) },
    ],
  },
  'POST /console/v1/instances/overview': {
    base: () => ({ instance_id: INSTANCE }),
    members: [consoleInstance],
  },
  'POST /console/v1/fields/get': {
    base: () => ({ instance_id: INSTANCE }),
    members: [consoleInstance],
  },
  'POST /console/v1/fields/create': {
    base: (u) => ({ instance_id: INSTANCE, kind: 'person', name: `Fuzz ${u}`, type: 'text' }),
    members: [
      consoleInstance,
      { name: 'kind', required: true, invalid: consoleFieldKind },
      // The body is strict here: a rule of the configuration (options only for a select) is
      // checked after its shape, so it is a case of its own, alone in a valid body.
      ...customFieldCreate.members.map((member) =>
        member.name === 'values' ? { ...member, invalid: wrongType('array') } : member,
      ),
    ],
    special: (u) =>
      fc.constant({
        kind: 'options of a text field',
        body: {
          instance_id: INSTANCE,
          kind: 'person',
          name: `Fuzz ${u}`,
          type: 'text',
          values: ['A'],
        },
        mention: 'values',
      }),
  },
  'PUT /console/v1/fields/modify': {
    base: () => ({
      instance_id: INSTANCE,
      kind: 'person',
      field_id: 'str:cm:fuzz-select',
      add_values: ['Fuzzed'],
    }),
    members: [
      consoleInstance,
      { name: 'kind', required: true, invalid: consoleFieldKind },
      {
        name: 'field_id',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant(''), longString(256, 500)),
      },
      { name: 'add_values', invalid: fc.oneof(wrongType('array'), fc.constant([''])) },
      { name: 'track_changes', invalid: wrongType('boolean') },
    ],
    // The body is strict: a field the configuration does not have (or not as a custom field
    // of this kind) is refused after the shape, so each is a case alone in a valid body.
    special: () =>
      fc
        .constantFrom('str::email', 'str:cm:nobody-has-it', 'str:oc:fuzz-select')
        .map((field_id) => ({
          kind: 'not a custom field of this kind',
          body: { instance_id: INSTANCE, kind: 'person', field_id, add_values: ['Fuzzed'] },
          mention: 'field_id',
        })),
  },
  ...Object.fromEntries(LIFECYCLE_ROUTES.map((route) => [route, lifecycle])),
  'POST /v1/person/merge': {
    base: (u) => ({ people: [{ fields: { 'str::email': email(u) } }] }),
    members: [
      {
        name: 'people',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(scalar, { minLength: 101, maxLength: 120 }),
        ),
      },
      { name: 'async', invalid: wrongType('boolean') },
      {
        name: 'merge_by',
        invalid: fc.oneof(wrongType('array'), fc.constant([]), fc.constant(['str::nope'])),
      },
      { name: 'merge_strategy', invalid: badInteger(1, 3) },
      { name: 'find_strategy', invalid: badInteger(0, 2) },
      { name: 'skip_non_existing', invalid: wrongType('boolean') },
    ],
    special: (u) =>
      fc.oneof(
        fieldCases('people[0].fields', (fields) => ({ people: [{ fields }] }), u),
        wrongType('object').map((value) => ({
          kind: 'record of the wrong type',
          body: { people: [value] },
          mention: 'people[0]',
        })),
        fc.constantFrom('tags', 'unset_tags').chain((name) =>
          fc
            .oneof(
              wrongType('array'),
              fc.array(longString(256, 1000), { minLength: 1, maxLength: 2 }),
            )
            .map((value) => ({
              kind: 'bad tags',
              body: { people: [{ fields: { 'str::email': email(u) }, [name]: value }] },
              mention: `people[0].${name}`,
            })),
        ),
      ),
  },
  'POST /v1/organizations/merge': {
    base: (u) => ({
      organizations: [{ fields: { 'str:o:name': `Fuzz ${u}` } }],
      merge_by: ['str:o:name'],
    }),
    members: [
      {
        name: 'organizations',
        required: true,
        invalid: fc.oneof(wrongType('array'), fc.constant([])),
      },
      {
        name: 'merge_by',
        required: true,
        invalid: fc.oneof(wrongType('array'), fc.constant([]), fc.constant(['str::email'])),
      },
      { name: 'async', invalid: wrongType('boolean') },
      { name: 'merge_strategy', invalid: badInteger(1, 3) },
    ],
    special: (u) =>
      fc.oneof(
        wrongFieldId.map((id) => ({
          kind: 'wrong field ID',
          body: {
            organizations: [{ fields: { 'str:o:name': `Fuzz ${u}`, [id]: 1 } }],
            merge_by: ['str:o:name'],
          },
          mention: `organizations[0].fields.${id}`.slice(0, 200),
        })),
        fc
          .oneof(
            wrongType('number', 'null'),
            fc.constantFrom(2 ** 53, -(2 ** 53), 1e20, 1.5, new Raw('1e400')),
          )
          .map((value) => ({
            kind: 'custom int out of range',
            body: {
              organizations: [{ fields: { 'str:o:name': `Fuzz ${u}`, 'int:oc:size': value } }],
              merge_by: ['str:o:name'],
            },
            mention: 'organizations[0].fields.int:oc:size',
          })),
      ),
  },
  'PUT /v1/organizations/contacts/add': {
    base: () => ({ inclusion_ids: ['0'.repeat(24)], organization_id: '1'.repeat(24) }),
    members: [
      {
        name: 'inclusion_ids',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(notHexId, { minLength: 1, maxLength: 3 }),
        ),
      },
      { name: 'organization_id', required: true, invalid: notHexId },
    ],
  },
  'PUT /v1/organizations/contacts/remove': {
    base: () => ({ inclusion_ids: ['0'.repeat(24)], organization_id: '1'.repeat(24) }),
    members: [
      {
        name: 'inclusion_ids',
        required: true,
        invalid: fc.oneof(wrongType('array'), fc.constant([])),
      },
      { name: 'organization_id', required: true, invalid: notHexId },
    ],
  },
  'POST /v1/activities/create': {
    base: (u) => ({
      activities: [{ activity_id: 'act:cm:bought', fields: { 'str::email': email(u) } }],
    }),
    members: [
      {
        name: 'activities',
        required: true,
        invalid: fc.oneof(wrongType('array'), fc.constant([])),
      },
      { name: 'async', invalid: wrongType('boolean') },
      { name: 'merge_by', invalid: fc.oneof(wrongType('array'), fc.constant([])) },
    ],
    special: (u) =>
      fc.oneof(
        fieldCases(
          'activities[0].fields',
          (fields) => ({ activities: [{ activity_id: 'act:cm:bought', fields }] }),
          u,
        ),
        fc
          .oneof(wrongType('string'), fc.constantFrom('', 'act:cm:unknown', 'act::nope', 'xyz'))
          .map((id) => ({
            kind: 'bad activity_id',
            body: { activities: [{ activity_id: id, fields: { 'str::email': email(u) } }] },
            mention: 'activities[0]',
          })),
        dtzBad.map((value) => ({
          kind: 'bad time zone (attribute)',
          body: {
            activities: [
              {
                activity_id: 'act:cm:bought',
                fields: { 'str::email': email(u) },
                attributes: { 'dtz:cm:when': value },
              },
            ],
          },
          mention: 'dtz:cm:when',
          timeZone: true,
        })),
        // The spec ignores unknown attributes: a known one of the wrong type.
        wrongType('string', 'null').map((value) => ({
          kind: 'attribute of the wrong type',
          body: {
            activities: [
              {
                activity_id: 'act:cm:bought',
                fields: { 'str::email': email(u) },
                attributes: { 'str:cm:item': value },
              },
            ],
          },
          mention: 'str:cm:item',
        })),
        fc
          .oneof(
            wrongType('string'),
            fc.constantFrom(
              'yesterday',
              '2020-13-01T00:00:00Z',
              '1999-01-01T00:00:00Z',
              '2999-01-01T00:00:00Z',
            ),
          )
          .map((created) => ({
            kind: 'bad created',
            body: {
              activities: [
                { activity_id: 'act:cm:bought', fields: { 'str::email': email(u) }, created },
              ],
            },
            mention: 'activities[0].created',
          })),
      ),
  },
  'POST /v1/person/subscriptions': {
    base: (u) => ({ people: [{ email: email(u) }, { person_id: '0'.repeat(24) }] }),
    members: [
      {
        name: 'people',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(fc.constant({ person_id: '0'.repeat(24) }), { minLength: 101, maxLength: 110 }),
          fc.array(wrongType('object'), { minLength: 1, maxLength: 3 }),
        ),
      },
    ],
    special: (u) =>
      fc.oneof(
        fc
          .oneof(
            wrongType('string'),
            longString(256, 2000),
            fc.string({ maxLength: 20 }).filter((s) => !s.includes('@')),
          )
          .map((value) => ({
            kind: 'bad email',
            body: { people: [{ email: value }] },
            mention: 'people[0].email',
          })),
        notHexId.map((value) => ({
          kind: 'bad person_id',
          body: { people: [{ person_id: value }] },
          mention: 'people[0].person_id',
        })),
        fc.constantFrom({}, { 'str::email': email(u) }).map((lookup) => ({
          kind: 'no identifier',
          body: { people: [lookup] },
          mention: 'people[0]: expected one of person_id, email or external_id',
        })),
      ),
  },
  'POST /v1/audiences/create': {
    base: (u) => ({
      name: `fuzz ${u}`,
      filter: { $and: [{ '$str::is': { field_id: 'str::first', value: u } }] },
    }),
    members: [
      {
        name: 'name',
        required: true,
        invalid: fc.oneof(wrongType('string'), longString(256, 600)),
      },
      { name: 'filter', required: true, invalid: wrongType('object') },
      { name: 'exit_filter', invalid: wrongType('object', 'null') },
      { name: 'is_public', invalid: wrongType('boolean') },
      { name: 'public_name', invalid: fc.oneof(wrongType('string'), longString(256, 600)) },
    ],
    special: (u) =>
      fc
        .constantFrom(
          { filter: { '$str::sounds_like': { field_id: 'str::first', value: 'x' } } },
          { filter: { $and: [] } },
          { filter: { $and: [{ '$int::is': { field_id: 'str::first', value: 1 } }] } },
          { filter: { $and: [{ '$str::is': { field_id: 'str:cm:nope', value: 'x' } }] } },
          { filter: { $or: [{ '$str::is': { value: 'x' } }] } },
        )
        .map((body) => ({
          kind: 'malformed filter',
          body: { name: `fuzz ${u}`, ...body },
          mention: 'filter',
        })),
  },
  'PUT /v1/audiences/update': {
    base: () => ({ audience_id: '0'.repeat(24), name: 'fuzz' }),
    members: [
      {
        name: 'audience_id',
        required: true,
        invalid: fc.oneof(wrongType('string'), notHexId),
      },
      { name: 'name', invalid: fc.oneof(wrongType('string'), longString(256, 600)) },
      { name: 'filter', invalid: wrongType('object') },
    ],
  },
  ...Object.fromEntries(
    ['PUT /v1/audiences/archive', 'PUT /v1/audiences/restore', 'DELETE /v1/audiences/delete'].map(
      (route) => [
        route,
        {
          base: () => ({ audience_id: '0'.repeat(24) }),
          members: [
            {
              name: 'audience_id',
              required: true,
              invalid: fc.oneof(wrongType('string'), notHexId),
            },
          ],
        },
      ],
    ),
  ),
  'POST /v1/webhooks/create': {
    base: () => ({ url: 'http://127.0.0.1:15999/fuzz', events: ['person.*'] }),
    members: [
      {
        name: 'url',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant(''), longString(2049, 3000)),
      },
      {
        name: 'events',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.constantFrom(['person'], ['person.*.*'], ['people.created'], ['*', 'x.y']),
        ),
      },
      { name: 'description', invalid: fc.oneof(wrongType('string'), longString(501, 900)) },
      { name: 'enabled', invalid: wrongType('boolean') },
    ],
    special: () =>
      fc
        .constantFrom(
          'ftp://127.0.0.1/hook',
          'http://127.0.0.2:15999/hook',
          'http://localhost:15999/hook',
          'https://10.0.0.8/hook',
          'https://169.254.169.254/latest/meta-data',
          'https://[fd00:ec2::254]/',
          'https://[::1]/hook',
          'https://[::ffff:192.168.1.1]/hook',
          'https://224.0.0.1/hook',
          'https://user:pass@127.0.0.1/hook',
          'not a url',
        )
        .map((url) => ({
          kind: 'refused address',
          body: { url, events: ['*'] },
          mention: 'url',
        })),
  },
  'PUT /v1/webhooks/update': {
    base: () => ({ webhook_id: '0'.repeat(24), enabled: false }),
    members: [
      { name: 'webhook_id', required: true, invalid: fc.oneof(wrongType('string'), notHexId) },
      { name: 'url', invalid: fc.oneof(wrongType('string'), fc.constant('')) },
      { name: 'events', invalid: fc.oneof(wrongType('array'), fc.constant([])) },
      { name: 'description', invalid: fc.oneof(wrongType('string', 'null'), longString(501, 900)) },
      { name: 'enabled', invalid: wrongType('boolean') },
    ],
  },
  ...Object.fromEntries(
    ['PUT /v1/webhooks/rotate-secret', 'DELETE /v1/webhooks/delete'].map((route) => [
      route,
      {
        base: () => ({ webhook_id: '0'.repeat(24) }),
        members: [
          { name: 'webhook_id', required: true, invalid: fc.oneof(wrongType('string'), notHexId) },
        ],
      },
    ]),
  ),
  'POST /v1/webhooks/get': {
    base: () => ({}),
    members: [{ name: 'webhook_id', invalid: fc.oneof(wrongType('string'), notHexId) }],
  },
  'POST /v1/webhooks/deliveries/get': {
    base: () => ({ webhook_id: '0'.repeat(24) }),
    members: [
      { name: 'webhook_id', required: true, invalid: fc.oneof(wrongType('string'), notHexId) },
      {
        name: 'status',
        invalid: fc.oneof(wrongType('string'), fc.constantFrom('ok', 'SUCCEEDED', '200', '')),
      },
      { name: 'from', invalid: fc.oneof(wrongType('string'), badTime) },
      { name: 'to', invalid: fc.oneof(wrongType('string'), badTime) },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'cursor_id', invalid: fc.oneof(wrongType('string'), longString(2001, 3000)) },
    ],
    special: () =>
      fc.constantFrom<Case>(
        {
          kind: 'range that ends before it starts',
          body: {
            webhook_id: '0'.repeat(24),
            from: '2026-11-24T12:00:00Z',
            to: '2026-11-24T11:00:00Z',
          },
          mention: 'to',
        },
        // Cursors this API did not issue (forged, truncated, of no listing).
        ...['abc', 'k1.e30.AAAA', 'a.b.c.d', 'e30.'].map((cursor): Case => ({
          kind: 'bad cursor',
          body: { webhook_id: '0'.repeat(24), cursor_id: cursor },
          mention: 'cursor_id',
        })),
      ),
  },
  'POST /v1/webhooks/replay': {
    base: () => ({ webhook_id: '0'.repeat(24), event_id: `msg_${'0'.repeat(32)}` }),
    members: [
      { name: 'webhook_id', required: true, invalid: fc.oneof(wrongType('string'), notHexId) },
      {
        name: 'event_id',
        invalid: fc.oneof(
          wrongType('string'),
          fc.constantFrom('msg_', `msg_${'0'.repeat(31)}`, `MSG_${'0'.repeat(32)}`, '0'.repeat(24)),
        ),
      },
      { name: 'since', invalid: fc.oneof(wrongType('string'), badTime) },
      { name: 'until', invalid: fc.oneof(wrongType('string'), badTime) },
      { name: 'replay_id', invalid: fc.oneof(wrongType('string'), notHexId) },
    ],
    special: () =>
      fc
        .constantFrom(
          // Neither one event nor a time; both; `until` without `since`.
          [{ webhook_id: '0'.repeat(24) }, 'event_id'],
          [
            {
              webhook_id: '0'.repeat(24),
              event_id: `msg_${'0'.repeat(32)}`,
              since: '2026-11-24T00:00:00Z',
            },
            'since',
          ],
          [
            {
              webhook_id: '0'.repeat(24),
              event_id: `msg_${'0'.repeat(32)}`,
              until: '2026-11-24T00:00:00Z',
            },
            'until',
          ],
          // Older than what is kept, or in the future.
          [{ webhook_id: '0'.repeat(24), since: '2020-01-01T00:00:00Z' }, 'since'],
          [
            {
              webhook_id: '0'.repeat(24),
              since: '2026-11-24T00:00:00Z',
              until: '2999-01-01T00:00:00Z',
            },
            'until',
          ],
          // Progress asked for with other members.
          [{ replay_id: '0'.repeat(24), webhook_id: '0'.repeat(24) }, 'webhook_id'],
        )
        .map(([body, mention]) => ({ kind: 'inconsistent replay', body, mention })),
  },
  'POST /v1/audiences/get': {
    base: () => ({ limit: 1 }),
    members: [
      { name: 'limit', invalid: badInteger(1, 40) },
      { name: 'offset', invalid: badInteger(0, 100) },
      { name: 'search_term', invalid: fc.oneof(wrongType('string'), longString(256, 600)) },
      { name: 'with_filter', invalid: wrongType('boolean') },
      { name: 'archived', invalid: wrongType('boolean') },
    ],
  },
  'PUT /v1/audience/subscribe': {
    base: (u) => ({
      audience_id: '0'.repeat(24),
      people: [{ email: email(u), subscribed: false }],
    }),
    members: [
      { name: 'audience_id', required: true, invalid: fc.oneof(wrongType('string'), notHexId) },
      {
        name: 'people',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(fc.constant({ person_id: '0'.repeat(24) }), { minLength: 101, maxLength: 110 }),
          fc.array(wrongType('object'), { minLength: 1, maxLength: 3 }),
        ),
      },
      { name: 'async', invalid: wrongType('boolean') },
    ],
  },
  'POST /v1/instance-schema/get': {
    base: () => ({ namespaces: ['', 'cm'] }),
    members: [
      {
        name: 'namespaces',
        invalid: fc.oneof(
          wrongType('array'),
          fc.array(wrongType('string'), { minLength: 1, maxLength: 3 }),
          fc.array(longString(65, 500), { minLength: 1, maxLength: 2 }),
          fc.array(fc.constant('cm'), { minLength: 101, maxLength: 110 }),
        ),
      },
    ],
  },
  'POST /v1/accounts/merge': {
    base: (u) => ({
      accounts: [{ fields: { 'str:o:name': `Fuzz ${u}` } }],
      merge_by: ['str:o:name'],
    }),
    members: [
      {
        name: 'accounts',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(scalar, { minLength: 101, maxLength: 110 }),
        ),
      },
      {
        name: 'merge_by',
        required: true,
        invalid: fc.oneof(wrongType('array'), fc.constant([]), fc.constant(['str::email'])),
      },
      { name: 'async', invalid: wrongType('boolean') },
      { name: 'merge_strategy', invalid: badInteger(1, 3) },
      { name: 'find_strategy', invalid: badInteger(0, 2) },
    ],
    special: (u) =>
      fc.oneof(
        wrongFieldId.map((id) => ({
          kind: 'wrong field ID',
          body: {
            accounts: [{ fields: { 'str:o:name': `Fuzz ${u}`, [id]: 1 } }],
            merge_by: ['str:o:name'],
          },
          mention: `accounts[0].fields.${id}`.slice(0, 200),
        })),
        wrongType('object').map((value) => ({
          kind: 'record of the wrong type',
          body: { accounts: [value], merge_by: ['str:o:name'] },
          mention: 'accounts[0]',
        })),
        fc.constant({
          kind: 'no merge key value',
          body: { accounts: [{ fields: { 'str:o:industry': 'x' } }], merge_by: ['str:o:name'] },
          mention: 'accounts[0].fields: str:o:name is required',
        }),
      ),
  },
  'POST /v1/accounts/get': {
    base: () => ({ limit: 5 }),
    members: [
      ...personGetLike,
      {
        name: 'sort_by_field_id',
        invalid: fc.oneof(
          wrongType('string', 'null'),
          fc.constantFrom('str::email', 'str:o:website'),
        ),
      },
    ],
    utf8Member: 'sort_order',
  },
  ...Object.fromEntries(
    (['organization_ids', 'account_ids'] as const).map((member) => [
      `POST /v1/${member === 'account_ids' ? 'accounts' : 'organizations'}/get-by-ids`,
      {
        base: () => ({ [member]: ['0'.repeat(24)] }),
        members: [
          {
            name: member,
            required: true,
            invalid: fc.oneof(
              wrongType('array'),
              fc.constant([]),
              fc.array(notHexId, { minLength: 1, maxLength: 3 }),
              fc.array(fc.constant('0'.repeat(24)), { minLength: 101, maxLength: 110 }),
            ),
          },
          {
            name: 'fields',
            invalid: fc.oneof(
              wrongType('array'),
              fc.array(wrongType('string'), { minLength: 1, maxLength: 2 }),
              fc.constant(['str::email']),
            ),
          },
        ],
      } satisfies RouteFuzz,
    ]),
  ),
  ...Object.fromEntries(
    (['add', 'remove'] as const).map((op) => [
      `PUT /v1/accounts/contacts/${op}`,
      {
        base: () => ({ person_ids: ['0'.repeat(24)], account_id: '1'.repeat(24) }),
        members: [
          {
            name: 'person_ids',
            required: true,
            invalid: fc.oneof(
              wrongType('array'),
              fc.constant([]),
              fc.array(notHexId, { minLength: 1, maxLength: 3 }),
            ),
          },
          { name: 'account_id', required: true, invalid: notHexId },
        ],
        special: () =>
          fc.oneof(
            fc.constant({
              kind: 'both vocabularies for the account',
              body: {
                person_ids: ['0'.repeat(24)],
                account_id: '1'.repeat(24),
                organization_id: '1'.repeat(24),
              },
              mention: 'account_id: give account_id or organization_id, not both',
            }),
            fc.constant({
              kind: 'both vocabularies for the people',
              body: {
                person_ids: ['0'.repeat(24)],
                inclusion_ids: ['0'.repeat(24)],
                account_id: '1'.repeat(24),
              },
              mention: 'person_ids: give person_ids or inclusion_ids, not both',
            }),
            notHexId.map((value) => ({
              kind: 'bad organization_id',
              body: { inclusion_ids: ['0'.repeat(24)], organization_id: value },
              mention: 'organization_id',
            })),
          ),
      } satisfies RouteFuzz,
    ]),
  ),
  'POST /v1/async/get': {
    base: () => ({ request_id: 'r'.repeat(20) }),
    members: [
      {
        name: 'request_id',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant(''), longString(65, 5000)),
      },
    ],
  },
  'POST /v1/person/custom-field/get': { base: () => ({}), members: [] },
  'POST /v1/accounts/custom-field/get': { base: () => ({}), members: [] },
  'POST /v1/organizations/custom-field/get': { base: () => ({}), members: [] },
  'POST /v1/person/custom-field/create': customFieldCreate,
  'POST /v1/accounts/custom-field/create': customFieldCreate,
  'POST /v1/organizations/custom-field/create': customFieldCreate,
  'PUT /v1/person/custom-field/update': customFieldUpdate('str:cm:fuzz-select'),
  'PUT /v1/accounts/custom-field/update': customFieldUpdate('str:oc:fuzz-select'),
  'PUT /v1/organizations/custom-field/update': customFieldUpdate('str:oc:fuzz-select'),
  'DELETE /v1/instances/custom-field/delete': {
    base: () => ({ field_id: 'str:cm:fuzz-nobody' }),
    members: [
      {
        name: 'field_id',
        required: true,
        invalid: fc.oneof(wrongType('string'), longString(256, 2000), fc.constant('')),
      },
    ],
  },
  'POST /v1/tags/get': {
    base: () => ({ q: 'fuzz' }),
    members: [{ name: 'q', invalid: fc.oneof(wrongType('string'), longString(256, 2000)) }],
  },
  'PUT /v1/definitions/activity/modify': {
    base: () => ({ activity_field_id: 'act:cm:fuzz-nobody', touch: true }),
    members: [
      {
        name: 'activity_field_id',
        invalid: fc.oneof(wrongType('string'), longString(256, 2000)),
      },
      { name: 'touch', invalid: wrongType('boolean') },
      { name: 'filterable', invalid: wrongType('boolean') },
      { name: 'attributes', invalid: wrongType('array') },
    ],
  },
  'DELETE /v1/definitions/activity/delete': {
    base: () => ({ activity_field_id: 'act:cm:fuzz-nobody' }),
    members: [
      {
        name: 'activity_field_id',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant(''), longString(256, 2000)),
      },
    ],
  },
  'POST /v1/definitions/activity/create': {
    base: (u) => ({ id: `act:cm:fuzz-${u}`, name: 'Fuzzed' }),
    members: [
      // Not required: without `id`, a body is the real API's shape (`name` names it).
      {
        name: 'id',
        invalid: fc.oneof(
          wrongType('string'),
          fc.constantFrom('act:cm:Bad', 'act::x', 'act:cm:', 'act:cm:a--b', 'str:cm:x'),
        ),
      },
      {
        name: 'name',
        required: true,
        invalid: fc.oneof(wrongType('string'), fc.constant('  '), longString(256, 2000)),
      },
      {
        name: 'attributes',
        invalid: fc.oneof(
          wrongType('array'),
          fc.array(wrongType('object'), { minLength: 1, maxLength: 2 }),
        ),
      },
      { name: 'conversion_value', invalid: wrongType('boolean') },
      { name: 'icon', invalid: fc.oneof(wrongType('string'), longString(65, 500)) },
    ],
    special: (u) =>
      fc.oneof(
        extraKey.map((key) => ({
          kind: 'unknown member (strict)',
          body: { id: `act:cm:fuzz-${u}`, name: 'Fuzzed', [key]: 1 },
          mention: key,
        })),
        wrongFieldId
          // A definition declares its attributes: a new custom one is valid.
          .filter((id) => !/^[a-z]{3}:cm:[a-z0-9]+(?:-[a-z0-9]+)*$/.test(id))
          .map((id) => ({
            kind: 'wrong attribute ID',
            body: { id: `act:cm:fuzz-${u}`, name: 'Fuzzed', attributes: [{ id, name: 'A' }] },
            mention: 'attributes[0]',
          })),
      ),
  },
  'POST /v1/organizations/get': {
    base: () => ({ limit: 5 }),
    members: [
      ...personGetLike,
      {
        name: 'sort_by_field_id',
        invalid: fc.oneof(
          wrongType('string', 'null'),
          fc.constantFrom('str::email', 'str:o:website'),
        ),
      },
    ],
    utf8Member: 'sort_order',
  },
  'POST /v1/person/get': {
    base: () => ({ limit: 5 }),
    members: [
      ...personGetLike,
      {
        name: 'sort_by_field_id',
        invalid: fc.oneof(wrongType('string', 'null'), fc.constantFrom('str::nope', 'xyz:cm:a')),
      },
    ],
    utf8Member: 'sort_order',
  },
  'POST /v1/person/get-by-ids': {
    base: () => ({ contact_ids: ['0'.repeat(24)] }),
    members: [
      {
        name: 'contact_ids',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(notHexId, { minLength: 1, maxLength: 3 }),
        ),
      },
      {
        name: 'fields',
        invalid: fc.oneof(
          wrongType('array'),
          fc.array(wrongType('string'), { minLength: 1, maxLength: 2 }),
        ),
      },
    ],
  },
  'POST /v1/accounts/activities/create': {
    base: (u) => ({
      activities: [{ activity_id: 'act:oc:booked', fields: { 'str:o:name': `Fuzz ${u}` } }],
      merge_by: ['str:o:name'],
    }),
    members: [
      {
        name: 'activities',
        required: true,
        invalid: fc.oneof(wrongType('array'), fc.constant([])),
      },
      {
        name: 'merge_by',
        invalid: fc.oneof(wrongType('array'), fc.constant([]), fc.constant(['str::email'])),
      },
    ],
    special: (u) =>
      fc.oneof(
        fc
          .oneof(wrongType('string'), fc.constantFrom('', 'act:oc:unknown', 'act:cm:bought', 'xyz'))
          .map((id) => ({
            kind: 'bad activity_id',
            body: {
              activities: [{ activity_id: id, fields: { 'str:o:name': `Fuzz ${u}` } }],
              merge_by: ['str:o:name'],
            },
            mention: 'activities[0]',
          })),
        dtzBad.map((value) => ({
          kind: 'bad time zone (attribute)',
          body: {
            activities: [
              {
                activity_id: 'act:oc:booked',
                attributes: { 'dtz:cm:when': value },
                fields: { 'str:o:name': `Fuzz ${u}` },
              },
            ],
            merge_by: ['str:o:name'],
          },
          mention: 'dtz:cm:when',
          timeZone: true,
        })),
      ),
  },
  'POST /v1/accounts/get/activities': {
    base: () => ({ account_id: '0'.repeat(24) }),
    members: [
      { name: 'account_id', required: true, invalid: notHexId },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'offset', invalid: fc.oneof(wrongType('number'), fc.constant(-1), fc.constant(2.5)) },
      { name: 'cursor_id', invalid: fc.oneof(wrongType('string'), longString(501, 3000)) },
    ],
  },
  'POST /v1/person/get/activities': {
    base: () => ({ person_id: '0'.repeat(24) }),
    members: [
      { name: 'person_id', required: true, invalid: notHexId },
      { name: 'limit', invalid: badInteger(1, 100) },
      { name: 'offset', invalid: fc.oneof(wrongType('number'), fc.constant(-1), fc.constant(2.5)) },
      {
        name: 'timeframe',
        invalid: fc.oneof(
          fc.constant({ type: 'tomorrow' }),
          fc.constant({}),
          fc.constant('last-week'),
          fc.constant(7),
        ),
      },
      { name: 'cursor_id', invalid: fc.oneof(wrongType('string'), longString(501, 3000)) },
      {
        name: 'activities',
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.constant(['']),
          fc.array(fc.constant('a'), { minLength: 51, maxLength: 60 }),
        ),
      },
    ],
  },
  'POST /v1/transactional/get': {
    base: () => ({ message_ids: ['0'.repeat(24)] }),
    members: [
      {
        name: 'message_ids',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(notHexId, { minLength: 1, maxLength: 3 }),
          fc.array(hexId, { minLength: 101, maxLength: 110 }),
        ),
      },
    ],
  },
  'POST /v1/transactional/send': {
    base: (u) => ({
      asset: { from_email: 'news@mail.fuzz.test', subject: 'Hi', html_body: '<p>Hi</p>' },
      emails: [{ fields: { 'str::email': email(u) } }],
    }),
    members: [
      { name: 'asset', required: true, invalid: wrongType('object') },
      {
        name: 'emails',
        required: true,
        invalid: fc.oneof(
          wrongType('array'),
          fc.constant([]),
          fc.array(wrongType('object'), { minLength: 1, maxLength: 2 }),
        ),
      },
      { name: 'merge_strategy', invalid: badInteger(1, 3) },
      { name: 'static_json_values', invalid: wrongType('object') },
    ],
    special: (u) => {
      const asset = { from_email: 'news@mail.fuzz.test', subject: 'Hi', html_body: '<p>Hi</p>' };
      const send = (
        assetExtra: Record<string, unknown>,
        fields: Record<string, unknown> = { 'str::email': email(u) },
      ) => ({
        asset: { ...asset, ...assetExtra },
        emails: [{ fields }],
      });
      const badBase64 = fc
        .oneof(
          fc.string({ minLength: 1, maxLength: 40 }),
          fc.constantFrom('abc', 'ab=c', '====', 'YQ==YQ==', 'Y*Q=', 'é'),
        )
        .filter((s) => {
          const c = s.replace(/\s+/g, '');
          return !(c.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(c));
        });
      return fc.oneof(
        badBase64.map((content) => ({
          kind: 'bad base64',
          body: send({
            attachments: [{ filename: 'a.pdf', content_type: 'application/pdf', content }],
          }),
          mention: 'asset.attachments[0].content',
        })),
        fc.constantFrom('from_email', 'reply_to').chain((name) =>
          fc
            .oneof(
              wrongType('string'),
              fc.constantFrom('not-an-address', 'a@', '@b.co', 'a b@c.co'),
            )
            .map((value) => ({
              kind: 'bad address',
              body: send({ [name]: value }),
              mention: `asset.${name}`,
            })),
        ),
        fc.constantFrom('campaign_id', 'asset_id').chain((name) =>
          notHexId.map((value) => ({
            kind: 'bad template ID',
            body: send({ [name]: value }),
            mention: `asset.${name}`,
          })),
        ),
        fc.array(fc.constant('cc@example.com'), { minLength: 6, maxLength: 10 }).map((cc) => ({
          kind: 'too many cc',
          body: send({ cc }),
          mention: 'asset.cc',
        })),
        fieldCases('emails[0].fields', (fields) => ({ asset, emails: [{ fields }] }), u).filter(
          (c) => c.kind !== 'bad email',
        ),
      );
    },
  },
};

/** Every case of a JSON route: one member broken, or the body broken as JSON. */
function jsonCases(fuzz: RouteFuzz): fc.Arbitrary<Case> {
  const unique = fc.stringMatching(/^[a-z0-9]{10}$/);
  const memberCases = unique.chain((u) => {
    const base = fuzz.base(u);
    const members = fuzz.members;
    const required = members.filter((m) => m.required);
    // Scalars and arrays: an object under `constructor` holding `prototype` is its own case.
    const extras = fc.dictionary(extraKey, fc.oneof(scalar, BY_TYPE.array), { maxKeys: 3 });
    const broken = (name: string, value: unknown, extra: Record<string, unknown>) =>
      new Entries([
        ...Object.entries(extra),
        ...Object.entries(base).filter(([k]) => k !== name),
        [name, value],
      ]);
    // Routes whose body has no members (listings) get the cases that need none.
    const byMember: fc.Arbitrary<Case>[] =
      members.length === 0
        ? []
        : [
            // A member of the wrong type or out of range, with members no schema knows around it.
            fc.constantFrom(...members).chain((member) =>
              fc.tuple(member.invalid, extras).map(([value, extra]) => ({
                kind: 'invalid member',
                body: broken(member.name, value, extra),
                mention: member.name,
              })),
            ),
            // The same member twice: the last one (invalid) counts.
            fc.constantFrom(...members).chain((member) =>
              member.invalid.map((value) => ({
                kind: 'duplicate key',
                body: new Entries([...Object.entries(base), [member.name, value]]),
                mention: member.name,
              })),
            ),
            // A string member holding a lone surrogate, or a member with one in its name.
            fc.constantFrom(...members).chain((member) =>
              loneSurrogate.map((value) => ({
                kind: 'lone surrogate',
                body: broken(member.name, value, {}),
                mention: member.name,
              })),
            ),
          ];
    const cases: fc.Arbitrary<Case>[] = [
      ...byMember,
      loneSurrogate.map((name) => ({
        kind: 'lone surrogate (name)',
        body: new Entries([...Object.entries(base), [name, 1]]),
        mention: 'lone UTF-16 surrogate',
      })),
      // Nesting past the parser's limit.
      fc
        .tuple(fc.constantFrom(...members.map((m) => m.name), 'nested'), tooDeep)
        .map(([name, value]) => ({
          kind: 'too deep',
          body: broken(name, value, {}),
          mention: 'nests deeper than 64 levels',
        })),
      // Prototype keys: `__proto__` anywhere, `constructor` holding a `prototype`.
      fc.tuple(fc.constantFrom('__proto__', 'constructor'), smallJson).map(([key, value]) => ({
        kind: 'prototype key',
        body: new Entries([
          [key, key === 'constructor' ? { prototype: value } : value],
          ...Object.entries(base),
        ]),
        mention: `"${key}"`,
      })),
      // Not an object at all.
      fc
        .oneof(BY_TYPE.array, BY_TYPE.string, BY_TYPE.number, BY_TYPE.boolean, BY_TYPE.null)
        .map((body) => ({
          kind: 'not an object',
          body,
          mention: 'JSON object',
        })),
      // Truncated JSON (not the empty body: a body left out is `{}`, DESIGN.md).
      fc.nat().map((at) => {
        const text = toJson(base);
        return {
          kind: 'truncated JSON',
          bytes: Buffer.from(text.slice(0, 1 + (at % (text.length - 1)))),
          mention: 'body',
        };
      }),
    ];
    if (required.length > 0) {
      cases.push(
        fc.tuple(fc.constantFrom(...required), extras).map(([member, extra]) => ({
          kind: 'missing member',
          body: new Entries([
            ...Object.entries(extra),
            ...Object.entries(base).filter(([k]) => k !== member.name),
          ]),
          mention: member.name,
        })),
      );
    }
    // Invalid UTF-8: in the name of a required member (which is then missing), or in the
    // value of a constrained string member.
    const utf8Target = required[0]?.name ?? fuzz.utf8Member;
    if (utf8Target !== undefined) {
      cases.push(
        fc.tuple(fc.constantFrom(...INVALID_UTF8), fc.nat(3)).map(([bad, at]) => {
          const inName = required.length > 0;
          const name = inName
            ? `${utf8Target.slice(0, at)}${MARKER}${utf8Target.slice(at)}`
            : utf8Target;
          const body = inName
            ? new Entries([
                ...Object.entries(base).filter(([k]) => k !== utf8Target),
                [name, base[utf8Target]],
              ])
            : new Entries([...Object.entries(base), [name, `as${MARKER}c`]]);
          const [head, tail] = toJson(body).split(MARKER) as [string, string];
          return {
            kind: 'invalid UTF-8',
            bytes: Buffer.concat([Buffer.from(head), bad, Buffer.from(tail)]),
            mention: utf8Target,
          };
        }),
      );
    }
    if (fuzz.special) cases.push(fuzz.special(u));
    return fc.oneof(...cases);
  });
  return memberCases;
}

/** Percent-encoding that writes a lone surrogate as its (invalid) three UTF-8-style bytes. */
function encodeQueryValue(text: string): string {
  return text.replace(/[\ud800-\udbff][\udc00-\udfff]|[^]/g, (char) => {
    const unit = char.charCodeAt(0);
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      return [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
        .map((byte) => `%${byte.toString(16).toUpperCase()}`)
        .join('');
    }
    return encodeURIComponent(char);
  });
}

/** The public links: tokens malformed, forged (another secret) or of no email. */
function linkCases(method: string): fc.Arbitrary<Case> {
  const forger = new LinkSigner(singleKeyring('not the deployment secret'));
  const purpose = fc.constantFrom('click' as const, 'open' as const, 'unsubscribe' as const);
  const token = fc.oneof(
    fc.string({ maxLength: 60 }),
    longString(201, 3000),
    loneSurrogate,
    fc
      .tuple(purpose, hexId, fc.nat(9999))
      .map(([p, messageId, index]) => forger.sign(p, { instanceId: INSTANCE, messageId, index })),
    fc
      .tuple(
        fc.base64String({ minLength: 4, maxLength: 40 }),
        fc.base64String({ minLength: 4, maxLength: 24 }),
      )
      .map(([a, b]) => `${a}.${b}`),
    fc.constantFrom(
      '',
      '.',
      '..',
      'a.b.c',
      'ZnV6ei4wMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAuMA.AAAAAAAAAAAAAAAAAAAAAA',
    ),
  );
  const query = fc.oneof(
    token.map((t) => `t=${encodeQueryValue(t)}`),
    token.map((t) => `t=${encodeQueryValue(t)}&t=${encodeQueryValue(t)}`),
    fc.constantFrom('', 't', 'x=1', 't=%ED%A0%80', 't=%FF%FE', 't=%', 't[]=a', '__proto__=1'),
  );
  const body =
    method === 'POST'
      ? fc.oneof(
          fc.constant(undefined),
          fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
        )
      : fc.constant(undefined);
  return fc.tuple(query, body).map(([q, bytes]) => ({
    kind: 'bad token',
    query: q,
    ...(bytes ? { bytes } : {}),
    // Tokens too long for the gateway's header cap are refused there (431).
    mention: /^(This link is not valid|Request headers too large: the limit is \d+ bytes)$/,
  }));
}

interface Tally {
  bodies: number;
  statuses: Map<number, number>;
  kinds: Set<string>;
}
const tallies = new Map<string, Tally>();

async function send(route: RouteDefinition, fuzzCase: Case) {
  const body =
    fuzzCase.bytes ??
    (fuzzCase.body === undefined ? undefined : Buffer.from(toJson(fuzzCase.body)));
  const url = `${baseUrl('default')}${route.path}${fuzzCase.query === undefined ? '' : `?${fuzzCase.query}`}`;
  const response = await checkedFetch(url, {
    method: route.method,
    headers: {
      'content-type': 'application/json',
      ...(route.auth ? { 'x-api-key': KEY } : {}),
      ...(route.console ? { authorization: `Bearer ${consoleToken}` } : {}),
    },
    ...(body && route.method !== 'GET' ? { body } : {}),
  });
  const text = await response.text();
  const tally: Tally = tallies.get(routeKey(route)) ?? {
    bodies: 0,
    statuses: new Map<number, number>(),
    kinds: new Set<string>(),
  };
  tally.bodies += 1;
  tally.statuses.set(response.status, (tally.statuses.get(response.status) ?? 0) + 1);
  tally.kinds.add(fuzzCase.kind);
  tallies.set(routeKey(route), tally);
  return { status: response.status, text, requestId: response.headers.get('x-request-id') };
}

function expectRefusal(fuzzCase: Case, answer: Awaited<ReturnType<typeof send>>): void {
  const context = `${fuzzCase.kind}: ${answer.status} ${answer.text.slice(0, 500)}`;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.text) as Record<string, unknown>;
  } catch {
    throw new Error(`not a JSON envelope (${context})`);
  }
  const message = typeof body.error === 'string' ? body.error : '';
  const envelopeOk =
    body.code === answer.status &&
    typeof body.request_id === 'string' &&
    body.request_id === answer.requestId &&
    message.length > 0 &&
    Object.keys(body).every((key) => ['request_id', 'code', 'error', 'details'].includes(key));
  if (!envelopeOk) throw new Error(`not the error envelope (${context})`);
  // Refused before any work. The instance allows 10,000 requests a second, but the limiters
  // of the stack's functions (one per function, as one per Lambda container) contend for the
  // one bucket of the key, and a limiter that loses four conditional writes in a row refuses
  // (rate-limit.ts, takeLease). Counted, and kept rare below.
  if (answer.status === 429 && message.startsWith('Rate limit exceeded')) return;
  if (fuzzCase.timeZone) {
    const fields = Array.isArray(body.details)
      ? (body.details as { field?: unknown }[]).map((d) => d.field)
      : [];
    if (
      answer.status !== 500 ||
      message !== 'Internal Server Error' ||
      !fields.some((f) => typeof f === 'string' && f.includes(String(fuzzCase.mention)))
    ) {
      throw new Error(`expected the spec's 500 naming ${String(fuzzCase.mention)} (${context})`);
    }
    return;
  }
  if (answer.status < 400 || answer.status > 499) throw new Error(`expected a 4xx (${context})`);
  const named =
    typeof fuzzCase.mention === 'string'
      ? message.includes(fuzzCase.mention)
      : fuzzCase.mention.test(message);
  if (!named)
    throw new Error(`the message does not name "${String(fuzzCase.mention)}" (${context})`);
}

/** Items of the fuzz instance in every table of the default region (rate-limit buckets aside). */
async function countItems(): Promise<Record<string, number>> {
  const { base } = stackDb();
  const counts: Record<string, number> = {};
  for (const table of TABLES) {
    let count = 0;
    let start: Record<string, never> | undefined;
    do {
      const page: ScanCommandOutput = await base.send(
        new ScanCommand({
          TableName: tableName('default', table.name),
          Select: 'COUNT',
          FilterExpression:
            '(begins_with(pk, :own) OR begins_with(pk, :config)) AND NOT contains(pk, :rate)',
          ExpressionAttributeValues: {
            ':own': { S: `${INSTANCE}#` },
            ':config': { S: `INST#${INSTANCE}` },
            ':rate': { S: '#RATE#' },
          },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      count += page.Count ?? 0;
      start = page.LastEvaluatedKey as Record<string, never> | undefined;
    } while (start);
    counts[table.name] = count;
  }
  return counts;
}

// Health and the documentation (the OpenAPI document, the reference page and its files) read
// no input: no body (their limit is 0 bytes), no query, no key.
const FUZZED = ROUTES.filter((route) => route.maxBodyBytes > 0);
let before: Record<string, number> = {};
let startedAt = 0;
/** The console's routes are fuzzed as a platform admin (every instance is theirs). */
let consoleToken = '';

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-fuzz-')), 'config.json');
  writeFileSync(file, JSON.stringify(CONFIG));
  const applied = await run(['local/admin.ts', 'apply', file, '--settle', '0'], adminEnv());
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.stderr}`);
  consoleToken = await signIn(consoleUser('admin@platform.test'));
  before = await countItems();
  startedAt = Date.now();
});

afterAll(() => {
  const rows = [...tallies.entries()].map(([route, t]) => {
    const statuses = [...t.statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}×${n}`)
      .join(' ');
    return `${route.padEnd(40)} ${String(t.bodies).padStart(5)}  ${statuses}  (${t.kinds.size} kinds)`;
  });
  const total = [...tallies.values()].reduce((sum, t) => sum + t.bodies, 0);
  process.stdout.write(
    `Bodies fuzzed per route (${total} in ${((Date.now() - startedAt) / 1000).toFixed(1)} s):\n${rows.join('\n')}\n`,
  );
});

describe('bad input, fuzzed', () => {
  it('covers every route that reads input (all but health and the documentation)', () => {
    expect(
      FUZZED.map(routeKey)
        .filter((key) => !key.startsWith('GET /t/') && key !== 'POST /t/u')
        .sort(),
    ).toEqual(Object.keys(ROUTE_FUZZ).sort());
  });

  it(
    'refuses every malformed body with the error envelope naming what was wrong',
    async () => {
      const failures = await Promise.all(
        FUZZED.map(async (route) => {
          const fuzz = ROUTE_FUZZ[routeKey(route)];
          const cases = fuzz ? jsonCases(fuzz) : linkCases(route.method);
          const details = await fc.check(
            fc.asyncProperty(cases, async (fuzzCase) => {
              expectRefusal(fuzzCase, await send(route, fuzzCase));
            }),
            { numRuns: RUNS_PER_ROUTE },
          );
          if (!details.failed) return undefined;
          // fast-check's own report prints whole counterexamples (megabytes of brackets).
          const example = JSON.stringify(details.counterexample, (_key, value: unknown) =>
            value instanceof Raw ? `<raw ${value.text.slice(0, 80)}…>` : value,
          );
          return `${routeKey(route)} (seed ${details.seed}, path ${details.counterexamplePath ?? ''}): ${String(details.errorInstance).slice(0, 1500)}\n  counterexample: ${example.slice(0, 1500)}`;
        }),
      );
      expect(failures.filter(Boolean)).toEqual([]);
      // A time budget per route (the routes table grows; the machine may be shared), rather
      // than the project's two minutes for the whole table.
    },
    FUZZED.length * 5_000,
  );

  it('wrote nothing for any of them, and the API still answers', async () => {
    expect(tallies.size).toBe(FUZZED.length);
    for (const tally of tallies.values()) {
      expect(tally.bodies).toBeGreaterThanOrEqual(RUNS_PER_ROUTE);
      // Validation, not the rate limiter, answered nearly all of them.
      expect(tally.statuses.get(429) ?? 0).toBeLessThanOrEqual(tally.bodies * 0.02);
    }
    expect(await countItems()).toEqual(before);
    const health = await checkedFetch(`${baseUrl('default')}/health`);
    expect(health.status).toBe(200);
  });
});
