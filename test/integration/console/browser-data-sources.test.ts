import { describe, expect, it } from '@jest/globals';
import { fieldsOf, mergeOne } from '../people.js';
import { accessible, newPage, signInAs, useConsoleBrowser, violations } from './browser.js';

/**
 * Editing a data source in Chromium: the user makes one with the append-only strategy, mints
 * its key, opens "Edit" beside it, sees its preferences, changes them to overwrite, and the
 * key merges by the new ones; the audit log names the change. A data source the
 * configuration file declares offers no "Edit". Every state passes axe-core and the CSP.
 */
useConsoleBrowser();

describe('editing a data source in the console', () => {
  it("changes a data source's merge preferences, which its key then merges by", async () => {
    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await page.getByRole('button', { name: 'Open Acme Corp' }).click();
    await page.getByRole('tab', { name: 'Data sources and API keys' }).click();
    await page.getByRole('heading', { name: 'Website' }).waitFor();
    // The file's data source is changed in the file, not here.
    await expect(page.getByRole('button', { name: 'Edit Website' }).count()).resolves.toBe(0);

    const name = `Partner feed ${Math.random().toString(36).slice(2, 6)}`;
    await page.getByRole('button', { name: 'Add a data source' }).click();
    await page.getByLabel('Data source name').fill(name);
    await page.getByLabel('Merge by').selectOption('str::ei');
    await page.getByLabel('Merge strategy').selectOption('1');
    await page.getByRole('button', { name: 'Save the data source' }).click();
    await page.getByRole('heading', { name }).waitFor();
    await page.getByRole('button', { name: `Mint a key for ${name}` }).click();
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    const key = (await shown.textContent())?.trim() ?? '';
    expect(key).toMatch(/^cdp_default_/);
    await page.keyboard.press('Escape');

    // Append only: a second merge keeps the first name.
    const external = `ext-${Math.random().toString(36).slice(2, 9)}`;
    const made = await mergeOne(key, { fields: { 'str::ei': external, 'str::first': 'Old' } });
    await mergeOne(key, { fields: { 'str::ei': external, 'str::first': 'New' } });
    const id = String(made.person_id);
    expect(await fieldsOf(key, id, ['str::first'])).toEqual({ 'str::first': 'Old' });

    await page.getByRole('button', { name: `Edit ${name}` }).click();
    const dialog = page.getByRole('dialog', { name: `Edit ${name}` });
    await dialog.waitFor();
    // The form shows the data source's preferences; its name is kept.
    await expect(dialog.getByLabel('Data source name').inputValue()).resolves.toBe(name);
    await expect(dialog.getByLabel('Data source name').isEditable()).resolves.toBe(false);
    await expect(dialog.getByLabel('Merge by').inputValue()).resolves.toBe('str::ei');
    await expect(dialog.getByLabel('Merge strategy').inputValue()).resolves.toBe('1');
    await accessible(page, 'data-source-edit');
    await dialog.getByLabel('Merge strategy').selectOption('2');
    await dialog.getByRole('button', { name: 'Save the changes' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByText(/Merges by str::ei \(merge strategy 2, find strategy 0\)/).waitFor();
    await accessible(page, 'data-source-edited');

    // The same key now overwrites.
    await mergeOne(key, { fields: { 'str::ei': external, 'str::first': 'Newer' } });
    expect(await fieldsOf(key, id, ['str::first'])).toEqual({ 'str::first': 'Newer' });

    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page.getByText('data_source.modify').first().waitFor();
    await expect(page.getByText(`data_source:${name}`).count()).resolves.toBeGreaterThan(0);
    expect(violations).toEqual([]);
  }, 120_000);
});
