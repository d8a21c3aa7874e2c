import { ConflictError } from '../errors.js';
import {
  ActivityDefinition,
  checkActivityDefinition,
  type ActivityDefinitionConfig,
} from '../instance-config.js';
import type { Tenant } from '../tenancy.js';
import { parseWith } from '../validation.js';

/** The body of `POST /v1/definitions/activity/create`: one definition, checked like the file's. */
export const ActivityDefinitionRequest = ActivityDefinition;

export interface DefinitionWriter {
  addActivityDefinition(instanceId: string, definition: ActivityDefinitionConfig): Promise<boolean>;
}

export async function createActivityDefinition(
  body: unknown,
  tenant: Tenant,
  writer: DefinitionWriter,
) {
  const definition = parseWith(
    ActivityDefinition.superRefine((candidate, ctx) => {
      checkActivityDefinition(candidate, tenant.personFields, [], ctx);
    }),
    body,
    'activity definition',
  );
  if (!(await writer.addActivityDefinition(tenant.instance.id, definition))) {
    throw new ConflictError(`id: the activity definition ${definition.id} already exists`);
  }
  return { activity: definition };
}
