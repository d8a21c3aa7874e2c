import { describe, expect, it } from '@jest/globals';
import type { AuditEntry } from '../../../shared/domain/console/audit.js';
import {
  ConsoleDataSourceModifyRequest,
  modifyConsoleDataSource,
  type DataSourceChange,
  type DataSourceStore,
} from '../../../shared/domain/console/console-data-sources.js';
import { ConflictError, NotFoundError, ValidationError } from '../../../shared/domain/errors.js';
import type { InstanceSchema } from '../../../shared/domain/tenancy.js';
import { testTenant } from '../fixtures.js';

/**
 * Changing a data source's merge preferences: decided by the configuration's rules, audited
 * before the change (and not at all when refused), and never for a data source the file
 * declares or an instance the user may not manage.
 */
function fixture() {
  const instance: InstanceSchema = {
    ...testTenant().instance,
    data_sources: [
      { name: 'Web', merge_by: ['str::email'], merge_strategy: 2, find_strategy: 0 },
      { name: 'App', merge_by: ['str::ei'], merge_strategy: 1, find_strategy: 0, source: 'api' },
    ],
  };
  const events: string[] = [];
  const entries: AuditEntry[] = [];
  const store: DataSourceStore = {
    getInstance: (id) => Promise.resolve(id === instance.id ? instance : undefined),
    addDataSource: () => Promise.reject(new Error('not here')),
    changeDataSource: (_id, name, preferences): Promise<DataSourceChange> => {
      events.push(`change ${name}`);
      const index = instance.data_sources.findIndex((source) => source.name === name);
      const current = instance.data_sources[index];
      if (!current) return Promise.resolve({ kind: 'missing' });
      if (current.source !== 'api') return Promise.resolve({ kind: 'file' });
      instance.data_sources[index] = { ...current, ...preferences };
      return Promise.resolve({ kind: 'changed', source: { ...current, ...preferences } });
    },
  };
  const audit = {
    record: (_id: string, entry: AuditEntry) => {
      events.push(`audit ${entry.action}`);
      entries.push(entry);
      return Promise.resolve();
    },
  };
  const caller = (instances: string[]) => ({
    user: {
      subject: 'u1',
      email: 'ops@acme.test',
      platformAdmin: false,
      instances: new Set(instances),
    },
    sourceIp: '192.0.2.1',
    requestId: 'r1',
  });
  const modify = (body: unknown, instances = ['acme']) =>
    modifyConsoleDataSource(
      store,
      audit,
      caller(instances),
      'default',
      ConsoleDataSourceModifyRequest.parse(body),
    );
  return { instance, events, entries, modify };
}

const app = {
  name: 'App',
  merge_by: ['str::email', 'str::ei'],
  merge_strategy: 3,
  find_strategy: 2,
};

describe('modifyConsoleDataSource', () => {
  it('records the change, before and after, ahead of making it', async () => {
    const { instance, events, entries, modify } = fixture();
    await expect(modify({ instance_id: 'acme', data_source: app })).resolves.toEqual({
      instance_id: 'acme',
      data_source: app,
    });
    expect(events).toEqual(['audit data_source.modify', 'change App']);
    expect(entries[0]).toMatchObject({
      target: 'data_source:App',
      details: {
        merge_by: 'str::email,str::ei',
        merge_strategy: 3,
        find_strategy: 2,
        was_merge_by: 'str::ei',
        was_merge_strategy: 1,
        was_find_strategy: 0,
      },
    });
    expect(instance.data_sources[1]).toEqual({ ...app, source: 'api' });
  });

  it('refuses, unaudited and unchanged: a file data source, a missing one, bad keys, another tenant', async () => {
    const { events, modify } = fixture();
    await expect(
      modify({ instance_id: 'acme', data_source: { ...app, name: 'Web' } }),
    ).rejects.toThrow(ConflictError);
    await expect(
      modify({ instance_id: 'acme', data_source: { ...app, name: 'Nope' } }),
    ).rejects.toThrow(NotFoundError);
    await expect(
      modify({
        instance_id: 'acme',
        data_source: { ...app, merge_by: ['str::person_id', 'str::ei'] },
      }),
    ).rejects.toThrow(ValidationError);
    await expect(modify({ instance_id: 'acme', data_source: app }, ['globex'])).rejects.toThrow(
      NotFoundError,
    );
    expect(events).toEqual([]);
  });

  it('takes every preference, no default, and no key', () => {
    const partial = ConsoleDataSourceModifyRequest.safeParse({
      instance_id: 'acme',
      data_source: { name: 'App', merge_by: ['str::email'] },
    });
    expect(
      partial.success ? [] : partial.error.issues.map((issue) => issue.path.join('.')),
    ).toEqual(['data_source.merge_strategy', 'data_source.find_strategy']);
    expect(
      ConsoleDataSourceModifyRequest.safeParse({
        instance_id: 'acme',
        data_source: { ...app, api_key: 'k'.repeat(40) },
      }).success,
    ).toBe(false);
  });
});
