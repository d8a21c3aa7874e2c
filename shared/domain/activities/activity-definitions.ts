import { parseFieldId, type FieldType } from '../fields/field-id.js';
import { isGeoValue, parseFieldValue, type FieldValue } from '../fields/field-values.js';
import type { StoredActivityDefinition } from '../instance-config.js';

/** `int::v`: the conversion value of an activity (×1000), kept when the definition enables it. */
export const CONVERSION_VALUE = 'int::v';

export interface CompiledDefinition {
  config: StoredActivityDefinition;
  attributes: Map<string, { type: FieldType; name: string }>;
}

export function compileDefinition(config: StoredActivityDefinition): CompiledDefinition {
  const attributes = new Map<string, { type: FieldType; name: string }>();
  for (const attribute of config.attributes) {
    const parsed = parseFieldId(attribute.id);
    if (!('problem' in parsed))
      attributes.set(attribute.id, { type: parsed.type, name: attribute.name });
  }
  return { config, attributes };
}

/**
 * Reads an activity's attributes with the types of its definition. Attributes the
 * definition does not have are dropped; `int::v` is kept as the conversion value only when
 * the definition enables it; a date without a zone takes `timeZone`. A wrong value is a `FieldValueError` naming the attribute (an
 * invalid time zone, as everywhere, the spec's 500).
 */
export function parseAttributes(
  definition: CompiledDefinition,
  attributes: Record<string, unknown>,
  timeZone?: string,
): { values: Record<string, FieldValue>; conversionValue?: number } {
  const values: Record<string, FieldValue> = {};
  let conversionValue: number | undefined;
  for (const [id, raw] of Object.entries(attributes)) {
    if (id === CONVERSION_VALUE) {
      if (!definition.config.conversion_value || raw === null) continue;
      conversionValue = parseFieldValue(id, 'int', raw) as number;
      continue;
    }
    const attribute = definition.attributes.get(id);
    if (!attribute || raw === null) continue;
    values[id] = parseFieldValue(id, attribute.type, raw, undefined, timeZone);
  }
  return { values, ...(conversionValue === undefined ? {} : { conversionValue }) };
}

/**
 * `{{attribute.<name>}}`: the attribute's name in lower case, spaces as underscores (names
 * of the real API's shape are kebab-case: `{{attribute.product-name}}`).
 */
export function renderDisplayText(
  definition: CompiledDefinition,
  values: Record<string, FieldValue>,
): string {
  const template = definition.config.display_text ?? definition.config.name;
  const byName = new Map<string, FieldValue>();
  for (const [id, attribute] of definition.attributes) {
    const value = values[id];
    if (value !== undefined) byName.set(attribute.name.toLowerCase().replace(/\s+/g, '_'), value);
  }
  return template.replace(/\{\{\s*attribute\.([a-z0-9_-]+)\s*\}\}/g, (_, name: string) => {
    const value = byName.get(name);
    if (value === undefined) return '';
    return isGeoValue(value)
      ? value.name
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
  });
}
