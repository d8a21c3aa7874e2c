import { describe, expect, it } from '@jest/globals';
import { KEYS, call } from './stack.js';

const key = KEYS.orgs;

interface Entry {
  organization_id?: string;
  status: string;
  error?: string;
}

let counter = 0;
const uniqueName = (label = 'Org') => `${label} ${Date.now().toString(36)} ${(counter += 1)}`;

async function merge(body: Record<string, unknown>): Promise<Entry[]> {
  const response = await call('/v1/organizations/merge', { key, body });
  expect({ status: response.status, error: response.body.error }).toEqual({
    status: 200,
    error: undefined,
  });
  return response.body.organizations as Entry[];
}

async function mergeOne(fields: Record<string, unknown>, options: Record<string, unknown> = {}) {
  const [entry] = await merge({
    merge_by: ['str:o:name'],
    organizations: [{ fields }],
    ...options,
  });
  if (!entry) throw new Error('no entry');
  return entry;
}

/** An organization's fields, read back by searching its name. */
async function fieldsOf(id: string, name: string, fields: string[]) {
  const response = await call('/v1/organizations/get', {
    key,
    body: { q: name, limit: 100, fields },
  });
  expect(response.status).toBe(200);
  const found = (
    response.body.organizations as { id: string; fields?: Record<string, unknown> }[]
  ).find((organization) => organization.id === id);
  if (!found) throw new Error(`organization ${id} not found by its name`);
  return found.fields ?? {};
}

