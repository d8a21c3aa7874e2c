import { describe, expect, it } from '@jest/globals';
import {
  FieldValueError,
  InvalidTimeZoneError,
  ValidationError,
} from '../../../shared/domain/errors.js';
import {
  FieldCatalog,
  ORGANIZATION_BUILT_INS,
  PERSON_BUILT_INS,
} from '../../../shared/domain/fields/field-catalog.js';
import { parseFieldId } from '../../../shared/domain/fields/field-id.js';

describe('field IDs', () => {
  it.each([
    ['str::email', { type: 'str', namespace: '', name: 'email' }],
    ['str:cm:favourite-colour', { type: 'str', namespace: 'cm', name: 'favourite-colour' }],
    ['int:o:employees', { type: 'int', namespace: 'o', name: 'employees' }],
    ['geo:oc:hq-city', { type: 'geo', namespace: 'oc', name: 'hq-city' }],
    ['str::person_id', { type: 'str', namespace: '', name: 'person_id' }],
  ])('parses %s', (id, parts) => {
    expect(parseFieldId(id)).toEqual({ id, ...parts });
  });

  it.each([
    ['email', /not a field ID/],
    ['str:email', /not a field ID/],
    ['abc::email', /unknown type "abc"/],
    ['str:xx:email', /unknown namespace "xx"/],
    ['STR::email', /not a field ID/],
    ['str::', /not a field ID/],
  ])('explains what is wrong with %s', (id, problem) => {
    const parsed = parseFieldId(id);
    expect('problem' in parsed && parsed.problem).toMatch(problem);
  });
});

describe('the person field catalog', () => {
  const catalog = FieldCatalog.forPerson([
    { id: 'str:cm:favourite-colour', name: 'Favourite colour' },
  ]);

  it('holds every built-in person field of the spec with its type', () => {
    const ids = PERSON_BUILT_INS.map((field) => field.id);
    expect(ids).toEqual(
      expect.arrayContaining([
        'str::first',
        'str::last',
        'str::person_id',
        'phn::phone',
        'str::email',
        'geo::city',
        'geo::country',
        'geo::region',
        'dtz::b',
        'str::postal',
        'str::ei',
        'bol::gdpr',
        'bol::p',
        'str::u-ctx',
        'str::s-ctx',
        'bol::sp',
        'str::soi-ctx',
        'str::soo-ctx',
        'str::language',
        'int::v',
        'idt::o',
      ]),
    );
    expect(ORGANIZATION_BUILT_INS.map((field) => field.id)).toEqual([
      'str:o:name',
      'int:o:employees',
      'str:o:industry',
      'str:o:website',
      'geo:o:city',
      'str:o:address',
      'geo:o:region',
      'geo:o:country',
      'str:o:postal',
      'str:o:source',
    ]);
  });

  it('validates a fields object and keeps null (which clears under strategy 2)', () => {
    expect(
      catalog.parseValues({
        'str::email': 'ann@example.com',
        'str::first': null,
        'dtz::b': { year: 1990, month: 7, day: 14, timezone: 'Europe/Paris' },
        'str:cm:favourite-colour': 'teal',
      }),
    ).toEqual({
      'str::email': 'ann@example.com',
      'str::first': null,
      'dtz::b': { year: 1990, month: 7, day: 14, timezone: 'Europe/Paris' },
      'str:cm:favourite-colour': 'teal',
    });
  });

  it("leaves out a place sent as {} and gives a date without a zone the instance's", () => {
    const sydney = FieldCatalog.forPerson([], 'Australia/Sydney');
    expect(
      sydney.parseValues({
        'geo::city': {},
        'geo::country': { name: 'Australia' },
        'dtz::b': { year: 1990, month: 5, day: 15 },
      }),
    ).toEqual({
      'geo::country': { name: 'Australia' },
      'dtz::b': { year: 1990, month: 5, day: 15, timezone: 'Australia/Sydney' },
    });
    // Anything else that is not a place is still refused.
    expect(() => sydney.parseValues({ 'geo::city': { city: 'Sydney' } })).toThrow(/geo::city/);
  });

  it('names an unknown custom field', () => {
    expect(() => catalog.parseValues({ 'str:cm:shoe-size': '42' })).toThrow(
      new FieldValueError('str:cm:shoe-size', 'is not a custom field of this instance'),
    );
  });

  it('refuses organization fields and malformed IDs among person fields', () => {
    expect(() => catalog.parseValues({ 'str:o:name': 'Acme' })).toThrow(
      /str:o:name: is not a person field/,
    );
    expect(() => catalog.parseValues({ email: 'a@b.co' })).toThrow(/email: is not a field ID/);
  });

  it('refuses read-only fields', () => {
    expect(() => catalog.parseValues({ 'idt::o': '65a0000000000000000000c1' })).toThrow(
      'idt::o: is read-only',
    );
  });

  it('names the field whose value has the wrong type', () => {
    expect(() => catalog.parseValues({ 'bol::gdpr': 'yes' })).toThrow(
      /^bol::gdpr: expected true or false/,
    );
  });

  it('lets an invalid time zone through as its own error', () => {
    expect(() =>
      catalog.parseValues({ 'dtz::b': { year: 1990, month: 1, day: 1, timezone: 'Mars/Olympus' } }),
    ).toThrow(InvalidTimeZoneError);
  });

  it('refuses a fields value that is not an object', () => {
    expect(() => catalog.parseValues([], 'people[2].fields')).toThrow(
      new ValidationError('people[2].fields: expected an object of field IDs to values'),
    );
  });
});

describe('the organization field catalog', () => {
  const catalog = FieldCatalog.forOrganization([{ id: 'int:oc:revenue', name: 'Revenue' }]);

  it('validates built-in and custom organization fields', () => {
    expect(
      catalog.parseValues({
        'str:o:name': 'Acme',
        'int:oc:revenue': 120000,
        'geo:o:city': { name: 'Perth' },
      }),
    ).toEqual({ 'str:o:name': 'Acme', 'int:oc:revenue': 120000, 'geo:o:city': { name: 'Perth' } });
    expect(() => catalog.parseValues({ 'str::email': 'a@b.co' })).toThrow(
      'str::email: is not an organization field',
    );
  });
});
