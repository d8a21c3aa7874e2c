import { parsePhoneNumberFromString } from 'libphonenumber-js/min';
import { FieldValueError, InvalidTimeZoneError } from '../errors.js';
import { TIME_ZONES } from '../timezones.js';
import type { FieldType } from './field-id.js';

/**
 * Value validation for every field type. Each parser takes what a client sent and returns
 * the value as it is stored, or throws a `FieldValueError` naming the field and what was
 * expected. `int` values are whole numbers; decimals and currency amounts are sent
 * multiplied by 1000 (64.28 as 64280), as API.md prescribes, and stored as sent.
 */
export interface DateValue {
  year: number;
  month: number;
  day: number;
  timezone: string;
}
export interface GeoValue {
  name: string;
}
export interface PhoneValue {
  c?: string;
  n: string;
}
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [member: string]: JsonValue;
}
/** The value of an object field (`obj`): any JSON object, at most `MAX_OBJECT_BYTES`. */
export type ObjectValue = JsonObject;
export type FieldValue =
  boolean | number | string | DateValue | GeoValue | PhoneValue | string[] | ObjectValue;

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * A value as text: a place's name, a phone as `+<c> <n>`, a date as YYYY-MM-DD, a set's
 * options joined by ", ", an object as JSON.
 */
export function textOf(value: FieldValue): string {
  if (typeof value !== 'object') return String(value);
  if (Array.isArray(value)) return value.join(', ');
  if (isGeoValue(value)) return value.name;
  if (isPhoneValue(value)) return value.c ? `+${value.c} ${value.n}` : value.n;
  if (isDateValue(value)) return `${value.year}-${pad(value.month)}-${pad(value.day)}`;
  return JSON.stringify(value);
}

/** What values of one field are ordered by (numbers by value, text without case). */
export function sortKeyOf(value: FieldValue): string | number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'object' && !Array.isArray(value) && isDateValue(value)) {
    return value.year * 10_000 + value.month * 100 + value.day;
  }
  if (typeof value === 'object' && !Array.isArray(value) && isPhoneValue(value)) {
    return `${value.c ?? ''}${value.n}`;
  }
  return textOf(value).toLowerCase();
}

/** The shapes of structured values, told apart by their members (`obj` values aside). */
const membersOf = (value: FieldValue): Record<string, unknown> | undefined =>
  typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

export function isDateValue(value: FieldValue): value is DateValue {
  return typeof membersOf(value)?.year === 'number';
}

export function isGeoValue(value: FieldValue): value is GeoValue {
  const members = membersOf(value);
  return typeof members?.name === 'string' && Object.keys(members).length === 1;
}

export function isPhoneValue(value: FieldValue): value is PhoneValue {
  const members = membersOf(value);
  return (
    typeof members?.n === 'string' &&
    Object.keys(members).every((member) => member === 'n' || member === 'c')
  );
}

export const MAX_STR_LENGTH = 255;
/** Long text is capped so that a record with many such fields still fits a DynamoDB item. */
export const MAX_TXT_LENGTH = 65_535;
/** The options a multi-select value may hold at once. */
export const MAX_SET_ITEMS = 100;
/** An object field's value in UTF-8 JSON (the real API's limit). */
export const MAX_OBJECT_BYTES = 15_000;

type Parser = (
  fieldId: string,
  value: unknown,
  format?: StringFormat,
  timeZone?: string,
) => FieldValue;

/** The zone of a date sent without one when the instance sets none (instance `timezone`). */
export const DEFAULT_TIME_ZONE = 'UTC';
export type StringFormat = 'email' | 'url' | 'language';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** Length in characters (code points), not UTF-16 units: an emoji counts once. */
function characterCount(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i += 1) {
    const unit = value.charCodeAt(i);
    if (unit < 0xdc00 || unit > 0xdfff) count += 1; // skip the second half of a pair
  }
  return count;
}

