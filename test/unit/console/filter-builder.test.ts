import { describe, expect, it } from '@jest/globals';
import {
  composeFilter,
  conditionJson,
  type DraftCondition,
  type ValueKind,
} from '../../../console/src/filter-builder.js';
import {
  CONDITION_OPERATORS,
  filterFieldsOf,
  OPERATOR_FORMS,
} from '../../../shared/domain/console/console-audiences.js';
import { ValidationError } from '../../../shared/domain/errors.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import { compileFilter } from '../../../shared/domain/filters/filter.js';
import type { Person } from '../../../shared/domain/people/person.js';

/**
 * The console's filter builder: the fields and operators the server offers (every operator of
 * the filter language, each only for the field types it reads), and the filters the page
 * composes from them, which the public API's parser accepts and evaluates as meant.
 */
const fields = FieldCatalog.forPerson([
  { id: 'str:cm:plan', name: 'Plan' },
  { id: 'int:cm:score', name: 'Score' },
  { id: 'bol:cm:trial', name: 'On trial' },
  { id: 'dtz:cm:renewal', name: 'Renewal' },
]);
const tenant = { personFields: fields };
const NOW = Date.parse('2026-12-07T12:00:00Z');

/** A value the builder's inputs would hold for each kind. */
const SAMPLE: Record<ValueKind, Pick<DraftCondition, 'value' | 'value2'>> = {
  none: { value: '', value2: '' },
  boolean: { value: 'true', value2: '' },
  text: { value: 'pro', value2: '' },
  number: { value: '5', value2: '' },
  'number-range': { value: '1', value2: '10' },
  days: { value: '30', value2: '' },
  date: { value: '2026-01-31', value2: '' },
  'date-range': { value: '2026-01-01', value2: '2026-12-31' },
};

function person(fields: Person['fields'], extra: Partial<Person> = {}): Person {
  return {
    id: 'a'.repeat(24),
    fields,
    tags: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

describe('the fields and operators the builder offers', () => {
  it('gives every condition operator of the language a label and a kind of value', () => {
    expect(Object.keys(OPERATOR_FORMS).sort()).toEqual([...CONDITION_OPERATORS].sort());
    expect(CONDITION_OPERATORS).toContain('$int::greater_than');
    expect(CONDITION_OPERATORS).not.toContain('$and');
  });

  it('offers each field only the operators that read its type', () => {
    const offered = new Map(
      filterFieldsOf(tenant).map((field) => [
        field.id,
        field.operators.map((operator) => operator.operator),
      ]),
    );
    expect([...offered.keys()].slice(0, 5)).toEqual([
      'c',
      'l',
      'u4s::t',
      'idt::o',
      'str::person_id',
    ]);
    expect(offered.get('int:cm:score')).toEqual([
      '$has_any_value',
      '$has_no_value',
      '$int::is',
      '$int::is_not',
      '$int::greater_than',
      '$int::less_than',
      '$int::between',
      '$int::not_between',
    ]);
    expect(offered.get('bol:cm:trial')).toEqual(['$has_any_value', '$has_no_value', '$bol::is']);
    expect(offered.get('u4s::t')).toEqual(expect.arrayContaining(['$u4s::is', '$u4s::is_not']));
    expect(offered.get('u4s::t')).not.toContain('$int::is');
    expect(offered.get('l')).toContain('$tme::relative_less_than');
    expect(offered.get('dtz:cm:renewal')).toContain('$dtz::absolute_between');
    expect(offered.get('idt::o')).toContain('$id_is');
    // Fields kept elsewhere (context messages, the conversion value) cannot be filtered on.
    expect(offered.has('str::u-ctx')).toBe(false);
    expect(offered.has('int::v')).toBe(false);
    const plan = filterFieldsOf(tenant).find((field) => field.id === 'str:cm:plan');
    expect(plan?.label).toBe('Plan');
    expect(plan?.operators.find((o) => o.operator === '$str::contains')).toEqual({
      operator: '$str::contains',
      label: 'contains',
      kind: 'text',
    });
  });

  it('composes, for every field and every operator offered, a filter the API’s parser accepts', () => {
    let checked = 0;
    for (const field of filterFieldsOf(tenant)) {
      for (const { operator, kind } of field.operators) {
        const filter = composeFilter('and', [
          { field_id: field.id, operator, kind, ...SAMPLE[kind] },
        ]);
        expect(() => compileFilter(filter, { fields })).not.toThrow();
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });
});

describe('the filter the builder writes', () => {
  it('writes each kind of value as the language takes it', () => {
    const on = (kind: ValueKind, operator: string, value: string, value2 = '') =>
      conditionJson({ field_id: 'f', operator, kind, value, value2 });
    expect(on('none', '$has_any_value', 'ignored')).toEqual({ $has_any_value: { field_id: 'f' } });
    expect(on('boolean', '$bol::is', 'false')).toEqual({
      '$bol::is': { field_id: 'f', value: false },
    });
    expect(on('number', '$int::is', ' 42 ')).toEqual({ '$int::is': { field_id: 'f', value: 42 } });
    expect(on('number-range', '$int::between', '1', '9')).toEqual({
      '$int::between': { field_id: 'f', value: [1, 9] },
    });
    expect(on('days', '$tme::relative_more_than', '7')).toEqual({
      '$tme::relative_more_than': { field_id: 'f', days_ago: 7 },
    });
    expect(on('date-range', '$tme::absolute_between', '2026-01-01 ', '2026-02-01')).toEqual({
      '$tme::absolute_between': { field_id: 'f', value: ['2026-01-01', '2026-02-01'] },
    });
    expect(on('text', '$str::is', ' Pro ')).toEqual({
      '$str::is': { field_id: 'f', value: ' Pro ' },
    });
  });

  it('combines conditions with and or or, and the result selects whom it says', () => {
    const conditions: DraftCondition[] = [
      { field_id: 'str:cm:plan', operator: '$str::is', kind: 'text', value: 'pro', value2: '' },
      {
        field_id: 'int:cm:score',
        operator: '$int::greater_than',
        kind: 'number',
        value: '50',
        value2: '',
      },
    ];
    const all = composeFilter('and', conditions);
    const any = composeFilter('or', conditions);
    expect(all).toEqual({
      $and: [
        { '$str::is': { field_id: 'str:cm:plan', value: 'pro' } },
        { '$int::greater_than': { field_id: 'int:cm:score', value: 50 } },
      ],
    });
    expect(Object.keys(any)).toEqual(['$or']);
    const proLow = person({ 'str:cm:plan': 'Pro', 'int:cm:score': 10 });
    const matches = (filter: unknown, subject: Person) =>
      compileFilter(filter, { fields })({ person: subject }, NOW).matches;
    expect(matches(all, proLow)).toBe(false);
    expect(matches(any, proLow)).toBe(true);
    expect(matches(all, person({ 'str:cm:plan': 'pro', 'int:cm:score': 51 }))).toBe(true);
  });

  it('leaves a value that is not a number as typed, for the parser to refuse by its path', () => {
    const filter = composeFilter('and', [
      {
        field_id: 'int:cm:score',
        operator: '$int::greater_than',
        kind: 'number',
        value: 'lots',
        value2: '',
      },
    ]);
    expect(filter).toEqual({
      $and: [{ '$int::greater_than': { field_id: 'int:cm:score', value: 'lots' } }],
    });
    let refusal: unknown;
    try {
      compileFilter(filter, { fields });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(ValidationError);
    expect((refusal as ValidationError).message).toBe(
      'filter.$and[0].$int::greater_than.value: expected a number',
    );
  });
});
