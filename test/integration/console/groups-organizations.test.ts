import { beforeAll, describe, expect, it } from '@jest/globals';
import { until } from '../emails.js';
import { call, KEYS } from '../stack.js';
import { emailsOf, mergePeople, suffix, type Listed } from './groups.js';
import { consoleCall, consoleUser, signIn } from './sign-in.js';

/**
 * The console's organizations against the test stack: organizations made through the public
 * API, searched and opened with their labelled fields and their people, paged; another
 * tenant's user answered 404; bad input answered 400 naming the field.
 */
let acme = '';
let globex = '';

beforeAll(async () => {
  [acme, globex] = await Promise.all([
    signIn(consoleUser('ops@acme.test')),
    signIn(consoleUser('ops@globex.test')),
  ]);
});

describe('organizations through the console', () => {
  it('searches organizations by name and opens one with its labelled fields and its people, paged', async () => {
    const name = `Grp Initech ${suffix}`;
    const made = await call('/v1/organizations/merge', {
      key: KEYS.acme,
      body: {
        organizations: [
          {
            fields: { 'str:o:name': name, 'str:o:website': 'https://initech.example' },
            tags: ['prospect'],
          },
        ],
        merge_by: ['str:o:name'],
      },
    });
    expect(made.status).toBe(200);
    const organizationId = (made.body.organizations as { organization_id: string }[])[0]
      ?.organization_id;
    const emails = [`milton-${suffix}@acme.test`, `peter-${suffix}@acme.test`];
    const people = await mergePeople(
      emails.map((email, index) => ({
        'str::email': email,
        'str::first': ['Milton', 'Peter'][index],
      })),
    );
    const linked = await call('/v1/organizations/contacts/add', {
      key: KEYS.acme,
      method: 'PUT',
      body: { organization_id: organizationId, inclusion_ids: people },
    });
    expect(linked.status).toBe(200);

    const found = await consoleCall('POST', '/console/v1/organizations/get', acme, {
      instance_id: 'acme',
      q: `grp initech ${suffix}`,
    });
    expect(found.status).toBe(200);
    expect(found.body.organizations).toEqual([
      {
        id: organizationId,
        fields: { 'str:o:name': name, 'str:o:website': 'https://initech.example' },
      },
    ]);
    expect(found.body.meta).toMatchObject({ total_matches: 1 });
    expect(found.body.has_more).toBe(false);

    // The people are found through the field index, which the people stream keeps.
    const first = await until('the organization’s people', async () => {
      const profile = await consoleCall('POST', '/console/v1/organizations/profile', acme, {
        instance_id: 'acme',
        organization_id: organizationId,
        limit: 1,
      });
      expect(profile.status).toBe(200);
      const page = profile.body.people as { contacts: Listed[]; has_more: boolean };
      // Both people indexed (the index is a moment behind the links, longer on stale reads).
      return page.contacts.length === 1 && page.has_more ? profile.body : undefined;
    });
    expect(first.fields).toEqual([
      { id: 'str:o:name', label: 'Name', value: name },
      { id: 'str:o:website', label: 'Website', value: 'https://initech.example' },
      // Set by the service: the data source that made it.
      { id: 'str:o:source', label: 'Source', value: 'Website' },
    ]);
    expect(first).toMatchObject({ tags: ['prospect'], member_count: 2, archived_at: null });
    const page1 = first.people as { contacts: Listed[]; cursor_id: string; has_more: boolean };
    expect(page1.has_more).toBe(true);
    const second = await consoleCall('POST', '/console/v1/organizations/profile', acme, {
      instance_id: 'acme',
      organization_id: organizationId,
      limit: 1,
      offset: 1,
      cursor_id: page1.cursor_id,
    });
    expect(second.status).toBe(200);
    const page2 = second.body.people as { contacts: Listed[] };
    expect([...emailsOf(page1.contacts), ...emailsOf(page2.contacts)].sort()).toEqual(emails);

    // Another tenant's user: the instance is missing; their own instance has no such organization.
    const theirs = await consoleCall('POST', '/console/v1/organizations/profile', globex, {
      instance_id: 'acme',
      organization_id: organizationId,
    });
    expect(theirs).toMatchObject({
      status: 404,
      body: { details: [{ field: 'instance_id', error: 'not found' }] },
    });
    const searched = await consoleCall('POST', '/console/v1/organizations/get', globex, {
      instance_id: 'acme',
      q: 'grp',
    });
    expect(searched.status).toBe(404);
    const elsewhere = await consoleCall('POST', '/console/v1/organizations/profile', globex, {
      instance_id: 'globex',
      organization_id: organizationId,
    });
    expect(elsewhere).toMatchObject({
      status: 404,
      body: { details: [{ field: 'organization_id', error: 'not found' }] },
    });
  });

  it('names the field of a bad request', async () => {
    const answers = await Promise.all([
      consoleCall('POST', '/console/v1/organizations/profile', acme, {
        instance_id: 'acme',
        organization_id: 'not-an-id',
      }),
      consoleCall('POST', '/console/v1/organizations/get', acme, { instance_id: 'acme', limit: 0 }),
      consoleCall('POST', '/console/v1/organizations/get', acme, {
        instance_id: 'acme',
        sort_order: 'asc',
      }),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([400, 400, 400]);
    expect(answers[0].body.error).toMatch(/organization_id/);
    expect(answers[1].body.error).toMatch(/limit/);
    expect(answers[2].body.error).toMatch(/sort_order/);
  });
});
