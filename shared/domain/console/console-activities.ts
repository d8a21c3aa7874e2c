import { z } from 'zod';
import {
  archiveActivityDefinition,
  checked,
  type DefinitionStore,
} from '../activities/definition-create.js';
import { ConflictError, ValidationError } from '../errors.js';
import { ActivityDefinition, type StoredActivityDefinition } from '../instance-config.js';
import type { Region } from '../regions.js';
import { serviceTenant, type Tenant } from '../tenancy.js';
import { recordChange, type AuditSink } from './audit.js';
import {
  type ConsoleCaller,
  ConsoleInstanceId,
  type ConsoleStore,
  managedInstance,
} from './console-keys.js';

/**
 * Activity definitions in the console, in the configuration file's shape (`id`, `name`,
 * `icon`, `display_text` with `{{attribute.<name>}}`, `attributes` with their kinds,
 * `map_to_crm`, `conversion_value`, `track_as_touch`): the same definitions the API's
 * `definitions/activity/*` and `apply` make, checked by the same rules, usable at once (the
 * configuration's version moves). Each change is audited before it is made.
 */
export type ActivityStore = Pick<ConsoleStore, 'getInstance'> &
  Pick<DefinitionStore, 'addActivityDefinition' | 'changeActivityDefinition'>;

const instanceId = ConsoleInstanceId;
export const ConsoleActivityRequest = z.strictObject({
  instance_id: instanceId,
  definition: ActivityDefinition,
});
export const ConsoleActivityArchiveRequest = z.strictObject({
  instance_id: instanceId,
  activity_field_id: z.string().min(1).max(255),
});

/** The instance as the service acts on it for the signed-in user (the data source "Console"). */
export async function consoleTenant(
  store: Pick<ConsoleStore, 'getInstance'>,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  id: string,
): Promise<Tenant> {
  const instance = await managedInstance(store, caller.user, region, id);
  const tenant = await serviceTenant(
    { getInstance: () => Promise.resolve(instance) },
    instance.id,
    'Console',
  );
  if (!tenant) throw new Error(`instance ${instance.id} vanished`);
  return tenant;
}

/** An instance's definitions (archived ones too) and the person fields attributes may map to. */
export async function activitiesOf(
  store: ActivityStore,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  id: string,
) {
  const instance = await managedInstance(store, caller.user, region, id);
  return {
    instance_id: instance.id,
    activities: instance.activities,
    person_fields: instance.person_fields.map((field) => ({ id: field.id, name: field.name })),
  };
}

export async function createConsoleActivity(
  store: ActivityStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleActivityRequest>,
): Promise<{ activity: StoredActivityDefinition }> {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  // Made outside the configuration file, as through the API: `apply` keeps it.
  const definition = checked(
    { ...request.definition, source: 'api', created_at: new Date().toISOString() },
    tenant,
  );
  if (tenant.instance.activities.some((existing) => existing.id === definition.id)) {
    throw new ConflictError(
      `definition.id: the activity definition ${definition.id} already exists`,
    );
  }
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'activity.create',
    target: `activity:${definition.id}`,
  });
  if (!(await store.addActivityDefinition(tenant.instance.id, definition))) {
    throw new ConflictError(
      `definition.id: the activity definition ${definition.id} already exists`,
    );
  }
  return { activity: definition };
}

/** Replaces a definition (found by `definition.id`) with the one given; archived ones stay. */
export async function modifyConsoleActivity(
  store: ActivityStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleActivityRequest>,
): Promise<{ activity: StoredActivityDefinition }> {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const { id } = request.definition;
  const current = tenant.instance.activities.find((existing) => existing.id === id);
  if (!current) {
    throw new ValidationError(`definition.id: no activity definition ${id} in this instance`, [
      { field: 'definition.id', error: 'not found' },
    ]);
  }
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'activity.modify',
    target: `activity:${id}`,
  });
  const changed = await store.changeActivityDefinition(tenant.instance.id, id, (latest) => {
    if (latest.archived_at) {
      throw new ValidationError(`definition.id: the activity definition ${id} is archived`, [
        { field: 'definition.id', error: 'archived' },
      ]);
    }
    // What the console does not edit stays: where it came from, when it was made.
    const kept = {
      ...(latest.source ? { source: latest.source } : {}),
      ...(latest.created_at ? { created_at: latest.created_at } : {}),
      ...(latest.filterable !== undefined ? { filterable: latest.filterable } : {}),
      ...(latest.visible_in_feeds !== undefined
        ? { visible_in_feeds: latest.visible_in_feeds }
        : {}),
    };
    return checked({ ...request.definition, ...kept, edited_at: new Date().toISOString() }, tenant);
  });
  if (!changed) {
    throw new ValidationError(`definition.id: no activity definition ${id} in this instance`, [
      { field: 'definition.id', error: 'not found' },
    ]);
  }
  return { activity: changed };
}

/** Archives a definition: its activities stay readable, new ones are refused. */
export async function archiveConsoleActivity(
  store: ActivityStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleActivityArchiveRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  if (!tenant.instance.activities.some((existing) => existing.id === request.activity_field_id)) {
    throw new ValidationError(
      `activity_field_id: no activity definition ${request.activity_field_id} in this instance`,
      [{ field: 'activity_field_id', error: 'not found' }],
    );
  }
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'activity.archive',
    target: `activity:${request.activity_field_id}`,
  });
  return archiveActivityDefinition({ activity_field_id: request.activity_field_id }, tenant, store);
}
