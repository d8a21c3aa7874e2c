import { describe, expect, it } from '@jest/globals';
import { fc, test } from '@fast-check/jest';
import { FieldValueError, InvalidTimeZoneError } from '../../../shared/domain/errors.js';
import {
  MAX_STR_LENGTH,
  MAX_TXT_LENGTH,
  parseFieldValue,
} from '../../../shared/domain/fields/field-values.js';
import { TIME_ZONES } from '../../../shared/domain/timezones.js';

const zones = [...TIME_ZONES];

function problemOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof FieldValueError) return error.message;
    throw error;
  }
  throw new Error('expected a FieldValueError');
}

describe('bol', () => {
  it.each([true, false])('accepts %s', (value) => {
    expect(parseFieldValue('bol::gdpr', 'bol', value)).toBe(value);
  });
  it.each([['true'], [1], [0], [{}], [[]]])('refuses %p, naming the field', (value) => {
    expect(problemOf(() => parseFieldValue('bol::gdpr', 'bol', value))).toMatch(
      /^bol::gdpr: expected true or false/,
    );
  });
});

describe('int', () => {
  test.prop([fc.maxSafeInteger()])('accepts every safe integer as sent', (value) => {
    expect(parseFieldValue('int:cm:score', 'int', value)).toBe(value);
  });
  test.prop([fc.double({ noInteger: true })])('refuses non-integers', (value) => {
    expect(problemOf(() => parseFieldValue('int:cm:score', 'int', value))).toMatch(
      /int:cm:score: expected a whole number \(decimals and currency are sent multiplied by 1000\)/,
    );
  });
  it.each([['12'], [2 ** 53], [null], [true]])('refuses %p', (value) => {
    expect(() => parseFieldValue('int:cm:score', 'int', value)).toThrow(FieldValueError);
  });
  it('keeps a currency amount of 24.99 sent as 24990', () => {
    expect(parseFieldValue('int:cm:price', 'int', 24990)).toBe(24990);
  });
});

describe('str', () => {
  test.prop([fc.string({ maxLength: MAX_STR_LENGTH, unit: 'grapheme' })])(
    'accepts strings of at most 255 characters',
    (value) => {
      expect(parseFieldValue('str::first', 'str', value)).toBe(value);
    },
  );
  test.prop([fc.string({ minLength: MAX_STR_LENGTH + 1, maxLength: 400 })])(
    'refuses longer strings',
    (value) => {
      expect(problemOf(() => parseFieldValue('str::first', 'str', value))).toMatch(
        /str::first: expected at most 255 characters/,
      );
    },
  );
  it('counts characters, not UTF-16 units', () => {
    const emoji = '😀'.repeat(255);
    expect(emoji.length).toBe(510);
    expect(parseFieldValue('str::first', 'str', emoji)).toBe(emoji);
    expect(() => parseFieldValue('str::first', 'str', emoji + '😀')).toThrow(FieldValueError);
  });
  it.each([[1], [null], [{ name: 'x' }]])('refuses %p', (value) => {
    expect(problemOf(() => parseFieldValue('str::first', 'str', value))).toMatch(
      /str::first: expected a string/,
    );
  });
  it('validates email addresses and trims them', () => {
    expect(parseFieldValue('str::email', 'str', ' Ann@Example.com ', 'email')).toBe(
      'Ann@Example.com',
    );
    expect(problemOf(() => parseFieldValue('str::email', 'str', 'not-an-email', 'email'))).toBe(
      'str::email: expected an email address',
    );
  });
  it('validates URLs and language codes', () => {
    expect(parseFieldValue('str:o:website', 'str', 'acme.test', 'url')).toBe('acme.test');
    expect(() => parseFieldValue('str:o:website', 'str', 'http://', 'url')).toThrow(
      FieldValueError,
    );
    expect(parseFieldValue('str::language', 'str', 'pt-BR', 'language')).toBe('pt-BR');
    expect(() => parseFieldValue('str::language', 'str', 'Portuguese!', 'language')).toThrow(
      FieldValueError,
    );
  });
});

