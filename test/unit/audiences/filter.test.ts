import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../shared/domain/errors.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import { compileFilter, dependsOnTime } from '../../../shared/domain/filters/filter.js';
import type { Person } from '../../../shared/domain/people/person.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-24T12:00:00Z');
const context = {
  fields: FieldCatalog.forPerson([
    { id: 'str:cm:plan', name: 'Plan' },
    { id: 'int:cm:score', name: 'Score' },
  ]),
  tagName: (idOrName: number | string) =>
    new Map<string, string>([
      ['1', 'My team'],
      ['2', 'VIP'],
    ]).get(String(idOrName)) ?? (typeof idOrName === 'string' ? idOrName : undefined),
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

const matches = (filter: unknown, subject: Person, now = NOW) =>
  compileFilter(filter, context)({ person: subject }, now).matches;

function refusal(filter: unknown): string {
  try {
    compileFilter(filter, context);
  } catch (error) {
    if (error instanceof ValidationError) return error.message;
    throw error;
  }
  return 'accepted';
}

describe('the filter language', () => {
  it('reads the recorded answers’ shape: nested $and/$or with tag, text and boolean conditions', () => {
    const filter = {
      $and: [
        { $and: [{ '$u4s::is': { field_id: 'u4s::t', value: 2 } }] },
        {
          $or: [
            { '$str::is': { field_id: 'str:cm:plan', value: 'Gold' } },
            { '$bol::is': { field_id: 'bol::p', value: false } },
          ],
        },
      ],
    };
    expect(matches(filter, person({ 'str:cm:plan': 'gold' }, { tags: ['VIP'] }))).toBe(true);
    expect(matches(filter, person({ 'str:cm:plan': 'silver' }, { tags: ['VIP'] }))).toBe(false);
    expect(matches(filter, person({ 'bol::p': false }, { tags: ['vip'] }))).toBe(true);
    expect(matches(filter, person({ 'str:cm:plan': 'gold' }))).toBe(false);
  });

  it('compares numbers, texts and presence as the operators name', () => {
    const score = (op: string, value: unknown, extra: object = {}) => ({
      [op]: { field_id: 'int:cm:score', value, ...extra },
    });
    const p = person({ 'int:cm:score': 20, 'str::email': 'Ann@Example.com' });
    expect(matches(score('$int::greater_than', 10), p)).toBe(true);
    expect(matches(score('$int::less_than', 10), p)).toBe(false);
    expect(matches(score('$int::between', [30, 10]), p)).toBe(true);
    expect(matches(score('$int::not_between', [10, 30]), p)).toBe(false);
    expect(matches(score('$int::less_than', 1, { not_existing_as_zero: true }), person({}))).toBe(
      true,
    );
    expect(matches(score('$int::less_than', 1), person({}))).toBe(false);
    const email = (op: string, value: string) => ({ [op]: { field_id: 'str::email', value } });
    expect(matches(email('$str::contains', 'EXAMPLE'), p)).toBe(true);
    expect(matches(email('$str::starts', 'ann@'), p)).toBe(true);
    expect(matches(email('$str::ends', '.org'), p)).toBe(false);
    expect(matches(email('$str::does_not_contains', 'bob'), p)).toBe(true);
    expect(matches({ $has_any_value: { field_id: 'str::first' } }, p)).toBe(false);
    expect(matches({ $has_no_value: { field_id: 'str::first' } }, p)).toBe(true);
  });

  it('says when a relative time condition will change, so the daily job knows whom to revisit', () => {
    const seen = person({ 'tme::last-seen': new Date(NOW - 10 * DAY).toISOString() });
    const slipping = compileFilter(
      { '$tme::relative_more_than': { field_id: 'l', days_ago: 30 } },
      context,
    );
    const now = slipping({ person: seen }, NOW);
    expect(now.matches).toBe(false);
    // It starts to match 30 days after the last visit: 20 days from now.
    expect(Math.round(((now.changesAt ?? 0) - NOW) / DAY)).toBe(20);
    expect(slipping({ person: seen }, NOW + 21 * DAY).matches).toBe(true);
    expect(dependsOnTime({ $and: [{ '$tme::relative_more_than': {} }] })).toBe(true);
    expect(dependsOnTime({ $and: [{ '$str::is': {} }] })).toBe(false);
    const recent = compileFilter(
      { '$tme::absolute_after': { field_id: 'c', value: '2025-06-01' } },
      context,
    );
    expect(recent({ person: seen }, NOW)).toEqual({ matches: true });
  });

  it.each([
    [{ '$str::sounds_like': { field_id: 'str::first', value: 'x' } }, 'filter: unknown operator'],
    [{ $and: [] }, 'filter.$and: expected a non-empty array'],
    [
      { $and: [{ '$int::is': { field_id: 'str::first', value: 1 } }] },
      'filter.$and[0].$int::is.field_id',
    ],
    [
      { $and: [{ '$str::is': { field_id: 'str:cm:plan', value: 3 } }] },
      'filter.$and[0].$str::is.value: expected a string',
    ],
    [{ '$str::is': { field_id: 'str:cm:nope', value: 'x' } }, 'is not a person field'],
    [{ '$str::is': { field_id: 'str::first' }, $or: [] }, 'filter: expected exactly one operator'],
    [[{ '$str::is': {} }], 'filter: expected an object'],
    [{ '$tme::relative_more_than': { field_id: 'l', days_ago: -1 } }, 'days_ago'],
  ])('refuses %j naming the path', (filter, message) => {
    expect(refusal(filter)).toContain(message);
  });

  it('refuses more than 50 conditions and more than 10 levels', () => {
    const condition = { '$str::is': { field_id: 'str::first', value: 'x' } };
    expect(refusal({ $or: Array.from({ length: 51 }, () => condition) })).toContain(
      'more than 50 conditions',
    );
    let deep: unknown = condition;
    for (let level = 0; level < 11; level += 1) deep = { $and: [deep] };
    expect(refusal(deep)).toContain('nested deeper than 10 levels');
  });
});
