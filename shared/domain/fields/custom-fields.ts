import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { MAX_FIELD_NAME_LENGTH, parseFieldId, type FieldType } from './field-id.js';
import {
  customFieldId,
  DISPLAY_TYPE_NAMES,
  DISPLAY_TYPES,
  displayTypeRule,
  isDisplayType,
  kebabName,
  namespaceOf,
  trackingRefusal,
  type CustomFieldKind,
  type DisplayTypeRule,
} from './display-types.js';

export {
  DISPLAY_TYPE_NAMES,
  DISPLAY_TYPES,
  displayTypeRule,
  isDisplayType,
  kebabName,
  type CustomFieldKind,
  type DisplayType,
  type DisplayTypeRule,
} from './display-types.js';

/**
 * The display type of a field configured without one (instance configuration files before
 * display types, built-in fields): from its type. `geo` and `idt` fields are configured or
 * built in only (no display type creates them).
 */
export const TYPE_DISPLAY_TYPES: Record<FieldType, string> = {
  str: 'text',
  txt: 'large_text',
  int: 'integer',
  bol: 'bool',
  dtz: 'date',
  tme: 'time',
  geo: 'geo',
  phn: 'phone',
  idt: 'id',
  sst: 'multi_select',
  obj: 'object',
};

/** The display type of a field: its own, else the one its type implies (`geo` for places). */
export function displayTypeOf(field: { id: string; display_type?: string | undefined }): string {
  if (field.display_type) return field.display_type;
  const parsed = parseFieldId(field.id);
  if ('problem' in parsed) return 'text';
  return TYPE_DISPLAY_TYPES[parsed.type];
}

/** Custom person fields per instance, and organization fields (API.md, Limits). */
export const MAX_CUSTOM_FIELDS = 100;
/** Options of one select field, each at most 255 characters. */
export const MAX_OPTIONS = 500;
/**
 * Person fields whose changes are recorded as activities, per instance: each tracked field a
 * merge changes is an activity item written with the person, and DynamoDB takes at most 100
 * items in a transaction (the person, its claims, counters and other activities included).
 */
export const MAX_TRACKED_FIELDS = 50;

/** A custom field as the instance stores it (the configuration file's shape, extended). */
export interface CustomFieldConfig {
  id: string;
  name: string;
  unique?: boolean | undefined;
  display_type?: string | undefined;
  values?: string[] | undefined;
  track_changes?: boolean | undefined;
  /** Fields created through the API (kept when a configuration file is applied). */
  source?: 'api' | undefined;
  created_at?: string | undefined;
}

/** The part of a field ID after its namespace (`str:cm:job-title` → `job-title`). */
export const fieldNameOf = (fieldId: string) => fieldId.split(':').slice(2).join(':');

const option = z
  .string()
  .trim()
  .min(1, 'expected non-empty options')
  .max(255, 'expected options of at most 255 characters');
const options = z.array(option).max(MAX_OPTIONS, `expected at most ${MAX_OPTIONS} options`);

/** `POST /v1/person/custom-field/create` (and the organizations' and accounts' twins). */
export const CustomFieldCreateRequest = z.object({
  name: z.string().trim().min(1, 'expected a name').max(255, 'expected at most 255 characters'),
  type: z.string().min(1, 'expected a display type'),
  values: options.optional(),
  track_changes: z.boolean().optional(),
});
export type CustomFieldCreateRequest = z.infer<typeof CustomFieldCreateRequest>;

/**
 * `PUT /v1/person/custom-field/update`: the options of a select field (`replace_values`, else
 * `add_values`, else `remove_values`, as the reference orders them; `values` is taken as
 * `add_values`) and whether changes are tracked.
 */
export const CustomFieldUpdateRequest = z.object({
  field_id: z.string().min(1, 'expected a field ID'),
  replace_values: options.optional(),
  add_values: options.optional(),
  values: options.optional(),
  remove_values: options.optional(),
  track_changes: z.boolean().optional(),
});
export type CustomFieldUpdateRequest = z.infer<typeof CustomFieldUpdateRequest>;

/** The listings take no members (a body may be left out); any given are ignored. */
export const CustomFieldGetRequest = z.object({});

function fail(field: string, problem: string): never {
  throw new ValidationError(`${field}: ${problem}`, [{ field, error: problem }]);
}

function uniqueOptions(values: string[], field: string): string[] {
  const seen = new Set<string>();
  for (const value of values) {
    if (seen.has(value)) fail(field, `the option "${value}" is given twice`);
    seen.add(value);
  }
  return values;
}