describe('organization merge', () => {
  it('creates an organization, then finds it by name without regard to case', async () => {
    const name = uniqueName('Acme');
    const created = await mergeOne({ 'str:o:name': name, 'int:o:employees': 10 });
    expect(created).toEqual({
      organization_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
      status: 'created',
    });
    const merged = await mergeOne({ 'str:o:name': name.toUpperCase(), 'str:o:industry': 'Anvils' });
    expect(merged).toEqual({ organization_id: created.organization_id, status: 'merged' });
  });

  it('requires merge_by, and refuses fields that cannot be merge keys', async () => {
    const missing = await call('/v1/organizations/merge', {
      key,
      body: { organizations: [{ fields: { 'str:o:name': 'X' } }] },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/merge_by/);
    const bad = await call('/v1/organizations/merge', {
      key,
      body: { merge_by: ['str:o:industry'], organizations: [{ fields: { 'str:o:name': 'X' } }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/merge_by\[0\]: expected str:o:name or str:o:website/);
  });

  it('applies the strategies: 1 fills empty fields, 2 overwrites and clears null, 3 leaves it untouched', async () => {
    const name = uniqueName();
    const { organization_id: id = '' } = await mergeOne({
      'str:o:name': name,
      'str:o:industry': 'Old',
      'str:o:postal': '1000',
    });
    await mergeOne(
      { 'str:o:name': name, 'str:o:industry': 'New', 'str:o:address': '1 Road' },
      { merge_strategy: 1 },
    );
    expect(await fieldsOf(id, name, ['str:o:industry', 'str:o:address', 'str:o:postal'])).toEqual({
      'str:o:industry': 'Old',
      'str:o:address': '1 Road',
      'str:o:postal': '1000',
    });
    await mergeOne(
      { 'str:o:name': name, 'str:o:industry': 'New', 'str:o:postal': null },
      { merge_strategy: 2 },
    );
    expect(await fieldsOf(id, name, ['str:o:industry', 'str:o:postal'])).toEqual({
      'str:o:industry': 'New',
    });
    expect(
      await mergeOne({ 'str:o:name': name, 'str:o:industry': 'Ignored' }, { merge_strategy: 3 }),
    ).toEqual({
      organization_id: id,
      status: 'skipped',
    });
    expect(await fieldsOf(id, name, ['str:o:industry'])).toEqual({ 'str:o:industry': 'New' });
    expect((await mergeOne({ 'str:o:name': uniqueName() }, { merge_strategy: 3 })).status).toBe(
      'created',
    );
  });

  it('stores custom fields and the data source as str:o:source unless given', async () => {
    const name = uniqueName();
    const { organization_id: id = '' } = await mergeOne({
      'str:o:name': name,
      'int:oc:revenue': 120000,
      'str:oc:tier': 'gold',
    });
    expect(await fieldsOf(id, name, ['int:oc:revenue', 'str:oc:tier', 'str:o:source'])).toEqual({
      'int:oc:revenue': 120000,
      'str:oc:tier': 'gold',
      'str:o:source': 'Importer',
    });
    const other = uniqueName();
    const given = await mergeOne({ 'str:o:name': other, 'str:o:source': 'Trade show' });
    expect(await fieldsOf(given.organization_id ?? '', other, ['str:o:source'])).toEqual({
      'str:o:source': 'Trade show',
    });
  });

  it('finds by the second merge field with find_strategy 0, and keeps websites unique', async () => {
    const website = `${uniqueName('site').replace(/\s/g, '-')}.test`;
    const { organization_id: id } = await mergeOne({
      'str:o:name': uniqueName(),
      'str:o:website': website,
    });
    const [byWebsite] = await merge({
      merge_by: ['str:o:name', 'str:o:website'],
      organizations: [
        { fields: { 'str:o:name': uniqueName('Renamed'), 'str:o:website': website.toUpperCase() } },
      ],
    });
    expect(byWebsite).toEqual({ organization_id: id, status: 'merged' });
    const [taken] = await merge({
      merge_by: ['str:o:name'],
      organizations: [
        { fields: { 'str:o:name': uniqueName('Other'), 'str:o:website': website } },
        { fields: { 'str:o:name': uniqueName('Fine') } },
      ],
    });
    expect(taken?.status).toBe('invalid');
    expect(taken?.error).toMatch(
      /str:o:website: the value ".*" already belongs to another organization/,
    );
  });

  it('reports invalid records, and answers 400 when every record is invalid', async () => {
    const entries = await merge({
      merge_by: ['str:o:name'],
      organizations: [
        { fields: { 'str:o:name': uniqueName(), 'int:o:employees': 'many' } },
        { fields: { 'str:o:industry': 'No name' } },
        { fields: { 'str:o:name': uniqueName(), 'str:oc:unknown': 'x' } },
        { fields: { 'str:o:name': uniqueName() } },
      ],
    });
    expect(entries.map((e) => e.status)).toEqual(['invalid', 'invalid', 'invalid', 'created']);
    expect(entries[0]?.error).toMatch(
      /^organizations\[0\]\.fields\.int:o:employees: expected a whole number/,
    );
    expect(entries[1]?.error).toBe('organizations[1].fields: str:o:name is required (merge_by)');
    expect(entries[2]?.error).toBe(
      'organizations[2].fields.str:oc:unknown: is not a custom field of this instance',
    );
    const all = await call('/v1/organizations/merge', {
      key,
      body: { merge_by: ['str:o:name'], organizations: [{ fields: {} }] },
    });
    expect(all.status).toBe(400);
    expect(all.body.details).toEqual([
      {
        index: 0,
        status: 'invalid',
        error: 'organizations[0].fields: str:o:name is required (merge_by)',
      },
    ]);
  });

  it('makes one organization of 30 simultaneous merges of a new name', async () => {
    const name = uniqueName('Race');
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        call('/v1/organizations/merge', {
          key,
          body: {
            merge_by: ['str:o:name'],
            organizations: [{ fields: { 'str:o:name': name, 'int:o:employees': i } }],
          },
        }),
      ),
    );
    const entries = responses.map((r) => (r.body.organizations as Entry[])[0]);
    expect(entries.filter((e) => e?.status === 'created')).toHaveLength(1);
    expect(entries.filter((e) => e?.status === 'merged')).toHaveLength(29);
    expect(new Set(entries.map((e) => e?.organization_id)).size).toBe(1);
  });
});

describe('organization get', () => {
  const prefix = `Listing ${Date.now().toString(36)}`;
  const created: string[] = [];

  it('lists organizations by creation, by name and by name search, each once across pages', async () => {
    for (let start = 0; start < 30; start += 10) {
      const entries = await merge({
        merge_by: ['str:o:name'],
        organizations: Array.from({ length: 10 }, (_, i) => ({
          fields: {
            'str:o:name': `${prefix} ${String(start + i).padStart(2, '0')}`,
            'int:o:employees': start + i,
          },
        })),
      });
      created.push(...entries.map((e) => e.organization_id ?? ''));
    }
    const walk = async (body: Record<string, unknown>) => {
      const ids: string[] = [];
      let request: Record<string, unknown> = { ...body, limit: 7 };
      for (let i = 0; i < 50; i += 1) {
        const response = await call('/v1/organizations/get', { key, body: request });
        expect(response.status).toBe(200);
        ids.push(...(response.body.organizations as { id: string }[]).map((o) => o.id));
        if (!response.body.has_more)
          return { ids, meta: response.body.meta as Record<string, number> };
        request = {
          ...body,
          limit: 7,
          offset: response.body.next_offset,
          cursor_id: response.body.cursor_id,
        };
      }
      throw new Error('too many pages');
    };
    const search = await walk({ q: prefix.toLowerCase() });
    expect(search.ids).toEqual(created);
    expect(search.meta.total_matches).toBe(30);
    const byName = await walk({ sort_by_field_id: 'str:o:name', sort_order: 'desc' });
    const ours = byName.ids.filter((id) => created.includes(id));
    expect(ours).toEqual([...created].reverse());
    const byCreation = await walk({ sort_order: 'asc' });
    expect(byCreation.ids.filter((id) => created.includes(id))).toEqual(created);
    expect(new Set(byCreation.ids).size).toBe(byCreation.ids.length);
    expect(byCreation.meta.total_organizations).toBe(byCreation.ids.length);
  });

  it('answers pages of 500, the most the real API documents', async () => {
    const searched = await call('/v1/organizations/get', { key, body: { q: prefix, limit: 500 } });
    expect(searched.status).toBe(200);
    expect((searched.body.organizations as { id: string }[]).map((o) => o.id)).toEqual(created);
    expect(searched.body.has_more).toBe(false);
    const listed = await call('/v1/organizations/get', {
      key,
      body: { limit: 500, sort_order: 'asc' },
    });
    expect(listed.status).toBe(200);
    const ids = (listed.body.organizations as { id: string }[]).map((o) => o.id);
    expect(ids.length).toBeLessThanOrEqual(500);
    expect(ids).toEqual(expect.arrayContaining(created));
  });

  it('returns the requested fields and keeps the person meta total in step', async () => {
    const response = await call('/v1/organizations/get', {
      key,
      body: { q: `${prefix} 05`, fields: ['str:o:name', 'int:o:employees', 'str:o:source'] },
    });
    expect(response.body.organizations).toEqual([
      {
        id: created[5],
        fields: { 'str:o:name': `${prefix} 05`, 'int:o:employees': 5, 'str:o:source': 'Importer' },
      },
    ]);
    const people = await call('/v1/person/get', { key, body: { limit: 1 } });
    const organizations = await call('/v1/organizations/get', { key, body: { limit: 1 } });
    expect((people.body.meta as Record<string, number>).total_organizations).toBe(
      (organizations.body.meta as Record<string, number>).total_organizations,
    );
  });

  it.each([
    [{ fields: ['str::email'] }, /fields\[0\]/],
    [{ cursor_id: 'garbage' }, /cursor_id/],
    [{ sort_by_field_id: 'int:o:employees' }, /sort_by_field_id/],
    [{ limit: 0 }, /\blimit: /],
    // 1 to 500, as the real API documents.
    [{ limit: 501 }, /\blimit: Too big/],
  ])('refuses %p', async (body, message) => {
    const response = await call('/v1/organizations/get', { key, body });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(message);
  });
});
