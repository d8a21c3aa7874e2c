import { ValidationError } from '../errors.js';
import type { Tenant } from '../tenancy.js';
import {
  MAX_CUSTOM_FIELDS,
  MAX_TRACKED_FIELDS,
  organizationFieldEntry,
  personFieldEntry,
  plannedField,
  requireCustomFieldId,
  updatedField,
  type CustomFieldConfig,
  type CustomFieldCreateRequest,
  type CustomFieldKind,
  type CustomFieldUpdateRequest,
} from './custom-fields.js';

/**
 * `…/custom-field/get`, `…/create` and `…/update` of people and organizations (the accounts
 * and organizations names alike): the instance's custom fields as the real API lists them,
 * and creating or changing one. A field created here is a field of the configuration like any
 * other (merges, listings, filters, Liquid, `instance-schema/get`), at once in every function
 * of the region: the write bumps the configuration's version, which their caches check.
 */
export interface CustomFieldLimits {
  fields: number;
  tracked: number;
}

export type AddFieldOutcome =
  | { kind: 'added' }
  | { kind: 'name-taken'; id: string }
  | { kind: 'full' }
  | { kind: 'tracked-full' };

export type UpdateFieldOutcome =
  { kind: 'updated'; field: CustomFieldConfig } | { kind: 'unknown' } | { kind: 'tracked-full' };

/** Where custom fields are kept (the instance's configuration). */
export interface CustomFieldWriter {
  /**
   * Adds a field unless its name (per kind) is taken, the kind has `limits.fields` fields
   * already, or it tracks changes and `limits.tracked` fields do: each decided on the stored
   * configuration by a conditional write, so concurrent creates never pass a limit.
   */
  addCustomField(
    instanceId: string,
    kind: CustomFieldKind,
    field: CustomFieldConfig,
    limits: CustomFieldLimits,
  ): Promise<AddFieldOutcome>;
  /** Reads the field afresh and writes what `change` makes of it. */
  updateCustomField(
    instanceId: string,
    kind: CustomFieldKind,
    fieldId: string,
    change: (field: CustomFieldConfig) => CustomFieldConfig,
    limits: CustomFieldLimits,
  ): Promise<UpdateFieldOutcome>;
}

export const LIMITS: CustomFieldLimits = { fields: MAX_CUSTOM_FIELDS, tracked: MAX_TRACKED_FIELDS };

const fieldsOf = (tenant: Tenant, kind: CustomFieldKind) =>
  kind === 'person' ? tenant.instance.person_fields : tenant.instance.organization_fields;

/** `person/custom-field/get`: `{"fields": [{"field": {…}, "tracked_value"}]}`, custom fields only. */
export function getPersonCustomFields(tenant: Tenant) {
  return { fields: fieldsOf(tenant, 'person').map(personFieldEntry) };
}

/**
 * `accounts/custom-field/get` and `organizations/custom-field/get`: the flat list;
 * `recordName` is how the route names organizations in `liquid_name`.
 */
export function getOrganizationCustomFields(tenant: Tenant, recordName: string) {
  return {
    fields: fieldsOf(tenant, 'organization').map((field) =>
      organizationFieldEntry(field, recordName),
    ),
  };
}

function refuse(field: string, problem: string): never {
  throw new ValidationError(`${field}: ${problem}`, [{ field, error: problem }]);
}

/** `…/custom-field/create`: `{"name", "field_id", "display_type", "values"?}` as recorded. */
export async function createCustomField(
  kind: CustomFieldKind,
  request: CustomFieldCreateRequest,
  tenant: Tenant,
  writer: CustomFieldWriter,
  now = new Date(),
) {
  const field = plannedField(kind, request, now.toISOString());
  const outcome = await writer.addCustomField(tenant.instance.id, kind, field, LIMITS);
  if (outcome.kind === 'name-taken') {
    refuse(
      'name',
      `"${request.name}" becomes the field name of ${field.id}, which the ${kind} field ${outcome.id} already has`,
    );
  }
  if (outcome.kind === 'full') {
    refuse('name', `the instance has ${MAX_CUSTOM_FIELDS} custom ${kind} fields, the most allowed`);
  }
  if (outcome.kind === 'tracked-full') {
    refuse(
      'track_changes',
      `the instance tracks the changes of ${MAX_TRACKED_FIELDS} fields, the most allowed`,
    );
  }
  return {
    name: field.name,
    field_id: field.id,
    display_type: field.display_type ?? 'text',
    ...(field.values ? { values: field.values } : {}),
  };
}

/** `…/custom-field/update`: `{"field_id", "values", "track_changes"}` as recorded. */
export async function updateCustomField(
  kind: CustomFieldKind,
  request: CustomFieldUpdateRequest,
  tenant: Tenant,
  writer: CustomFieldWriter,
) {
  requireCustomFieldId(kind, request.field_id);
  const outcome = await writer.updateCustomField(
    tenant.instance.id,
    kind,
    request.field_id,
    (field) => updatedField(kind, field, request),
    LIMITS,
  );
  if (outcome.kind === 'unknown') {
    refuse('field_id', `no custom ${kind} field "${request.field_id}" in this instance`);
  }
  if (outcome.kind === 'tracked-full') {
    refuse(
      'track_changes',
      `the instance tracks the changes of ${MAX_TRACKED_FIELDS} fields, the most allowed`,
    );
  }
  return {
    field_id: outcome.field.id,
    values: outcome.field.values ?? null,
    track_changes: outcome.field.track_changes === true,
  };
}
