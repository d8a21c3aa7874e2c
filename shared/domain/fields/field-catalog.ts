import { FieldValueError, ValidationError } from '../errors.js';
import { displayTypeOf, displayTypeRule, type CustomFieldConfig } from './custom-fields.js';
import {
  FIELD_TYPES,
  parseFieldId,
  type FieldId,
  type FieldNamespace,
  type FieldType,
} from './field-id.js';
import { parseFieldValue, type FieldValue, type StringFormat } from './field-values.js';

export type { CustomFieldConfig } from './custom-fields.js';

/**
 * What the API knows about one field: its type, whether clients may write it, whether person
 * or organization listings may select it, and whether it is kept on the record (context
 * messages, for instance, are written with a permission change, not stored as fields).
 */
export interface FieldDefinition extends FieldId {
  readonly label: string;
  readonly writable: boolean;
  readonly selectable: boolean;
  readonly stored: boolean;
  readonly format?: StringFormat;
  readonly custom: boolean;
  /** Custom fields: how the field reads (`text`, `decimal`, `single_select`, …). */
  readonly displayType?: string;
  /** Select fields: the values it may hold. */
  readonly options?: readonly string[];
  /** Values are sent multiplied by this (decimal, currency and price fields: 1000). */
  readonly scale?: number;
  /** Changes of the field are recorded as activities (`track_changes`). */
  readonly tracked?: boolean;
}

type BuiltIn = [id: string, label: string, options?: Partial<FieldDefinition>];

function builtIn([id, label, options]: BuiltIn): FieldDefinition {
  const parsed = parseFieldId(id);
  if ('problem' in parsed) throw new Error(`Built-in field ${id} ${parsed.problem}`);
  return {
    ...parsed,
    label,
    writable: true,
    selectable: true,
    stored: true,
    custom: false,
    ...options,
  };
}

const notStored = { selectable: false, stored: false };
/**
 * Context messages are sent with permission changes; the latest of each is kept with the
 * person (not as a field a merge writes) and can be selected.
 */
const contextMessage = { selectable: true, stored: false };

/** The built-in person fields of API.md, Person. */
export const PERSON_BUILT_INS: readonly FieldDefinition[] = (
  [
    ['str::first', 'First name'],
    ['str::last', 'Last name'],
    ['str::person_id', 'Person ID', { writable: false, stored: false }],
    ['phn::phone', 'Phone number'],
    ['str::email', 'Email', { format: 'email' }],
    ['geo::city', 'City'],
    ['geo::country', 'Country'],
    ['geo::region', 'Region'],
    ['dtz::b', 'Birthday'],
    ['str::postal', 'Postal code'],
    ['str::ei', 'External ID'],
    ['bol::gdpr', 'GDPR flag'],
    ['bol::p', 'Email subscription permission'],
    ['str::u-ctx', 'Context message for email unsubscribe', contextMessage],
    ['str::s-ctx', 'Context message for email subscribe', contextMessage],
    ['bol::sp', 'SMS subscription permission'],
    ['str::soi-ctx', 'Context message for SMS subscribe', contextMessage],
    ['str::soo-ctx', 'Context message for SMS unsubscribe', contextMessage],
    ['str::language', 'Preferred language', { format: 'language' }],
    // int::v is an activity attribute (conversion value); a person does not keep it.
    ['int::v', 'Conversion value', notStored],
    ['idt::o', 'Organization ID', { writable: false }],
    // Set by activities whose definition tracks touches (read-only).
    ['tme::last-seen', 'Last seen', { writable: false }],
    ['geo::last-seen', 'Last seen location', { writable: false }],
  ] satisfies BuiltIn[]
).map(builtIn);

/** The built-in organization fields of API.md, Organization. */
export const ORGANIZATION_BUILT_INS: readonly FieldDefinition[] = (
  [
    ['str:o:name', 'Name'],
    ['int:o:employees', 'Employees'],
    ['str:o:industry', 'Industry'],
    ['str:o:website', 'Website', { format: 'url' }],
    ['geo:o:city', 'City'],
    ['str:o:address', 'Address'],
    ['geo:o:region', 'Region'],
    ['geo:o:country', 'Country'],
    ['str:o:postal', 'Postal code'],
    ['str:o:source', 'Source'],
  ] satisfies BuiltIn[]
).map(builtIn);

export { MAX_CUSTOM_FIELDS } from './custom-fields.js';

/** Types a custom field may have (`idt` values are only minted by the service). */
export const CUSTOM_FIELD_TYPES: readonly FieldType[] = FIELD_TYPES.filter(
  (type) => type !== 'idt',
);

