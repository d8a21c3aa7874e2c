import { describe, expect, it } from '@jest/globals';
import { until } from '../emails.js';
import { call, KEYS } from '../stack.js';
import { accessible, newPage, signInAs, useConsoleBrowser, violations } from './browser.js';

/**
 * The console's organizations and audiences in Chromium: a user finds an organization made
 * through the public API and opens it with its people; builds a filter with the builder (two
 * conditions, the filter JSON shown as the API takes it), makes the audience, watches it
 * being built and reads its members; the audit log names the change. Every page state passes
 * axe-core and breaks no rule of the Content-Security-Policy (`browser.ts`).
 */
useConsoleBrowser();

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;

describe('organizations and audiences in the console', () => {
  it('opens an organization with its people, builds an audience’s filter, makes it and sees its members', async () => {
    // Data through the public API: an organization with two people, and two people whose
    // first name the audience will select (a third does not match).
    const orgName = `Browser Org ${suffix}`;
    const made = await call('/v1/organizations/merge', {
      key: KEYS.acme,
      body: {
        organizations: [{ fields: { 'str:o:name': orgName, 'str:o:industry': 'Paper' } }],
        merge_by: ['str:o:name'],
      },
    });
    const organizationId = (made.body.organizations as { organization_id: string }[])[0]
      ?.organization_id;
    const token = `Brw${suffix}`;
    const staff = [`staff1-${suffix}@acme.test`, `staff2-${suffix}@acme.test`];
    const members = [`member1-${suffix}@acme.test`, `member2-${suffix}@acme.test`];
    const merged = await call('/v1/person/merge', {
      key: KEYS.acme,
      body: {
        people: [
          ...staff.map((email) => ({ fields: { 'str::email': email, 'str::first': 'Staff' } })),
          ...members.map((email) => ({ fields: { 'str::email': email, 'str::first': token } })),
          { fields: { 'str::email': `other-${suffix}@example.test`, 'str::first': token } },
        ],
      },
    });
    const ids = (merged.body.people as { person_id: string }[]).map((person) => person.person_id);
    const linked = await call('/v1/organizations/contacts/add', {
      key: KEYS.acme,
      method: 'PUT',
      body: { organization_id: organizationId, inclusion_ids: ids.slice(0, 2) },
    });
    expect(linked.status).toBe(200);
    // The organization's people are found through the field index (kept from the stream).
    await until('the organization’s people indexed', async () => {
      const found = await call('/v1/person/get', {
        key: KEYS.acme,
        body: { filter: { $id_is: { field_id: 'idt::o', value: organizationId } } },
      });
      return (found.body.contacts as unknown[]).length === 2 ? true : undefined;
    });

    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await page.getByRole('button', { name: 'Open Acme Corp' }).click();

    // Organizations: the search, then the profile with its labelled fields and people.
    await page.getByRole('tab', { name: 'Organizations' }).click();
    await page.getByLabel('Search organizations by name').fill(`browser org ${suffix}`);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('cell', { name: orgName, exact: true }).waitFor();
    await expect(page.getByRole('cell', { name: 'Paper', exact: true }).count()).resolves.toBe(1);
    await accessible(page, 'organizations');
    await page.getByRole('button', { name: `Open ${orgName}` }).click();
    await page.getByRole('cell', { name: staff[0], exact: true }).waitFor();
    await expect(page.getByRole('cell', { name: staff[1], exact: true }).count()).resolves.toBe(1);
    await expect(page.getByRole('rowheader', { name: 'Industry' }).count()).resolves.toBe(1);
    await accessible(page, 'organization');
    await page.getByRole('button', { name: `Open ${staff[0]}` }).click();
    await page.getByRole('heading', { name: /^Person / }).waitFor();
    await page.getByRole('button', { name: 'Back to the people' }).click();
    await page.getByRole('button', { name: 'Back to the organizations' }).click();

    // Audiences: the builder writes the filter the API takes; the audience is made.
    await page.getByRole('tab', { name: 'Audiences' }).click();
    const audienceName = `Browser audience ${suffix}`;
    // Narrowed to its name (other tests make audiences in this instance too): none yet.
    await page.getByLabel('Search audiences by name').fill(audienceName);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('No audience here.').waitFor();
    await page.getByRole('button', { name: 'Make an audience' }).click();
    await page.getByLabel('Audience name').fill(audienceName);
    await page.getByLabel('Condition 1 field').selectOption('str::first');
    await page.getByLabel('Condition 1 operator').selectOption('$str::is');
    await page.getByLabel('Condition 1 value').fill(token);
    await page.getByRole('button', { name: 'Add a condition' }).click();
    await page.getByLabel('Condition 2 field').selectOption('str::email');
    await page.getByLabel('Condition 2 operator').selectOption('$str::ends');
    await page.getByLabel('Condition 2 value').fill('@acme.test');
    const expected = {
      $and: [
        { '$str::is': { field_id: 'str::first', value: token } },
        { '$str::ends': { field_id: 'str::email', value: '@acme.test' } },
      ],
    };
    const shown = JSON.parse(
      (await page.getByTestId('filter-json').textContent()) ?? '',
    ) as unknown;
    expect(shown).toEqual(expected);
    // "or" rewrites the filter at once.
    await page.getByLabel('People belong when they match').selectOption('or');
    const either = JSON.parse((await page.getByTestId('filter-json').textContent()) ?? '') as {
      $or?: unknown;
    };
    expect(either.$or).toEqual(expected.$and);
    await page.getByLabel('People belong when they match').selectOption('and');
    await accessible(page, 'audience-form');
    await page.getByRole('button', { name: 'Save the audience' }).click();

    // Built in the background: the page asks again until the build is over.
    await page.getByRole('button', { name: `Members of ${audienceName}` }).waitFor();
    const row = page.getByRole('row').filter({ hasText: audienceName });
    await row.getByText(/^kept current/).waitFor({ timeout: 30_000 });
    await expect(row.getByRole('cell').nth(1).textContent()).resolves.toBe('2');
    await accessible(page, 'audiences');
    const stored = await call('/v1/audiences/get', {
      key: KEYS.acme,
      body: { search_term: audienceName, with_filter: true },
    });
    expect(stored.body).toEqual([expect.objectContaining({ filter: expected, members: 2 })]);

    await page.getByRole('button', { name: `Members of ${audienceName}` }).click();
    await page.getByRole('cell', { name: members[0], exact: true }).waitFor();
    await expect(page.getByRole('cell', { name: members[1], exact: true }).count()).resolves.toBe(
      1,
    );
    await expect(page.getByText(`other-${suffix}@example.test`).count()).resolves.toBe(0);
    await accessible(page, 'audience-members');
    await page.getByRole('button', { name: 'Back to the audiences' }).click();

    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page.getByText(`audience:${audienceName}`).waitFor();
    expect(violations).toEqual([]);
  }, 120_000);

  it('shows a filter the parser refuses as its answer, naming the path, and makes nothing', async () => {
    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await page.getByRole('button', { name: 'Open Acme Corp' }).click();
    await page.getByRole('tab', { name: 'Audiences' }).click();
    await page.getByRole('button', { name: 'Make an audience' }).click();
    const audienceName = `Refused ${suffix}`;
    await page.getByLabel('Audience name').fill(audienceName);
    await page.getByLabel('Condition 1 field').selectOption('l');
    await page.getByLabel('Condition 1 operator').selectOption('$tme::relative_less_than');
    await page.getByLabel('Condition 1 days ago').fill('a week');
    await page.getByRole('button', { name: 'Save the audience' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'filter.$and[0].$tme::relative_less_than.days_ago' })
      .waitFor();
    await accessible(page, 'audience-refused');
    const stored = await call('/v1/audiences/get', {
      key: KEYS.acme,
      body: { search_term: audienceName },
    });
    expect(stored.body).toEqual([]);
    expect(violations).toEqual([]);
  }, 120_000);
});
