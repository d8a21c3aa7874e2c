import { z } from 'zod';
import {
  createCustomField,
  updateCustomField,
  type CustomFieldWriter,
} from '../fields/custom-field-api.js';
import {
  DISPLAY_TYPE_NAMES,
  displayTypeOf,
  fieldNameOf,
  MAX_CUSTOM_FIELDS,
  MAX_OPTIONS,
  plannedField,
  requireCustomFieldId,
  updatedField,
  type CustomFieldConfig,
  type CustomFieldKind,
} from '../fields/custom-fields.js';
import { parseFieldId } from '../fields/field-id.js';
import { ValidationError } from '../errors.js';
import type { Region } from '../regions.js';
import type { InstanceSchema } from '../tenancy.js';
import { recordChange, type AuditSink } from './audit.js';
import { consoleTenant } from './console-activities.js';
import {
  type ConsoleCaller,
  ConsoleInstanceId,
  type ConsoleStore,
  managedInstance,
} from './console-keys.js';

/**
 * Custom fields of people and organizations in the console: listed with their options and
 * where they came from, created and their options changed by the public API's own rules
 * (`person/custom-field/create`, `organizations/custom-field/create` and `…/update`), so a
 * field made here is the same field, usable at once. Each change is audited before it is made.
 */
export type FieldStore = Pick<ConsoleStore, 'getInstance'> & CustomFieldWriter;

const instanceId = ConsoleInstanceId;
const kind = z.enum(['person', 'organization'], {
  message: 'expected person or organization',
});
const option = z
  .string()
  .trim()
  .min(1, 'expected non-empty options')
  .max(255, 'expected options of at most 255 characters');
const options = z.array(option).max(MAX_OPTIONS, `expected at most ${MAX_OPTIONS} options`);

export const ConsoleFieldCreateRequest = z.strictObject({
  instance_id: instanceId,
  kind,
  name: z.string().trim().min(1, 'expected a name').max(255, 'expected at most 255 characters'),
  /** The display type (`text`, `single_select`, …); its rules are the public API's. */
  type: z.enum(DISPLAY_TYPE_NAMES, {
    message: `expected one of ${DISPLAY_TYPE_NAMES.join(', ')}`,
  }),
  values: options.optional(),
  track_changes: z.boolean().optional(),
});
export type ConsoleFieldCreateRequest = z.infer<typeof ConsoleFieldCreateRequest>;

/** A select field's options: all of them (`replace_values`), or some added or removed. */
export const ConsoleFieldModifyRequest = z
  .strictObject({
    instance_id: instanceId,
    kind,
    field_id: z.string().min(1, 'expected a field ID').max(255),
    replace_values: options.optional(),
    add_values: options.optional(),
    remove_values: options.optional(),
    track_changes: z.boolean().optional(),
  })
  .refine(
    (request) =>
      [request.replace_values, request.add_values, request.remove_values].filter(
        (given) => given !== undefined,
      ).length <= 1,
    {
      message: 'give one of replace_values, add_values or remove_values',
      path: ['replace_values'],
    },
  );
export type ConsoleFieldModifyRequest = z.infer<typeof ConsoleFieldModifyRequest>;

const fieldsOf = (instance: InstanceSchema, of: CustomFieldKind) =>
  of === 'person' ? instance.person_fields : instance.organization_fields;

function listing(field: CustomFieldConfig, of: CustomFieldKind) {
  return {
    id: field.id,
    name: field.name,
    display_type: displayTypeOf(field),
    values: field.values ?? null,
    unique: field.unique === true,
    track_changes: of === 'person' ? field.track_changes === true : null,
    /** `api`: made through the API or the console; `file`: the configuration file's. */
    source: field.source === 'api' ? ('api' as const) : ('file' as const),
    created_at: field.created_at ?? null,
  };
}

