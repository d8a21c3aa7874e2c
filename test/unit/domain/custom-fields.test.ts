import { describe, expect, it } from '@jest/globals';
import {
  createCustomField,
  type CustomFieldWriter,
} from '../../../shared/domain/fields/custom-field-api.js';
import {
  kebabName,
  plannedField,
  updatedField,
  type CustomFieldConfig,
} from '../../../shared/domain/fields/custom-fields.js';
import {
  customFieldId,
  DISPLAY_TYPE_NAMES,
  DISPLAY_TYPES,
  trackingRefusal,
  type DisplayTypeRule,
} from '../../../shared/domain/fields/display-types.js';
import { ValidationError } from '../../../shared/domain/errors.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import { holderOf, tagCountDeltas, withCounted } from '../../../shared/domain/people/tag-counts.js';
import { testTenant } from '../fixtures.js';

const NOW = '2026-01-01T00:00:00.000Z';

function refusal(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    if (error instanceof ValidationError) return error.message;
    throw error;
  }
  throw new Error('not refused');
}

describe('custom fields as the real API creates them', () => {
  it('derives the ID from the display type and the kebab-case name', () => {
    expect(kebabName('  Job Title (Main) ')).toBe('job-title-main');
    expect(kebabName('Café au lait')).toBe('cafe-au-lait');
    const cases: [string, string][] = [
      ['text', 'str:cm:x'],
      ['large_text', 'txt:cm:x'],
      ['integer', 'int:cm:x'],
      ['decimal', 'int:cm:x'],
      ['currency', 'int:cm:x'],
      ['price', 'int:cm:x'],
      ['date', 'dtz:cm:x'],
      ['time', 'tme:cm:x'],
      ['bool', 'bol:cm:x'],
      ['phone', 'phn:cm:x'],
      ['link', 'str:cm:x'],
      ['email', 'str:cm:x'],
      ['multi_select', 'sst:cm:x'],
      ['object', 'obj:cm:x'],
    ];
    for (const [type, id] of cases) {
      const values = type.endsWith('select') ? ['A'] : undefined;
      expect(
        plannedField('person', { name: 'X', type, ...(values ? { values } : {}) }, NOW).id,
      ).toBe(id);
    }
    expect(
      plannedField('organization', { name: 'Tier', type: 'single_select', values: ['A'] }, NOW),
    ).toEqual({
      id: 'str:oc:tier',
      name: 'Tier',
      display_type: 'single_select',
      values: ['A'],
      source: 'api',
      created_at: NOW,
    });
  });

  it('gives price, email and object fields the value rules of their display type', () => {
    const catalog = FieldCatalog.forPerson(
      (['price', 'email', 'object'] as const).map((type) =>
        plannedField('person', { name: `My ${type}`, type }, NOW),
      ),
    );
    // A price is sent and stored ×1000 (API.md), so a whole number: 12.50 is 12500.
    expect(catalog.get('int:cm:my-price')).toMatchObject({ displayType: 'price', scale: 1000 });
    expect(
      catalog.parseValues({
        'int:cm:my-price': 12_500,
        'str:cm:my-email': ' ada@example.com ',
        'obj:cm:my-object': { plan: 'pro', seats: 3 },
      }),
    ).toEqual({
      'int:cm:my-price': 12_500,
      'str:cm:my-email': 'ada@example.com',
      'obj:cm:my-object': { plan: 'pro', seats: 3 },
    });
    expect(refusal(() => catalog.parseValues({ 'int:cm:my-price': 12.5 }))).toMatch(
      /^int:cm:my-price: expected a whole number/,
    );
    expect(refusal(() => catalog.parseValues({ 'str:cm:my-email': 'not an address' }))).toBe(
      'str:cm:my-email: expected an email address',
    );
    expect(refusal(() => catalog.parseValues({ 'obj:cm:my-object': 'text' }))).toMatch(
      /^obj:cm:my-object: /,
    );
  });

  it('refuses an unknown type, options on a plain type, a select without options, naming each', () => {
    expect(refusal(() => plannedField('person', { name: 'X', type: 'colour' }, NOW))).toMatch(
      /^type: /,
    );
    expect(
      refusal(() => plannedField('person', { name: 'X', type: 'text', values: ['A'] }, NOW)),
    ).toMatch(/^values: /);
    expect(
      refusal(() => plannedField('person', { name: 'X', type: 'single_select' }, NOW)),
    ).toMatch(/^values: /);
    expect(refusal(() => plannedField('person', { name: '!!!', type: 'text' }, NOW))).toMatch(
      /^name: /,
    );
    expect(
      refusal(() =>
        plannedField('organization', { name: 'X', type: 'text', track_changes: true }, NOW),
      ),
    ).toMatch(/^track_changes: /);
  });

  it("previews what the API creates: the console's ID and tracking agree with plannedField", () => {
    for (const kind of ['person', 'organization'] as const) {
      for (const type of DISPLAY_TYPE_NAMES) {
        const rule: DisplayTypeRule = DISPLAY_TYPES[type];
        const values = rule.select ? ['A'] : undefined;
        const planned = plannedField(kind, { name: 'Café Zone 2', type, values }, NOW);
        expect(customFieldId(kind, rule, kebabName('Café Zone 2'))).toBe(planned.id);
        const tracked = () =>
          plannedField(kind, { name: 'T', type, values, track_changes: true }, NOW);
        const why = trackingRefusal(kind, type);
        if (why === undefined) expect(tracked().track_changes).toBe(true);
        else expect(refusal(tracked)).toBe(`track_changes: ${why}`);
      }
    }
  });

  it('replaces, adds and removes options; a field without options refuses them', () => {
    const field: CustomFieldConfig = {
      id: 'str:cm:plan',
      name: 'Plan',
      display_type: 'single_select',
      values: ['Free', 'Pro'],
    };
    expect(
      updatedField('person', field, { field_id: field.id, add_values: ['Pro', 'Team'] }).values,
    ).toEqual(['Free', 'Pro', 'Team']);
    expect(
      updatedField('person', field, { field_id: field.id, remove_values: ['Free'] }).values,
    ).toEqual(['Pro']);
    expect(
      updatedField('person', field, { field_id: field.id, replace_values: ['X'] }).values,
    ).toEqual(['X']);
    expect(
      refusal(() =>
        updatedField('person', field, { field_id: field.id, remove_values: ['Free', 'Pro'] }),
      ),
    ).toMatch(/^remove_values: /);
    const text: CustomFieldConfig = { id: 'str:cm:note', name: 'Note' };
    expect(
      refusal(() => updatedField('person', text, { field_id: text.id, values: ['A'] })),
    ).toMatch(/^values: /);
  });

  it('answers each store outcome as the 400 naming the member (a name taken, the limit)', async () => {
    const tenant = testTenant();
    const writer = (kind: 'name-taken' | 'full' | 'added'): CustomFieldWriter => ({
      addCustomField: () =>
        Promise.resolve(kind === 'name-taken' ? { kind, id: 'str:cm:plan' } : { kind }),
      updateCustomField: () => Promise.resolve({ kind: 'unknown' }),
      deleteCustomField: () => Promise.resolve({ kind: 'unknown' }),
    });
    const request = { name: 'Plan', type: 'text' };
    await expect(
      createCustomField('person', request, tenant, writer('name-taken')),
    ).rejects.toThrow(/^name: .*str:cm:plan/);
    await expect(createCustomField('person', request, tenant, writer('full'))).rejects.toThrow(
      /100 custom person fields/,
    );
    await expect(createCustomField('person', request, tenant, writer('added'))).resolves.toEqual({
      name: 'Plan',
      field_id: 'str:cm:plan',
      display_type: 'text',
    });
  });
});

