import type { FieldType } from './field-id.js';
import type { StringFormat } from './field-values.js';

/**
 * Custom fields as the real API creates and describes them (`person/custom-field/…`,
 * `accounts/custom-field/…`): a display type (what the field holds and how it reads), the
 * options of select fields, and whether changes are tracked. A field's ID is
 * `<type>:<cm|oc>:<kebab-case name>`, its type prefix given by its display type. No schema
 * library here: the console's pages preview a new field's ID by these same rules.
 */
export interface DisplayTypeRule {
  readonly type: FieldType;
  /** A string's format, checked on every value. */
  readonly format?: StringFormat;
  /** Decimals, currency and prices are sent and stored multiplied by 1000 (API.md). */
  readonly scale?: 1000;
  /** Select fields: values must be among the field's options. */
  readonly select?: true;
}

export const DISPLAY_TYPES = {
  text: { type: 'str' },
  large_text: { type: 'txt' },
  email: { type: 'str', format: 'email' },
  integer: { type: 'int' },
  decimal: { type: 'int', scale: 1000 },
  currency: { type: 'int', scale: 1000 },
  price: { type: 'int', scale: 1000 },
  date: { type: 'dtz' },
  time: { type: 'tme' },
  bool: { type: 'bol' },
  phone: { type: 'phn' },
  single_select: { type: 'str', select: true },
  multi_select: { type: 'sst', select: true },
  link: { type: 'str', format: 'url' },
  object: { type: 'obj' },
} as const satisfies Record<string, DisplayTypeRule>;
export type DisplayType = keyof typeof DISPLAY_TYPES;
export const DISPLAY_TYPE_NAMES = Object.keys(DISPLAY_TYPES) as [DisplayType, ...DisplayType[]];

export function isDisplayType(value: string): value is DisplayType {
  return Object.hasOwn(DISPLAY_TYPES, value);
}

export function displayTypeRule(displayType: string): DisplayTypeRule | undefined {
  return isDisplayType(displayType) ? DISPLAY_TYPES[displayType] : undefined;
}

export type CustomFieldKind = 'person' | 'organization';

export const namespaceOf = (kind: CustomFieldKind) => (kind === 'person' ? 'cm' : 'oc');

/**
 * The field name of a display name, as the product derives it: lower case, accents dropped,
 * every run of other characters a dash (`Job Title` → `job-title`, `$customFieldText` →
 * `customfieldtext`).
 */
export function kebabName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** A new custom field's ID: `<type>:<cm|oc>:<field name>`. */
export function customFieldId(kind: CustomFieldKind, rule: DisplayTypeRule, name: string): string {
  return `${rule.type}:${namespaceOf(kind)}:${name}`;
}

/** Why a field of this kind and display type cannot track changes, if it cannot. */
export function trackingRefusal(kind: CustomFieldKind, displayType: string): string | undefined {
  if (kind === 'organization') return 'organization fields cannot track changes';
  if (displayType === 'multi_select') return 'multi_select fields cannot track changes';
  return undefined;
}
