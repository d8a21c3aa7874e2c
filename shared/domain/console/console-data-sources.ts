import { z } from 'zod';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { DataSource, mergeByProblems, type StoredInstance } from '../instance-config.js';
import type { Region } from '../regions.js';
import { recordChange, type AuditSink } from './audit.js';
import { consoleTenant } from './console-activities.js';
import { type ConsoleCaller, ConsoleInstanceId, type ConsoleStore } from './console-keys.js';

/**
 * A data source made in the console: a name and its merge preferences (`merge_by`,
 * `merge_strategy`, `find_strategy`), checked by the configuration file's rules, usable at
 * once (keys are minted for it next). Marked as made outside the file, so `apply` keeps it.
 */
export const ConsoleDataSourceRequest = z.strictObject({
  instance_id: ConsoleInstanceId,
  data_source: DataSource.omit({ api_key: true }),
});

type StoredDataSource = StoredInstance['data_sources'][number];

/** What a change of a data source's preferences came to (decided on a fresh read). */
export type DataSourceChange =
  { kind: 'changed'; source: StoredDataSource } | { kind: 'missing' } | { kind: 'file' };

export interface DataSourceStore extends Pick<ConsoleStore, 'getInstance'> {
  addDataSource(instanceId: string, source: StoredDataSource): Promise<boolean>;
  /**
   * Sets the merge preferences of the data source `name`, if it was made outside the
   * configuration file; a data source the file declares is left as the file says.
   */
  changeDataSource(
    instanceId: string,
    name: string,
    preferences: Pick<StoredDataSource, 'merge_by' | 'merge_strategy' | 'find_strategy'>,
  ): Promise<DataSourceChange>;
}

/** The merge keys' problems, by the configuration's rules, as a 400 naming each member. */
function checkMergeBy(tenant: Awaited<ReturnType<typeof consoleTenant>>, mergeBy: string[]): void {
  const unique = new Set(
    tenant.instance.person_fields.filter((field) => field.unique).map((field) => field.id),
  );
  const problems = mergeByProblems(mergeBy, unique, tenant.personFields);
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
  checkMergeBy(tenant, source.merge_by);
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

const preferences = DataSource.shape;

/**
 * New merge preferences for a data source made in the console: the same members and rules as
 * making one, every one of them given (the data source is named, not renamed: its keys name
 * it).
 */
export const ConsoleDataSourceModifyRequest = z.strictObject({
  instance_id: ConsoleInstanceId,
  data_source: z.strictObject({
    name: preferences.name,
    merge_by: preferences.merge_by.unwrap(),
    merge_strategy: preferences.merge_strategy.unwrap(),
    find_strategy: preferences.find_strategy.unwrap(),
  }),
});

const declaredInFile = (name: string) =>
  new ConflictError(
    `data_source.name: "${name}" is declared in the instance's configuration file: change it there (apply would put the file's preferences back)`,
  );
const noSuchDataSource = (name: string) =>
  new NotFoundError(`data_source.name: the instance has no data source "${name}"`);

/**
 * Changes the merge preferences of a data source made in the console (409 for one the
 * configuration file declares: the file is its source of truth), recorded in the audit log,
 * before and after, ahead of the change. Later requests with its keys merge and find by the
 * new preferences; the people already stored are not changed.
 */
export async function modifyConsoleDataSource(
  store: DataSourceStore,
  audit: AuditSink,
  caller: ConsoleCaller,
  region: Region,
  request: z.infer<typeof ConsoleDataSourceModifyRequest>,
) {
  const tenant = await consoleTenant(store, caller, region, request.instance_id);
  const { name, ...wanted } = request.data_source;
  checkMergeBy(tenant, wanted.merge_by);
  const current = tenant.instance.data_sources.find((existing) => existing.name === name);
  if (!current) throw noSuchDataSource(name);
  if (current.source !== 'api') throw declaredInFile(name);
  await recordChange(audit, caller, tenant.instance.id, {
    action: 'data_source.modify',
    target: `data_source:${name}`,
    details: {
      merge_by: wanted.merge_by.join(','),
      merge_strategy: wanted.merge_strategy,
      find_strategy: wanted.find_strategy,
      was_merge_by: current.merge_by.join(','),
      was_merge_strategy: current.merge_strategy,
      was_find_strategy: current.find_strategy,
    },
  });
  const change = await store.changeDataSource(tenant.instance.id, name, wanted);
  if (change.kind === 'missing') throw noSuchDataSource(name);
  if (change.kind === 'file') throw declaredInFile(name);
  return { instance_id: tenant.instance.id, data_source: request.data_source };
}
