import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { parseFieldId } from './field-id.js';
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
  | { kind: 'deleted'; id: string; at: string }
  | { kind: 'full' }
  | { kind: 'tracked-full' };

export type UpdateFieldOutcome =
  { kind: 'updated'; field: CustomFieldConfig } | { kind: 'unknown' } | { kind: 'tracked-full' };

export type DeleteFieldOutcome =
  | { kind: 'deleted' }
  | { kind: 'unknown'; deletedAt?: string }
  | { kind: 'merge-key'; dataSources: string[] };

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
  /**
   * Removes a field from the configuration, reserving its ID, unless it is a merge key
   * (unique, or in a data source's `merge_by`): decided on the stored configuration.
   */
  deleteCustomField(
    instanceId: string,
    kind: CustomFieldKind,
    fieldId: string,
  ): Promise<DeleteFieldOutcome>;
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
  if (outcome.kind === 'deleted') {
    refuse(
      'name',
      `"${request.name}" is the name of ${outcome.id}, a field deleted at ${outcome.at}: its name and ID stay reserved (the values records held stay with them, unread)`,
    );
  }
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

/** `instances/custom-field/delete`: `{"field_id"}`, a custom person or organization field. */
export const CustomFieldDeleteRequest = z.object({
  field_id: z
    .string({ error: 'expected a custom field ID such as str:cm:plan' })
    .min(1, 'expected a custom field ID such as str:cm:plan')
    .max(255),
});
export type CustomFieldDeleteRequest = z.infer<typeof CustomFieldDeleteRequest>;

/** The audiences whose filters name a field (they would be held if it went). */
export type AudiencesNaming = (instanceId: string, fieldId: string) => Promise<string[]>;

/**
 * Deletes a custom field: it leaves the configuration at once in every function of the
 * region (merges refuse it, listings and filters no longer know it, `instance-schema/get` and
 * `custom-field/get` leave it out, Liquid renders it empty); its ID stays reserved. Refused,
 * naming `field_id`, while it is a merge key or an audience's filter names it, so nothing is
 * left depending on it. Answers `{}` (the real API answers an empty 200).
 */
export async function deleteCustomField(
  request: CustomFieldDeleteRequest,
  tenant: Tenant,
  writer: CustomFieldWriter,
  audiencesNaming: AudiencesNaming,
) {
  const parsed = parseFieldId(request.field_id);
  if ('problem' in parsed) refuse('field_id', `"${request.field_id}" ${parsed.problem}`);
  if (parsed.namespace !== 'cm' && parsed.namespace !== 'oc') {
    refuse(
      'field_id',
      `"${request.field_id}" is not a custom field (those are <type>:cm:<name> for people, <type>:oc:<name> for organizations)`,
    );
  }
  const kind: CustomFieldKind = parsed.namespace === 'cm' ? 'person' : 'organization';
  if (kind === 'person') {
    const audiences = await audiencesNaming(tenant.instance.id, request.field_id);
    if (audiences.length > 0) {
      refuse(
        'field_id',
        `the filters of these audiences name ${request.field_id}: ${audiences.join(', ')}; change or delete them first`,
      );
    }
  }
  const outcome = await writer.deleteCustomField(tenant.instance.id, kind, request.field_id);
  if (outcome.kind === 'unknown') {
    refuse(
      'field_id',
      outcome.deletedAt
        ? `the custom ${kind} field "${request.field_id}" was deleted at ${outcome.deletedAt}`
        : `no custom ${kind} field "${request.field_id}" in this instance`,
    );
  }
  if (outcome.kind === 'merge-key') {
    refuse(
      'field_id',
      `${request.field_id} is a merge key (unique${outcome.dataSources.length > 0 ? `, and in the merge_by of data source ${outcome.dataSources.map((name) => `"${name}"`).join(', ')}` : ''}); change the configuration first`,
    );
  }
  return {};
}
