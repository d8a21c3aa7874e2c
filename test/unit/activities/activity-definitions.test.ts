import { describe, expect, it } from '@jest/globals';
import {
  compileDefinition,
  parseAttributes,
  renderDisplayText,
} from '../../../shared/domain/activities/activity-definitions.js';
import { FieldValueError, InvalidTimeZoneError } from '../../../shared/domain/errors.js';

const purchase = compileDefinition({
  id: 'act:cm:purchased',
  name: 'Purchased',
  display_text: 'Bought {{attribute.item_name}} ({{ attribute.price }}) {{attribute.missing}}',
  attributes: [
    { id: 'str:cm:item', name: 'Item Name' },
    { id: 'int:cm:price', name: 'Price', kind: 'currency' },
    { id: 'geo:cm:store', name: 'Store' },
    { id: 'dtz:cm:delivery', name: 'Delivery' },
  ],
  conversion_value: true,
  track_as_touch: false,
});

describe('activity attributes', () => {
  it('reads defined attributes with their types and drops the others', () => {
    expect(
      parseAttributes(purchase, {
        'str:cm:item': 'Cup',
        'int:cm:price': 4990,
        'str:cm:other': 'x',
        'int::v': 4990,
      }),
    ).toEqual({ values: { 'str:cm:item': 'Cup', 'int:cm:price': 4990 }, conversionValue: 4990 });
  });

  it('keeps int::v only when the definition enables the conversion value', () => {
    const plain = compileDefinition({ ...purchase.config, conversion_value: false });
    expect(parseAttributes(plain, { 'int::v': 100 })).toEqual({ values: {} });
  });

  it('refuses a wrong value, and answers an invalid time zone as everywhere', () => {
    expect(() => parseAttributes(purchase, { 'int:cm:price': 49.9 })).toThrow(FieldValueError);
    expect(() => parseAttributes(purchase, { 'int::v': 'lots' })).toThrow(FieldValueError);
    expect(() =>
      parseAttributes(purchase, {
        'dtz:cm:delivery': { year: 2026, month: 1, day: 1, timezone: 'Nowhere' },
      }),
    ).toThrow(InvalidTimeZoneError);
  });
});

describe('display text', () => {
  it('replaces {{attribute.<name>}}: the name in lower case with spaces as underscores', () => {
    expect(renderDisplayText(purchase, { 'str:cm:item': 'Cup', 'int:cm:price': 4990 })).toBe(
      'Bought Cup (4990) ',
    );
  });

  it('falls back to the definition name and renders geo values by name', () => {
    const visit = compileDefinition({ ...purchase.config, display_text: 'At {{attribute.store}}' });
    expect(renderDisplayText(visit, { 'geo:cm:store': { name: 'Sydney' } })).toBe('At Sydney');
    const plain = compileDefinition({ ...purchase.config, display_text: undefined });
    expect(renderDisplayText(plain, {})).toBe('Purchased');
  });
});