describe('txt', () => {
  it('accepts long text beyond 255 characters', () => {
    const text = 'a'.repeat(5000);
    expect(parseFieldValue('txt:cm:bio', 'txt', text)).toBe(text);
  });
  it('refuses text over its cap, and non-strings', () => {
    expect(() => parseFieldValue('txt:cm:bio', 'txt', 'a'.repeat(MAX_TXT_LENGTH + 1))).toThrow(
      FieldValueError,
    );
    expect(() => parseFieldValue('txt:cm:bio', 'txt', 5)).toThrow(FieldValueError);
  });
});

describe('dtz', () => {
  const date = fc
    .date({
      min: new Date('0001-01-01T00:00:00Z'),
      max: new Date('9999-12-31T00:00:00Z'),
      noInvalidDate: true,
    })
    .map((d) => ({ year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }));

  test.prop([date, fc.constantFrom(...zones)])(
    'accepts every calendar date in every listed zone',
    (d, timezone) => {
      expect(parseFieldValue('dtz::b', 'dtz', { ...d, timezone })).toEqual({ ...d, timezone });
    },
  );

  it.each([
    [{ year: 2023, month: 2, day: 29 }, /2023-2-29 is not a calendar date/],
    [{ year: 2024, month: 4, day: 31 }, /not a calendar date/],
    [{ year: 2024, month: 13, day: 1 }, /month from 1 to 12/],
    [{ year: 2024, month: 0, day: 1 }, /month from 1 to 12/],
    [{ year: 2024, month: 1, day: 0 }, /not a calendar date/],
    [{ year: 0, month: 1, day: 1 }, /year from 1 to 9999/],
    [{ year: 2024.5, month: 1, day: 1 }, /"year" to be an integer/],
    [{ year: '2024', month: 1, day: 1 }, /"year" to be an integer/],
    [{ month: 1, day: 1 }, /"year" to be an integer/],
  ])('refuses %p', (parts, message) => {
    expect(
      problemOf(() => parseFieldValue('dtz::b', 'dtz', { ...parts, timezone: 'UTC' })),
    ).toMatch(message);
  });

  it('accepts 29 February in a leap year', () => {
    const value = { year: 2024, month: 2, day: 29, timezone: 'Australia/Sydney' };
    expect(parseFieldValue('dtz::b', 'dtz', value)).toEqual(value);
  });

  it('refuses a value that is not an object', () => {
    expect(problemOf(() => parseFieldValue('dtz::b', 'dtz', '2024-01-01'))).toMatch(
      /expected a date object \{year, month, day, timezone\}/,
    );
  });

  it("gives a date without a time zone the instance's zone, UTC when it sets none", () => {
    const date = { year: 2024, month: 1, day: 1 };
    expect(parseFieldValue('dtz::b', 'dtz', date)).toEqual({ ...date, timezone: 'UTC' });
    expect(parseFieldValue('dtz::b', 'dtz', date, undefined, 'Australia/Sydney')).toEqual({
      ...date,
      timezone: 'Australia/Sydney',
    });
    // A zone that is there is the client's, right or wrong.
    expect(
      parseFieldValue('dtz::b', 'dtz', { ...date, timezone: 'Europe/Paris' }, undefined, 'UTC'),
    ).toEqual({ ...date, timezone: 'Europe/Paris' });
    expect(problemOf(() => parseFieldValue('dtz::b', 'dtz', { ...date, timezone: 7 }))).toMatch(
      /"timezone"/,
    );
  });

  test.prop([fc.string().filter((zone) => !TIME_ZONES.has(zone))])(
    'answers a time zone outside the list as the spec prescribes (Internal Server Error)',
    (timezone) => {
      let error: unknown;
      try {
        parseFieldValue('dtz::b', 'dtz', { year: 2024, month: 1, day: 1, timezone });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(InvalidTimeZoneError);
      expect((error as InvalidTimeZoneError).message).toBe('Internal Server Error');
      expect((error as InvalidTimeZoneError).details).toEqual([
        { field: 'dtz::b', error: `"${timezone}" is not a valid time zone` },
      ]);
    },
  );

  it('takes the list exactly: case and near-misses are not valid', () => {
    for (const timezone of ['utc', 'Europe/Kiev', 'America/Buenos_Aires', 'Australia/ACT']) {
      expect(() =>
        parseFieldValue('dtz::b', 'dtz', { year: 2024, month: 1, day: 1, timezone }),
      ).toThrow(InvalidTimeZoneError);
    }
  });
});

describe('tme', () => {
  test.prop([
    fc.date({ min: new Date('1970-01-01Z'), max: new Date('9999-12-31Z'), noInvalidDate: true }),
  ])('accepts ISO 8601 timestamps and stores them in UTC', (date) => {
    expect(parseFieldValue('tme:cm:seen', 'tme', date.toISOString())).toBe(date.toISOString());
  });
  it.each([
    ['2024-05-01T09:30:00+10:00', '2024-04-30T23:30:00.000Z'],
    ['2024-05-01T09:30Z', '2024-05-01T09:30:00.000Z'],
    ['2024-05-01T09:30:00.123456-0230', '2024-05-01T12:00:00.123Z'],
  ])('reads %s as %s', (value, stored) => {
    expect(parseFieldValue('tme:cm:seen', 'tme', value)).toBe(stored);
  });
  it.each([
    ['2024-05-01'],
    ['2024-05-01T09:30:00'],
    ['2024-02-30T09:30:00Z'],
    ['2024-05-01T24:00:00Z'],
    ['yesterday'],
    [1714555800000],
  ])('refuses %p (a date, time and zone are all required)', (value) => {
    expect(problemOf(() => parseFieldValue('tme:cm:seen', 'tme', value))).toMatch(
      /tme:cm:seen: expected an ISO 8601 timestamp with date, time and zone/,
    );
  });
});

describe('geo', () => {
  it('accepts {name} and trims the name', () => {
    expect(parseFieldValue('geo::city', 'geo', { name: ' Sydney ' })).toEqual({ name: 'Sydney' });
  });
  it.each([['Sydney'], [{}], [{ name: '' }], [{ name: 3 }], [null]])('refuses %p', (value) => {
    expect(problemOf(() => parseFieldValue('geo::city', 'geo', value))).toMatch(
      /geo::city: expected an object \{"name": "<place name>"\}/,
    );
  });
});

describe('phn', () => {
  it.each([
    [
      { c: '61', n: '400000000' },
      { c: '61', n: '400000000' },
    ],
    [
      { c: '+61', n: '0400 000 000' },
      { c: '61', n: '400000000' },
    ],
    [
      { c: '39', n: '0612345678' },
      { c: '39', n: '0612345678' },
    ],
    [{ n: '0400000000' }, { n: '0400000000' }],
    [
      { phone: '+61400000000', parse_with_country_code: true },
      { c: '61', n: '400000000' },
    ],
    [
      { phone: '+1 (415) 555-0100', parse_with_country_code: true },
      { c: '1', n: '4155550100' },
    ],
    [{ phone: '0400000000' }, { n: '0400000000' }],
  ])('reads %p as %p', (value, stored) => {
    expect(parseFieldValue('phn::phone', 'phn', value)).toEqual(stored);
  });
  it.each([
    ['+61400000000'],
    [{ c: '61' }],
    [{ c: '6100', n: '400000000' }],
    [{ c: '61', n: 'four' }],
    [{ phone: 'call me', parse_with_country_code: true }],
  ])('refuses %p', (value) => {
    expect(problemOf(() => parseFieldValue('phn::phone', 'phn', value))).toMatch(/^phn::phone: /);
  });
});

describe('idt', () => {
  it('accepts IDs of 24 hex characters only', () => {
    expect(parseFieldValue('idt::o', 'idt', '65a0000000000000000000c1')).toBe(
      '65a0000000000000000000c1',
    );
    expect(() => parseFieldValue('idt::o', 'idt', '65A0000000000000000000C1')).toThrow(
      FieldValueError,
    );
  });
});
