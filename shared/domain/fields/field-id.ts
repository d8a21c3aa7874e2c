import { ValidationError } from '../errors.js';

/**
 * Field IDs have the form `type:namespace:name` (API.md, Field ID format). Built-in person
 * fields have an empty namespace (`str::email`), custom person fields `cm`, built-in
 * organization fields `o`, custom organization fields `oc`.
 */
export const FIELD_TYPES = [
  'bol',
  'dtz',
  'tme',
  'geo',
  'int',
  'phn',
  'str',
  'txt',
  'idt',
  // A set of strings (multi-select fields) and a JSON object (object fields).
  'sst',
  'obj',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export const FIELD_NAMESPACES = ['', 'cm', 'o', 'oc'] as const;
export type FieldNamespace = (typeof FIELD_NAMESPACES)[number];

export interface FieldId {
  readonly id: string;
  readonly type: FieldType;
  readonly namespace: FieldNamespace;
  readonly name: string;
}

const FIELD_ID_PATTERN = /^([a-z]{3}):([a-z]*):([a-z0-9][a-z0-9_-]*)$/;

/** Names of custom fields: kebab-case, as the product derives them from display names. */
export const KEBAB_CASE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const MAX_FIELD_NAME_LENGTH = 64;

function isFieldType(value: string): value is FieldType {
  return (FIELD_TYPES as readonly string[]).includes(value);
}

function isNamespace(value: string): value is FieldNamespace {
  return (FIELD_NAMESPACES as readonly string[]).includes(value);
}

/** Parses a field ID, or says exactly what is wrong with it. */
export function parseFieldId(id: string): FieldId | { problem: string } {
  const match = FIELD_ID_PATTERN.exec(id);
  if (!match) {
    return { problem: 'is not a field ID of the form type:namespace:name' };
  }
  const [, type = '', namespace = '', name = ''] = match;
  if (!isFieldType(type)) {
    return { problem: `has unknown type "${type}" (expected one of ${FIELD_TYPES.join(', ')})` };
  }
  if (!isNamespace(namespace)) {
    return { problem: `has unknown namespace "${namespace}" (expected "", cm, o or oc)` };
  }
  return { id, type, namespace, name };
}

export function requireFieldId(id: string, where = 'field'): FieldId {
  const parsed = parseFieldId(id);
  if ('problem' in parsed) {
    throw new ValidationError(`${where} "${id}" ${parsed.problem}`, [
      { field: id, error: parsed.problem },
    ]);
  }
  return parsed;
}

export function isCustomFieldName(name: string): boolean {
  return KEBAB_CASE.test(name) && name.length <= MAX_FIELD_NAME_LENGTH;
}
