import { beforeAll, describe, expect, it } from '@jest/globals';
import { fieldsOf, mergeOne } from '../people.js';
import { consoleCall, consoleUser, signIn } from './sign-in.js';

/**
 * Editing a data source in the console (`PUT /console/v1/data-sources/modify`): its merge
 * preferences, by the same rules as making one, audited before and after; only a data source
 * made outside the configuration file; another tenant's answered 404; bad input 400 naming the
 * member; nothing written by a refused request.
 */
let acme = '';
let globex = '';

beforeAll(async () => {
  [acme, globex] = await Promise.all([
    signIn(consoleUser('ops@acme.test')),
    signIn(consoleUser('ops@globex.test')),
  ]);
});

type Source = {
  name: string;
  merge_by: string[];
  merge_strategy: number;
  find_strategy: number;
  declared_in_file: boolean;
};

async function sourceOf(name: string): Promise<Source | undefined> {
  const keys = await consoleCall('POST', '/console/v1/keys/get', acme, { instance_id: 'acme' });
  expect(keys.status).toBe(200);
  return (keys.body.data_sources as Source[]).find((source) => source.name === name);
}

async function modifications(name: string): Promise<unknown[]> {
  const audit = await consoleCall('POST', '/console/v1/audit/get', acme, {
    instance_id: 'acme',
    limit: 100,
  });
  expect(audit.status).toBe(200);
  return (audit.body.entries as { action: string; target: string }[]).filter(
    (entry) => entry.action === 'data_source.modify' && entry.target === `data_source:${name}`,
  );
}

const modify = (token: string, dataSource: Record<string, unknown>, instance = 'acme') =>
  consoleCall('PUT', '/console/v1/data-sources/modify', token, {
    instance_id: instance,
    data_source: dataSource,
  });