export type FieldValues = Record<string, FieldValue | null>;

const isEmptyObject = (value: unknown) =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.keys(value).length === 0;

/**
 * The fields of one kind of record (people or organizations) for one instance: the built-ins
 * and the instance's custom fields. Validates `fields` objects of requests.
 */
export class FieldCatalog {
  private readonly byId: ReadonlyMap<string, FieldDefinition>;

  constructor(
    readonly kind: 'person' | 'organization',
    builtIns: readonly FieldDefinition[],
    custom: readonly CustomFieldConfig[],
    /** The instance's zone, given to dates sent without one. */
    readonly timeZone?: string,
  ) {
    const customNamespace: FieldNamespace = kind === 'person' ? 'cm' : 'oc';
    const entries = new Map(builtIns.map((field) => [field.id, field]));
    for (const field of custom) {
      const parsed = parseFieldId(field.id);
      if ('problem' in parsed || parsed.namespace !== customNamespace) {
        throw new Error(`Custom ${kind} field ${field.id} is not valid`);
      }
      const displayType = displayTypeOf(field);
      const rule = displayTypeRule(displayType);
      entries.set(field.id, {
        ...parsed,
        label: field.name,
        writable: true,
        selectable: true,
        stored: true,
        custom: true,
        displayType,
        ...(rule?.format ? { format: rule.format } : {}),
        ...(rule?.scale ? { scale: rule.scale } : {}),
        ...(rule?.select && field.values ? { options: field.values } : {}),
        ...(field.track_changes ? { tracked: true } : {}),
      });
    }
    this.byId = entries;
  }

  static forPerson(custom: readonly CustomFieldConfig[] = [], timeZone?: string): FieldCatalog {
    return new FieldCatalog('person', PERSON_BUILT_INS, custom, timeZone);
  }

  static forOrganization(
    custom: readonly CustomFieldConfig[] = [],
    timeZone?: string,
  ): FieldCatalog {
    return new FieldCatalog('organization', ORGANIZATION_BUILT_INS, custom, timeZone);
  }

  get(id: string): FieldDefinition | undefined {
    return this.byId.get(id);
  }

  get fields(): IterableIterator<FieldDefinition> {
    return this.byId.values();
  }

  /** The definition of a field a client names, or a `ValidationError` saying why it is unusable. */
  require(id: string): FieldDefinition {
    const field = this.byId.get(id);
    if (field) return field;
    const parsed = parseFieldId(id);
    const problem =
      'problem' in parsed
        ? parsed.problem
        : parsed.namespace === (this.kind === 'person' ? 'cm' : 'oc')
          ? 'is not a custom field of this instance'
          : `is not ${this.kind === 'person' ? 'a person' : 'an organization'} field`;
    throw new FieldValueError(id, problem);
  }

  /**
   * Validates a `fields` object: every key must be a writable field of this catalog and every
   * value readable as its type. `null` is kept (it clears the field under merge strategy 2).
   */
  parseValues(fields: unknown, where = 'fields'): FieldValues {
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      throw new ValidationError(`${where}: expected an object of field IDs to values`, [
        { field: where, error: 'expected an object' },
      ]);
    }
    const values: FieldValues = {};
    for (const [id, value] of Object.entries(fields)) {
      const field = this.require(id);
      if (!field.writable) throw new FieldValueError(id, 'is read-only');
      // `{}` for a place is "no place given" (a real client sends it for an unknown city):
      // the field is left as it is, as if it were not sent.
      if (field.type === 'geo' && isEmptyObject(value)) continue;
      values[id] = value === null ? null : this.parseValue(field, value);
    }
    return values;
  }

  /** One non-null value of a field, as stored; a select field's must be among its options. */
  private parseValue(field: FieldDefinition, value: unknown): FieldValue {
    const parsed = parseFieldValue(field.id, field.type, value, field.format, this.timeZone);
    const { options } = field;
    if (options) {
      // Options belong to `str` (single select) and `sst` (multi-select) fields only.
      const chosen = Array.isArray(parsed) ? parsed : typeof parsed === 'string' ? [parsed] : [];
      const unknown = chosen.find((item) => !options.includes(item));
      if (unknown !== undefined) {
        const shown = options.slice(0, 10).map((o) => `"${o}"`);
        if (options.length > shown.length) shown.push('…');
        throw new FieldValueError(
          field.id,
          `"${unknown}" is not one of the field's options (${shown.join(', ')})`,
        );
      }
    }
    return parsed;
  }
}