/** The field a create request describes, checked; where it may clash is the store's to say. */
export function plannedField(
  kind: CustomFieldKind,
  request: CustomFieldCreateRequest,
  now: string,
): CustomFieldConfig {
  if (!isDisplayType(request.type)) {
    fail(
      'type',
      `unknown type "${request.type}" (expected one of ${DISPLAY_TYPE_NAMES.join(', ')})`,
    );
  }
  const rule: DisplayTypeRule = DISPLAY_TYPES[request.type];
  const name = kebabName(request.name);
  if (name === '') fail('name', 'expected at least one letter or digit');
  if (name.length > MAX_FIELD_NAME_LENGTH) {
    fail(
      'name',
      `becomes the field name "${name}", longer than ${MAX_FIELD_NAME_LENGTH} characters`,
    );
  }
  if (rule.select && (request.values ?? []).length === 0) {
    fail('values', `a ${request.type} field needs its options`);
  }
  if (!rule.select && request.values !== undefined) {
    fail('values', `only single_select and multi_select fields take values, not ${request.type}`);
  }
  if (request.track_changes === true) checkTrackable(kind, request.type);
  return {
    id: customFieldId(kind, rule, name),
    name: request.name,
    display_type: request.type,
    ...(rule.select ? { values: uniqueOptions(request.values ?? [], 'values') } : {}),
    ...(kind === 'person' ? { track_changes: request.track_changes ?? false } : {}),
    source: 'api',
    created_at: now,
  };
}

function checkTrackable(kind: CustomFieldKind, displayType: string): void {
  const refusal = trackingRefusal(kind, displayType);
  if (refusal) fail('track_changes', refusal);
}

/** Checks that a field ID names a custom field of the right kind (400 naming it otherwise). */
export function requireCustomFieldId(kind: CustomFieldKind, fieldId: string): void {
  const parsed = parseFieldId(fieldId);
  const namespace = namespaceOf(kind);
  if ('problem' in parsed) fail('field_id', `"${fieldId}" ${parsed.problem}`);
  if (parsed.namespace !== namespace) {
    fail(
      'field_id',
      `"${fieldId}" is not a custom ${kind} field (those are <type>:${namespace}:<name>)`,
    );
  }
}

/** An update of a stored field: its new state, checked against its display type. */
export function updatedField(
  kind: CustomFieldKind,
  field: CustomFieldConfig,
  request: CustomFieldUpdateRequest,
): CustomFieldConfig {
  const displayType = displayTypeOf(field);
  const select = displayTypeRule(displayType)?.select === true;
  const add = request.add_values ?? request.values;
  const member = request.replace_values
    ? 'replace_values'
    : add
      ? request.add_values
        ? 'add_values'
        : 'values'
      : request.remove_values
        ? 'remove_values'
        : undefined;
  let values = field.values;
  if (member !== undefined) {
    if (!select) {
      fail(member, `only single_select and multi_select fields have options, not ${displayType}`);
    }
    const current = field.values ?? [];
    if (request.replace_values) values = uniqueOptions(request.replace_values, member);
    else if (add) values = [...current, ...add.filter((value) => !current.includes(value))];
    else {
      const removed = new Set(request.remove_values);
      values = current.filter((value) => !removed.has(value));
    }
    if (values.length === 0) fail(member, 'a select field keeps at least one option');
    if (values.length > MAX_OPTIONS) fail(member, `a field has at most ${MAX_OPTIONS} options`);
  }
  if (request.track_changes === true) checkTrackable(kind, displayType);
  const next: CustomFieldConfig = { ...field };
  if (values !== undefined) next.values = values;
  if (kind === 'person' && request.track_changes !== undefined) {
    next.track_changes = request.track_changes;
  }
  return next;
}

/** `liquid_name` of a custom field: `people.custom.<name>` (accounts and organizations alike). */
export function customLiquidName(kind: CustomFieldKind, fieldId: string, recordName: string) {
  return kind === 'person'
    ? `people.custom.${fieldNameOf(fieldId)}`
    : `${recordName}.custom.${fieldNameOf(fieldId)}`;
}

/** One entry of `person/custom-field/get`, as recorded: the field, and whether it is tracked. */
export function personFieldEntry(field: CustomFieldConfig) {
  return {
    field: {
      id: field.id,
      name: field.name,
      display_type: displayTypeOf(field),
      liquid_name: customLiquidName('person', field.id, 'people'),
      ...(field.values ? { dic_items: field.values } : {}),
    },
    tracked_value: field.track_changes === true,
  };
}

/**
 * One entry of `accounts/custom-field/get` (flat, as recorded). `recordName` is `account`
 * under the accounts names and `organization` under the organizations names, as the real
 * API's answers name them.
 */
export function organizationFieldEntry(field: CustomFieldConfig, recordName: string) {
  return {
    id: field.id,
    name: field.name,
    display_type: displayTypeOf(field),
    liquid_name: customLiquidName('organization', field.id, recordName),
    ...(field.values ? { dic_items: field.values } : {}),
  };
}
