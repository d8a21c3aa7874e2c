import { z } from 'zod';
import { ConflictError, ValidationError } from '../errors.js';
import { DataSource, mergeByProblems, type StoredInstance } from '../instance-config.js';
import type { Region } from '../regions.js';
import { recordChange, type AuditSink } from './audit.js';
import { consoleTenant } from './console-activities.js';
import type { ConsoleCaller, ConsoleStore } from './console-keys.js';

/**
 * A data source made in the console: a name and its merge preferences (`merge_by`,
 * `merge_strategy`, `find_strategy`), checked by the configuration file's rules, usable at
 * once (keys are minted for it next). Marked as made outside the file, so `apply` keeps it.
 */
export const ConsoleDataSourceRequest = z.strictObject({
  instance_id: z.string().min(1).max(64),
  data_source: DataSource.omit({ api_key: true }),
});

export interface DataSourceStore extends Pick<ConsoleStore, 'getInstance'> {
  addDataSource(
    instanceId: string,
    source: StoredInstance['data_sources'][number],
  ): Promise<boolean>;
}

export async function createConsoleDataSource(
  store: DataSourceStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleDataSourceRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const source = { ...request.data_source, source: 'api' as const };
  const unique = new Set(
    tenant.instance.person_fields.filter((field) => field.unique).map((field) => field.id),
  );
  const problems = mergeByProblems(source.merge_by, unique, tenant.personFields);
  if (problems.length > 0) {
    const details = problems.map((problem) => ({
      field: ['data_source.merge_by', ...problem.at].join('.'),
      error: problem.message,
    }));
    throw new ValidationError(
      details.map((detail) => `${detail.field}: ${detail.error}`).join('; '),
      details,
    );
  }
  if (tenant.instance.data_sources.some((existing) => existing.name === source.name)) {
    throw new ConflictError(`data_source.name: the instance has a data source "${source.name}"`);
  }
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'data_source.create',
    target: `data_source:${source.name}`,
    details: {
      merge_by: source.merge_by.join(','),
      merge_strategy: source.merge_strategy,
      find_strategy: source.find_strategy,
    },
  });
  if (!(await store.addDataSource(tenant.instance.id, source))) {
    throw new ConflictError(`data_source.name: the instance has a data source "${source.name}"`);
  }
  return { instance_id: tenant.instance.id, data_source: request.data_source };
}