describe('editing a data source through the console', () => {
  const name = `Edited ${Math.random().toString(36).slice(2, 7)}`;
  let key = '';

  beforeAll(async () => {
    const made = await consoleCall('POST', '/console/v1/data-sources/create', acme, {
      instance_id: 'acme',
      data_source: { name, merge_by: ['str::ei'], merge_strategy: 1, find_strategy: 0 },
    });
    expect(made.status).toBe(200);
    const minted = await consoleCall('POST', '/console/v1/keys/create', acme, {
      instance_id: 'acme',
      data_source: name,
    });
    expect(minted.status).toBe(200);
    key = String(minted.body.key);
  });

  it('changes its merge preferences, which its keys merge by from the next request, and audits before and after', async () => {
    // Merge strategy 1 (append only): a second merge of the same person keeps the first name.
    const external = `ext-${Math.random().toString(36).slice(2, 9)}`;
    const made = await mergeOne(key, { fields: { 'str::ei': external, 'str::first': 'Old' } });
    expect(made.status).toBe('created');
    const id = String(made.person_id);
    await mergeOne(key, { fields: { 'str::ei': external, 'str::first': 'New' } });
    expect(await fieldsOf(key, id, ['str::first'])).toEqual({ 'str::first': 'Old' });

    const changed = await modify(acme, {
      name,
      merge_by: ['str::email', 'str::ei'],
      merge_strategy: 2,
      find_strategy: 1,
    });
    expect(changed).toEqual({
      status: 200,
      body: {
        instance_id: 'acme',
        data_source: {
          name,
          merge_by: ['str::email', 'str::ei'],
          merge_strategy: 2,
          find_strategy: 1,
        },
      },
    });
    expect(await sourceOf(name)).toMatchObject({
      merge_by: ['str::email', 'str::ei'],
      merge_strategy: 2,
      find_strategy: 1,
      declared_in_file: false,
    });
    // The same key, now overwriting (strategy 2), finding by the external ID when no email
    // is given (find strategy 1 falls to the second merge key only then).
    expect(await mergeOne(key, { fields: { 'str::ei': external, 'str::first': 'Newer' } })).toEqual(
      { person_id: id, status: 'merged' },
    );
    expect(await fieldsOf(key, id, ['str::first'])).toEqual({ 'str::first': 'Newer' });

    expect(await modifications(name)).toEqual([
      expect.objectContaining({
        actor: expect.objectContaining({ email: 'ops@acme.test' }) as unknown,
        details: {
          merge_by: 'str::email,str::ei',
          merge_strategy: 2,
          find_strategy: 1,
          was_merge_by: 'str::ei',
          was_merge_strategy: 1,
          was_find_strategy: 0,
        },
      }),
    ]);
  });

  it("answers another tenant's data source 404, as a missing one, and writes nothing", async () => {
    const before = await sourceOf(name);
    const audited = (await modifications(name)).length;
    const theirs = await modify(globex, {
      name,
      merge_by: ['str::person_id'],
      merge_strategy: 3,
      find_strategy: 0,
    });
    const missing = await modify(
      globex,
      {
        name,
        merge_by: ['str::person_id'],
        merge_strategy: 3,
        find_strategy: 0,
      },
      'no-such-instance',
    );
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(theirs.body.error).toBe(String(missing.body.error).replace('no-such-instance', 'acme'));
    const unknown = await modify(acme, {
      name: `${name} nobody`,
      merge_by: ['str::email'],
      merge_strategy: 2,
      find_strategy: 0,
    });
    expect(unknown).toMatchObject({ status: 404 });
    expect(String(unknown.body.error)).toMatch(
      /data_source\.name: the instance has no data source/,
    );
    expect(await sourceOf(name)).toEqual(before);
    expect(await modifications(name)).toHaveLength(audited);
  });

  it('refuses bad merge keys or a missing preference with 400 naming the member, and writes nothing', async () => {
    const before = await sourceOf(name);
    const audited = (await modifications(name)).length;
    const badKey = await modify(acme, {
      name,
      merge_by: ['str::first'],
      merge_strategy: 2,
      find_strategy: 0,
    });
    expect(badKey).toMatchObject({
      status: 400,
      body: { details: [{ field: 'data_source.merge_by.0' }] },
    });
    const idAlongside = await modify(acme, {
      name,
      merge_by: ['str::person_id', 'str::email'],
      merge_strategy: 2,
      find_strategy: 0,
    });
    expect(idAlongside.status).toBe(400);
    expect(JSON.stringify(idAlongside.body.details)).toContain('data_source.merge_by');
    const partial = await modify(acme, { name, merge_by: ['str::email'] });
    expect(partial.status).toBe(400);
    expect(JSON.stringify(partial.body)).toContain('merge_strategy');
    const strategy = await modify(acme, {
      name,
      merge_by: ['str::email'],
      merge_strategy: 7,
      find_strategy: 0,
    });
    expect(strategy.status).toBe(400);
    expect(JSON.stringify(strategy.body)).toContain('merge_strategy');
    const extra = await modify(acme, {
      name,
      merge_by: ['str::email'],
      merge_strategy: 2,
      find_strategy: 0,
      api_key: 'x'.repeat(40),
    });
    expect(extra.status).toBe(400);
    expect(await sourceOf(name)).toEqual(before);
    expect(await modifications(name)).toHaveLength(audited);
  });

  it('leaves a data source the configuration file declares to the file (409), and writes nothing', async () => {
    const before = await sourceOf('Website');
    expect(before).toMatchObject({ declared_in_file: true });
    const fromFile = await modify(acme, {
      name: 'Website',
      merge_by: ['str::ei'],
      merge_strategy: 3,
      find_strategy: 2,
    });
    expect(fromFile.status).toBe(409);
    expect(String(fromFile.body.error)).toMatch(/declared in the instance's configuration file/);
    expect(await sourceOf('Website')).toEqual(before);
    expect(await modifications('Website')).toEqual([]);
  });
});