const EMAIL = /^[^\s@"<>()[\],;:]+@[^\s@"<>()[\],;:]+\.[^\s@"<>()[\],;:]+$/;
const LANGUAGE = /^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$/;

function checkFormat(fieldId: string, value: string, format: StringFormat | undefined): string {
  switch (format) {
    case 'email': {
      const email = value.trim();
      if (!EMAIL.test(email)) throw new FieldValueError(fieldId, 'expected an email address');
      return email;
    }
    case 'url': {
      const url = value.trim();
      if (!URL.canParse(url.includes('://') ? url : `https://${url}`)) {
        throw new FieldValueError(fieldId, 'expected a URL');
      }
      return url;
    }
    case 'language':
      if (!LANGUAGE.test(value)) {
        throw new FieldValueError(fieldId, 'expected a language code such as "en" or "pt-BR"');
      }
      return value;
    case undefined:
      return value;
  }
}

const parseStr: Parser = (fieldId, value, format) => {
  if (typeof value !== 'string') {
    throw new FieldValueError(fieldId, `expected a string, got ${describe(value)}`);
  }
  if (characterCount(value) > MAX_STR_LENGTH) {
    throw new FieldValueError(
      fieldId,
      `expected at most ${MAX_STR_LENGTH} characters (use a txt field for long text)`,
    );
  }
  return checkFormat(fieldId, value, format);
};

const parseTxt: Parser = (fieldId, value) => {
  if (typeof value !== 'string') {
    throw new FieldValueError(fieldId, `expected a string, got ${describe(value)}`);
  }
  if (characterCount(value) > MAX_TXT_LENGTH) {
    throw new FieldValueError(fieldId, `expected at most ${MAX_TXT_LENGTH} characters`);
  }
  return value;
};

const parseBol: Parser = (fieldId, value) => {
  if (typeof value !== 'boolean') {
    throw new FieldValueError(fieldId, `expected true or false, got ${describe(value)}`);
  }
  return value;
};

const parseInt: Parser = (fieldId, value) => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new FieldValueError(
      fieldId,
      `expected a whole number (decimals and currency are sent multiplied by 1000), got ${
        typeof value === 'number' ? String(value) : describe(value)
      }`,
    );
  }
  return value;
};

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * A date may come without `timezone` (real clients send birthdays so): it takes the
 * instance's zone. A `timezone` that is there must be one of the spec's.
 */
const parseDtz: Parser = (fieldId, value, _format, timeZone = DEFAULT_TIME_ZONE) => {
  if (!isPlainObject(value)) {
    throw new FieldValueError(
      fieldId,
      `expected a date object {year, month, day, timezone}, got ${describe(value)}`,
    );
  }
  const { year, month, day } = value;
  const timezone = value.timezone === undefined ? timeZone : value.timezone;
  for (const [member, part] of [
    ['year', year],
    ['month', month],
    ['day', day],
  ] as const) {
    if (typeof part !== 'number' || !Number.isInteger(part)) {
      throw new FieldValueError(fieldId, `expected "${member}" to be an integer`);
    }
  }
  const y = year as number;
  const m = month as number;
  const d = day as number;
  if (y < 1 || y > 9999) throw new FieldValueError(fieldId, 'expected a year from 1 to 9999');
  if (m < 1 || m > 12) throw new FieldValueError(fieldId, 'expected a month from 1 to 12');
  if (d < 1 || d > daysInMonth(y, m)) {
    throw new FieldValueError(fieldId, `${y}-${m}-${d} is not a calendar date`);
  }
  if (typeof timezone !== 'string') {
    throw new FieldValueError(fieldId, 'expected "timezone" to be a time zone name such as "UTC"');
  }
  if (!TIME_ZONES.has(timezone)) throw new InvalidTimeZoneError(fieldId, timezone);
  return { year: y, month: m, day: d, timezone };
};

const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}(?::?\d{2})?)$/i;