describe('tag count changes', () => {
  const person = (tags: string[], email: boolean) =>
    holderOf({ tags, fields: { 'bol::p': email } });

  it('moves count and subscribers by what a write changes, and nothing else', () => {
    expect(tagCountDeltas(undefined, person(['a', 'b'], true))).toEqual(
      new Map([
        ['a', { count: 1, subscribers: 1, sms_opted_in: 0 }],
        ['b', { count: 1, subscribers: 1, sms_opted_in: 0 }],
      ]),
    );
    // Untagged from b, tagged c, unsubscribed: a keeps its count, loses a subscriber.
    expect(tagCountDeltas(person(['a', 'b'], true), person(['a', 'c'], false))).toEqual(
      new Map([
        ['a', { count: 0, subscribers: -1, sms_opted_in: 0 }],
        ['b', { count: -1, subscribers: -1, sms_opted_in: 0 }],
        ['c', { count: 1, subscribers: 0, sms_opted_in: 0 }],
      ]),
    );
    expect(tagCountDeltas(person(['a'], true), person(['a'], true)).size).toBe(0);
  });

  it('archived people count nowhere: archive takes them out, restore puts them back', () => {
    const held = person(['a'], true);
    expect(tagCountDeltas(held, withCounted(held, false)).get('a')).toEqual({
      count: -1,
      subscribers: -1,
      sms_opted_in: 0,
    });
    expect(tagCountDeltas(withCounted(held, false), held).get('a')).toEqual({
      count: 1,
      subscribers: 1,
      sms_opted_in: 0,
    });
    // Erasing an archived person changes no count.
    expect(tagCountDeltas(withCounted(held, false), undefined).size).toBe(0);
  });
});
