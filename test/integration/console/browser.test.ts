import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { until } from '../emails.js';
import { call } from '../stack.js';
import { accessible, newPage, signInAs, useConsoleBrowser, violations } from './browser.js';

/**
 * The console in a real browser (the packaged Chromium the reference-page test drives),
 * against the test stack and its local sign-in: a user signs in through the issuer's form,
 * opens their instance, makes a data source and mints a key for it (shown once), defines an
 * activity with two attributes,
 * records it through the public API with the new key and finds it on the person's timeline,
 * revokes the key and sees the public API refuse it and the audit log name every change; another tenant's
 * user sees none of it. Every page passes axe-core without a serious or critical violation
 * and breaks no rule of its Content-Security-Policy (`browser.ts`).
 */
useConsoleBrowser();

describe('the console in Chromium', () => {
  it('signs in, mints a key the API takes, revokes it, and audits both', async () => {
    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await expect(page.getByRole('cell', { name: 'acme', exact: true }).count()).resolves.toBe(1);
    await expect(page.getByText('globex', { exact: true }).count()).resolves.toBe(0);
    await accessible(page, 'instances');

    await page.getByRole('button', { name: 'Open Acme Corp' }).click();
    // An instance opens on its overview (browser-overview.test.ts); the keys are a tab away.
    await page.getByRole('tab', { name: 'Data sources and API keys' }).click();
    await page.getByRole('heading', { name: 'Website' }).waitFor();
    await accessible(page, 'keys');

    // A data source made in the console, and a key minted for it.
    const suffix = Math.random().toString(36).slice(2, 6);
    await page.getByRole('button', { name: 'Add a data source' }).click();
    await page.getByLabel('Data source name').fill(`Mobile ${suffix}`);
    await accessible(page, 'data-source-form');
    await page.getByRole('button', { name: 'Save the data source' }).click();
    await page.getByRole('heading', { name: `Mobile ${suffix}` }).waitFor();
    await page.getByRole('button', { name: `Mint a key for Mobile ${suffix}` }).click();
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    const key = (await shown.textContent())?.trim() ?? '';
    expect(key).toMatch(/^cdp_default_/);
    await accessible(page, 'key-minted');
    expect((await call('/v1/person/get', { key, body: { limit: 1 } })).status).toBe(200);
    await page.keyboard.press('Escape');

    // An activity with two attributes, defined in the console, recorded with the new key.
    await page.getByRole('tab', { name: 'Activity definitions' }).click();
    await page.getByRole('button', { name: 'Define an activity' }).click();
    await page.getByRole('textbox', { name: /^Name/ }).fill(`Chose plan ${suffix}`);
    await page
      .getByLabel('Display text')
      .fill('Chose {{attribute.plan}} for {{attribute.seats}} seats');
    await page.getByRole('button', { name: 'Add an attribute' }).click();
    await page.getByLabel('Attribute 1 name').fill('Plan');
    await page.getByRole('button', { name: 'Add an attribute' }).click();
    await page.getByLabel('Attribute 2 name').fill('Seats');
    await page.getByLabel('Attribute 2 type').selectOption('number');
    await accessible(page, 'activity-form');
    await page.getByRole('button', { name: 'Save the activity' }).click();
    await page.getByRole('cell', { name: /Chose \{\{attribute\.plan\}\}/ }).waitFor();
    await accessible(page, 'activities');
    const recorded = await call('/v1/activities/create', {
      key,
      body: {
        activities: [
          {
            activity_id: `act:cm:chose-plan-${suffix}`,
            fields: { 'str::email': `console-${suffix}@acme.test` },
            attributes: { 'str:cm:plan': 'Pro', 'int:cm:seats': 12 },
          },
        ],
      },
    });
    expect(recorded.status).toBe(200);
    const personId = (recorded.body.activities as { person_id: string }[])[0]?.person_id;
    const timeline = await call('/v1/person/get/activities', {
      key,
      body: { person_id: personId },
    });
    expect(timeline.body.activities).toContainEqual(
      expect.objectContaining({ display: 'Chose Pro for 12 seats' }),
    );
    // The person and their timeline, as display text, in the console.
    await page.getByRole('tab', { name: 'People' }).click();
    await page.getByLabel('Search people').fill(`console-${suffix}`);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('button', { name: `Open console-${suffix}@acme.test` }).click();
    await page.getByRole('cell', { name: 'Chose Pro for 12 seats' }).waitFor();
    await accessible(page, 'person');
    await page.getByRole('button', { name: 'Back to the people' }).click();
    await accessible(page, 'people');
    // The same person found by a filter built as an audience's is.
    await page.getByLabel('Search people').fill('');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('button', { name: 'Filter people' }).click();
    await page.getByLabel('Condition 1 field').selectOption('str::email');
    await page.getByLabel('Condition 1 operator').selectOption('$str::is');
    await page.getByLabel('Condition 1 value').fill(`console-${suffix}@acme.test`);
    await page.getByRole('button', { name: 'Apply the filter' }).click();
    await page.getByText(/^Page 1: 1 of \d+ matching the filter/).waitFor();
    await page.getByRole('button', { name: `Open console-${suffix}@acme.test` }).waitFor();
    await accessible(page, 'people-filter');
    await page.getByRole('tab', { name: 'Data sources and API keys' }).click();

    // The row of this key (other tests of the stack mint keys of the same instance).
    const shown16 = createHash('sha256').update(key).digest('hex').slice(0, 16);
    await page.getByRole('button', { name: `Revoke key ${shown16}…` }).click();
    await accessible(page, 'revoke');
    await page.getByRole('button', { name: 'Revoke the key' }).click();
    await until('the revoked key to be refused', async () =>
      (await call('/v1/person/get', { key, body: { limit: 1 } })).status === 401 ? true : undefined,
    );

    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page.getByText('key.revoke').first().waitFor();
    await expect(page.getByText('key.create').count()).resolves.toBeGreaterThan(0);
    await expect(page.getByText('activity.create').count()).resolves.toBeGreaterThan(0);
    await accessible(page, 'audit');
    expect(violations).toEqual([]);
  }, 120_000);

  it("shows another tenant's user only their own instance", async () => {
    const page = await newPage();
    await signInAs(page, 'ops@globex.test');
    await expect(page.getByRole('button', { name: 'Open Globex' }).count()).resolves.toBe(1);
    await expect(page.getByText('Acme Corp').count()).resolves.toBe(0);
    expect(violations).toEqual([]);
  }, 120_000);
});