/** Parses an ISO 8601 timestamp that has a date, a time and a zone; `undefined` if it is not one. */
export function parseTimestamp(value: string): Date | undefined {
  const match = ISO_TIMESTAMP.exec(value);
  if (!match) return undefined;
  const [, y = '', mo = '', d = '', h = '', mi = '', s = '0'] = match;
  const [year, month, day] = [Number(y), Number(mo), Number(d)];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const date = new Date(value.replace(' ', 'T'));
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** Timestamps are stored in UTC (`toISOString`), so that they compare and sort as strings. */
const parseTme: Parser = (fieldId, value) => {
  const date = typeof value === 'string' ? parseTimestamp(value) : undefined;
  if (!date) {
    throw new FieldValueError(
      fieldId,
      'expected an ISO 8601 timestamp with date, time and zone, e.g. "2024-05-01T09:30:00Z"',
    );
  }
  return date.toISOString();
};

const parseGeo: Parser = (fieldId, value) => {
  if (!isPlainObject(value) || typeof value.name !== 'string' || value.name.trim() === '') {
    throw new FieldValueError(fieldId, 'expected an object {"name": "<place name>"}');
  }
  if (characterCount(value.name) > MAX_STR_LENGTH) {
    throw new FieldValueError(fieldId, `expected a name of at most ${MAX_STR_LENGTH} characters`);
  }
  return { name: value.name.trim() };
};

const PHONE_FORMATTING = /[\s().-]/g;
const DIGITS = /^\d+$/;

function phoneFromE164(fieldId: string, phone: string): PhoneValue {
  const parsed = parsePhoneNumberFromString(phone.startsWith('+') ? phone : `+${phone}`);
  if (!parsed) {
    throw new FieldValueError(fieldId, `"${phone}" is not a phone number with a country code`);
  }
  return { c: parsed.countryCallingCode, n: parsed.nationalNumber };
}

/**
 * Phones are `{c, n}`: country calling code and the number without its trunk prefix.
 * Clients of the original API also send `{"phone": "+61400000000", "parse_with_country_code":
 * true}` and `{"n": "..."}` alone; both are accepted (DESIGN.md, Compatibility).
 */
const parsePhn: Parser = (fieldId, value) => {
  if (!isPlainObject(value)) {
    throw new FieldValueError(fieldId, `expected a phone object {c, n}, got ${describe(value)}`);
  }
  if (typeof value.phone === 'string') {
    const phone = value.phone.replace(PHONE_FORMATTING, '');
    if (value.parse_with_country_code === true) return phoneFromE164(fieldId, phone);
    const national = phone.replace(/^\+/, '');
    if (!DIGITS.test(national)) {
      throw new FieldValueError(fieldId, '"phone" must contain only digits');
    }
    return { n: national };
  }
  const rawC: unknown = value.c;
  const rawN: unknown = value.n;
  if (typeof rawN !== 'string' && typeof rawN !== 'number') {
    throw new FieldValueError(fieldId, 'expected a phone object with "n", the number, as a string');
  }
  const n = String(rawN).replace(PHONE_FORMATTING, '');
  if (!DIGITS.test(n) || n.length < 3 || n.length > 17) {
    throw new FieldValueError(fieldId, 'expected "n" to be 3 to 17 digits');
  }
  if (rawC === undefined || rawC === null || rawC === '') return { n };
  if (typeof rawC !== 'string' && typeof rawC !== 'number') {
    throw new FieldValueError(fieldId, 'expected "c", the country code, as a string of digits');
  }
  const c = String(rawC).replace(/^\+/, '');
  if (!/^\d{1,3}$/.test(c)) {
    throw new FieldValueError(
      fieldId,
      'expected "c" to be a country calling code of 1 to 3 digits',
    );
  }
  // Drop a national trunk prefix (the leading 0 of 0400 000 000 in Australia) where the
  // numbering plan has one; keep the number as sent where it cannot be interpreted.
  const parsed = parsePhoneNumberFromString(n, { defaultCallingCode: c });
  return parsed?.countryCallingCode === c ? { c, n: parsed.nationalNumber } : { c, n };
};

/** Organization IDs (`idt::o`) are only ever produced by the service. */
const parseIdt: Parser = (fieldId, value) => {
  if (typeof value !== 'string' || !/^[0-9a-f]{24}$/.test(value)) {
    throw new FieldValueError(fieldId, 'expected an ID of 24 hexadecimal characters');
  }
  return value;
};

/**
 * A multi-select value: strings, each at most `MAX_STR_LENGTH` characters, kept once each in
 * the order first sent. A single string is one option (clients send one as they would to a
 * single select).
 */
const parseSst: Parser = (fieldId, value) => {
  const items = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(items)) {
    throw new FieldValueError(fieldId, `expected an array of strings, got ${describe(value)}`);
  }
  if (items.length > MAX_SET_ITEMS) {
    throw new FieldValueError(fieldId, `expected at most ${MAX_SET_ITEMS} options`);
  }
  const kept: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string') {
      throw new FieldValueError(
        fieldId,
        `expected an array of strings, got ${describe(item)} in it`,
      );
    }
    if (characterCount(item) > MAX_STR_LENGTH) {
      throw new FieldValueError(
        fieldId,
        `expected options of at most ${MAX_STR_LENGTH} characters`,
      );
    }
    if (!kept.includes(item)) kept.push(item);
  }
  return kept;
};

const parseObj: Parser = (fieldId, value) => {
  if (!isPlainObject(value)) {
    throw new FieldValueError(fieldId, `expected a JSON object, got ${describe(value)}`);
  }
  const text = JSON.stringify(value);
  if (Buffer.byteLength(text, 'utf8') > MAX_OBJECT_BYTES) {
    throw new FieldValueError(fieldId, `expected an object of at most ${MAX_OBJECT_BYTES} bytes`);
  }
  // Parsed back: a plain JSON value, whatever the request's object held.
  return JSON.parse(text) as ObjectValue;
};

const PARSERS: Record<FieldType, Parser> = {
  bol: parseBol,
  dtz: parseDtz,
  tme: parseTme,
  geo: parseGeo,
  int: parseInt,
  phn: parsePhn,
  str: parseStr,
  txt: parseTxt,
  idt: parseIdt,
  sst: parseSst,
  obj: parseObj,
};

/**
 * Validates one non-null value of a field of the given type and returns it as stored;
 * `timeZone` is the instance's, given to a date sent without one.
 */
export function parseFieldValue(
  fieldId: string,
  type: FieldType,
  value: unknown,
  format?: StringFormat,
  timeZone?: string,
): FieldValue {
  return PARSERS[type](fieldId, value, format, timeZone);
}

/** What a value of each type looks like, for error messages and documentation. */
export const TYPE_DESCRIPTIONS: Record<FieldType, string> = {
  bol: 'true or false',
  dtz: 'a date object {year, month, day, timezone?}',
  tme: 'an ISO 8601 timestamp with date, time and zone',
  geo: 'an object {name}',
  int: 'a whole number (decimals and currency multiplied by 1000)',
  phn: 'a phone object {c, n}',
  str: `a string of at most ${MAX_STR_LENGTH} characters`,
  txt: `a string of at most ${MAX_TXT_LENGTH} characters`,
  idt: 'an ID of 24 hexadecimal characters',
  sst: 'an array of strings',
  obj: 'a JSON object',
};