/** Fields deleted through the API: their IDs stay reserved (and are not listed as fields). */
function deletedOf(instance: InstanceSchema, of: CustomFieldKind) {
  return Object.entries(instance.deleted_fields ?? {})
    .filter(([id]) => {
      const parsed = parseFieldId(id);
      return !('problem' in parsed) && parsed.namespace === (of === 'person' ? 'cm' : 'oc');
    })
    .map(([id, at]) => ({ id, deleted_at: at }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** The instance's custom fields of both kinds, as its configuration holds them. */
export async function fieldsOfInstance(
  store: Pick<ConsoleStore, 'getInstance'>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  id: string,
) {
  const instance = await managedInstance(store, caller.user, region, id);
  const of = (which: CustomFieldKind) => ({
    fields: fieldsOf(instance, which).map((field) => listing(field, which)),
    deleted: deletedOf(instance, which),
  });
  return { instance_id: instance.id, person: of('person'), organization: of('organization') };
}

function refuse(field: string, problem: string): never {
  throw new ValidationError(`${field}: ${problem}`, [{ field, error: problem }]);
}

/**
 * What the store would refuse, seen in the configuration as read, so that a change refused
 * for it is never audited (the store's conditional write still decides, against a race).
 */
function refuseClash(
  instance: InstanceSchema,
  of: CustomFieldKind,
  planned: CustomFieldConfig,
  name: string,
): void {
  const fieldName = fieldNameOf(planned.id);
  const held = fieldsOf(instance, of).find((field) => fieldNameOf(field.id) === fieldName);
  if (held) {
    refuse(
      'name',
      `"${name}" becomes the field name of ${planned.id}, which the ${of} field ${held.id} already has`,
    );
  }
  const deleted = deletedOf(instance, of).find((field) => fieldNameOf(field.id) === fieldName);
  if (deleted) {
    refuse(
      'name',
      `"${name}" is the name of ${deleted.id}, a field deleted at ${deleted.deleted_at}: its name and ID stay reserved`,
    );
  }
  if (fieldsOf(instance, of).length >= MAX_CUSTOM_FIELDS) {
    refuse('name', `the instance has ${MAX_CUSTOM_FIELDS} custom ${of} fields, the most allowed`);
  }
}

/** A new custom field, by the public API's rules: checked before it is audited and written. */
export async function createConsoleField(
  store: FieldStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: ConsoleFieldCreateRequest,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const { instance_id: _instance, kind: of, ...create } = request;
  const now = new Date();
  const planned = plannedField(of, create, now.toISOString());
  refuseClash(tenant.instance, of, planned, request.name);
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'field.create',
    target: `field:${planned.id}`,
    details: {
      kind: of,
      name: planned.name,
      display_type: planned.display_type ?? null,
      options: planned.values?.length ?? null,
    },
  });
  // The same field `plannedField` made above: the same rules and the same time.
  await createCustomField(of, create, tenant, store, now);
  return { instance_id: tenant.instance.id, kind: of, field: listing(planned, of) };
}

/** A select field's options (and a person field's tracking) changed, by the public API's rules. */
export async function modifyConsoleField(
  store: FieldStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: ConsoleFieldModifyRequest,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const { instance_id: _instance, kind: of, ...update } = request;
  requireCustomFieldId(of, update.field_id);
  const current = fieldsOf(tenant.instance, of).find((field) => field.id === update.field_id);
  if (!current) {
    throw new ValidationError(`field_id: no custom ${of} field "${update.field_id}" here`, [
      { field: 'field_id', error: 'not found' },
    ]);
  }
  if (Object.keys(update).length === 1) {
    throw new ValidationError('replace_values: nothing to change', [
      { field: 'replace_values', error: 'nothing to change' },
    ]);
  }
  // Checked against the field as it is now, so a refused change is never audited.
  const next = updatedField(of, current, update);
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'field.modify',
    target: `field:${current.id}`,
    details: {
      kind: of,
      options: next.values?.length ?? null,
      ...(update.track_changes !== undefined ? { track_changes: update.track_changes } : {}),
    },
  });
  const changed = await updateCustomField(of, update, tenant, store);
  return {
    instance_id: tenant.instance.id,
    kind: of,
    field: listing(
      { ...current, values: changed.values ?? undefined, track_changes: changed.track_changes },
      of,
    ),
  };
}
