import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../shared/domain/errors.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import { compileFilter as compileTree } from '../../../shared/domain/filters/filter.js';
import type { Person } from '../../../shared/domain/people/person.js';

const catalog = FieldCatalog.forPerson([{ id: 'int:cm:score', name: 'Score' }]);

/** person/get's use of the one filter language: a predicate over people, now. */
function compileFilter(filter: unknown, fields: FieldCatalog) {
  const compiled = compileTree(filter, { fields });
  return (subject: Person) => compiled({ person: subject }, Date.now()).matches;
}

function person(fields: Person['fields'], tags: string[] = [], organization?: string): Person {
  return {
    id: 'aaaaaaaaaaaaaaaaaaaaaaaa',
    fields,
    tags,
    ...(organization ? { organization_id: organization } : {}),
    created_at: '',
    updated_at: '',
  };
}

describe('person filters (the filter language as person/get uses it)', () => {
  it('matches 0 and "" as having a value, and absent (cleared) as not', () => {
    const has = compileFilter({ $has_any_value: { field_id: 'str::postal' } }, catalog);
    expect(has(person({ 'str::postal': '' }))).toBe(true);
    expect(has(person({}))).toBe(false);
    const score = compileFilter({ $has_any_value: { field_id: 'int:cm:score' } }, catalog);
    expect(score(person({ 'int:cm:score': 0 }))).toBe(true);
    const none = compileFilter({ $has_no_value: { field_id: 'int:cm:score' } }, catalog);
    expect(none(person({}))).toBe(true);
  });

  it('compares text without case, on strings and geo names', () => {
    const is = compileFilter({ '$str::is': { field_id: 'geo::city', value: 'sydney' } }, catalog);
    expect(is(person({ 'geo::city': { name: 'Sydney' } }))).toBe(true);
    const contains = compileFilter(
      { '$str::contains': { field_id: 'str::email', value: 'EXAMPLE' } },
      catalog,
    );
    expect(contains(person({ 'str::email': 'a@example.com' }))).toBe(true);
    const isNot = compileFilter(
      { '$str::is_not': { field_id: 'str::first', value: 'ann' } },
      catalog,
    );
    expect(isNot(person({ 'str::first': 'Ann' }))).toBe(false);
    expect(isNot(person({}))).toBe(true);
  });

  it('combines with $and and $or, and reads tags and the organization', () => {
    const filter = compileFilter(
      {
        $or: [
          {
            $and: [
              { '$int::greater_than': { field_id: 'int:cm:score', value: 5 } },
              { '$bol::is': { field_id: 'bol::p', value: true } },
            ],
          },
          { '$str::is': { field_id: 'tags', value: 'VIP' } },
          { '$str::is': { field_id: 'idt::o', value: 'bbbbbbbbbbbbbbbbbbbbbbbb' } },
        ],
      },
      catalog,
    );
    expect(filter(person({ 'int:cm:score': 6, 'bol::p': true }))).toBe(true);
    expect(filter(person({ 'int:cm:score': 6, 'bol::p': false }))).toBe(false);
    expect(filter(person({}, ['vip']))).toBe(true);
    expect(filter(person({}, [], 'bbbbbbbbbbbbbbbbbbbbbbbb'))).toBe(true);
    expect(filter(person({}))).toBe(false);
  });

  it.each([
    [[], 'filter: expected an object such as {"$and": [...]}'],
    [{ $and: [], $or: [] }, 'filter: expected exactly one operator'],
    [{ $or: [{ $bad: {} }] }, /^filter\.\$or\[0\]: unknown operator "\$bad"/],
    [
      { '$int::is': { field_id: 'int:cm:score', value: '3' } },
      'filter.$int::is.value: expected a number',
    ],
    [
      { '$str::is': { field_id: 'str::s-ctx', value: 'x' } },
      /filter\.\$str::is\.field_id: "str::s-ctx" is not a person field/,
    ],
  ])('refuses %j, naming where', (filter, message) => {
    let error: unknown;
    try {
      compileFilter(filter, catalog);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(message);
  });
});
