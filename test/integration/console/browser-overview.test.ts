import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../emails.js';
import { mergeOne, uniqueEmail } from '../people.js';
import { KEYS, call } from '../stack.js';
import { accessible, newPage, signInAs, useConsoleBrowser, violations } from './browser.js';
import { consoleCall, consoleUser, signIn } from './sign-in.js';

/**
 * The overview and custom-fields pages in Chromium: an instance opens on its overview (its
 * figures, its webhooks, and the region's dead letters for a platform admin only); a select
 * field is added in the console, found by the public API, and its options changed. Every
 * state passes axe-core and breaks no rule of the Content-Security-Policy (`browser.ts`).
 */
useConsoleBrowser();

/** A webhook endpoint of acme that takes every delivery, so the overview shows an attempt. */
let receiver: Server | undefined;
let webhookId = '';

beforeAll(async () => {
  receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200).end('ok'));
  });
  await new Promise<void>((resolve) => receiver?.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as AddressInfo).port;
  const created = await call('/v1/webhooks/create', {
    key: KEYS.acme,
    body: {
      url: `http://127.0.0.1:${String(port)}/cdp`,
      events: ['person.created'],
      description: 'CRM sync',
    },
  });
  expect(created.status).toBe(200);
  webhookId = created.body.id as string;
  // People (two of them subscribed) and an organization, so the figures are not all zero.
  for (const subscribed of [true, true, false]) {
    await mergeOne(KEYS.acme, {
      fields: { 'str::email': uniqueEmail('shown'), 'bol::p': subscribed },
    });
  }
  await call('/v1/organizations/merge', {
    key: KEYS.acme,
    body: { merge_by: ['str:o:name'], organizations: [{ fields: { 'str:o:name': 'Initech' } }] },
  });
  const token = await signIn(consoleUser('ops@acme.test'));
  await until('the webhook to have an attempt', async () => {
    const { body } = await consoleCall('POST', '/console/v1/instances/overview', token, {
      instance_id: 'acme',
    });
    const webhooks = body.webhooks as { id: string; last_attempt: unknown }[];
    return webhooks.find((webhook) => webhook.id === webhookId)?.last_attempt ?? undefined;
  });
});

afterAll(async () => {
  await call('/v1/webhooks/delete', {
    key: KEYS.acme,
    method: 'DELETE',
    body: { webhook_id: webhookId },
  });
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('the overview and custom fields in Chromium', () => {
  it("opens an instance on its overview; the region's dead letters are a platform admin's", async () => {
    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await page.getByRole('button', { name: 'Open Acme Corp' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 2 }).waitFor();
    await page.getByRole('heading', { name: 'People and organizations' }).waitFor();
    for (const label of ['People', 'Subscribers', 'Organizations', 'Sent', 'Bounced']) {
      await expect(page.getByRole('group', { name: label, exact: true }).count()).resolves.toBe(1);
    }
    const people = await page.getByRole('group', { name: 'People', exact: true }).textContent();
    expect(people).toMatch(/^People[\d,]+$/);
    await expect(page.getByText(/shown to platform admins only/).count()).resolves.toBe(1);
    const hook = page.getByRole('row', { name: /CRM sync/ });
    await expect(hook.getByRole('cell', { name: /^healthy\s*delivering$/ }).count()).resolves.toBe(
      1,
    );
    await expect(hook.getByRole('cell', { name: /^Succeeded \(HTTP 200\)/ }).count()).resolves.toBe(
      1,
    );
    await accessible(page, 'overview');

    // A tab of its own: the console keeps a sign-in for its tab.
    const adminPage = await newPage();
    await signInAs(adminPage, 'admin@platform.test');
    await adminPage.getByRole('button', { name: 'Open Acme Corp' }).click();
    const queues = adminPage.getByRole('table', { name: /dead-letter queues/ });
    await queues.waitFor();
    await expect(queues.getByRole('rowheader', { name: 'ingest' }).count()).resolves.toBe(1);
    await accessible(adminPage, 'overview-admin');
  });

  it('adds a select field the public API lists, and changes its options', async () => {
    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await page.getByRole('button', { name: 'Open Acme Corp' }).click();
    await page.getByRole('tab', { name: 'Custom fields' }).click();
    await page.getByRole('heading', { name: 'Custom fields', level: 2 }).waitFor();
    await page.getByRole('table', { name: 'The custom fields of people' }).waitFor();
    await accessible(page, 'fields');

    const suffix = Math.random().toString(36).slice(2, 6);
    const name = `Seating ${suffix}`;
    const id = `str:cm:seating-${suffix}`;
    await page.getByRole('button', { name: 'Add a field' }).click();
    await page.getByLabel('Type').selectOption('single_select');
    await page.getByRole('textbox', { name: /^Name/ }).fill(name);
    await page.getByRole('textbox', { name: /^Options/ }).fill('Aisle\nWindow');
    await expect(page.getByText(`Its field ID: ${id}`).count()).resolves.toBe(1);
    await accessible(page, 'field-form');
    await page.getByRole('button', { name: 'Add the field' }).click();
    const row = page.getByRole('row', { name: new RegExp(`^${name}`) });
    await row.waitFor();
    await expect(row.getByRole('cell', { name: 'Aisle, Window' }).count()).resolves.toBe(1);

    const listed = await call('/v1/person/custom-field/get', { key: KEYS.acme, body: {} });
    expect(listed.body.fields).toContainEqual({
      field: expect.objectContaining({ id, name, dic_items: ['Aisle', 'Window'] }),
      tracked_value: false,
    });

    await page.getByRole('button', { name: `Change the options of ${name}` }).click();
    await page.getByRole('textbox', { name: /^Options/ }).fill('Aisle\nWindow\nMiddle');
    await accessible(page, 'field-options');
    await page.getByRole('button', { name: 'Save the options' }).click();
    await row.getByRole('cell', { name: 'Aisle, Window, Middle' }).waitFor();
    const changed = await call('/v1/person/custom-field/get', { key: KEYS.acme, body: {} });
    expect(changed.body.fields).toContainEqual({
      field: expect.objectContaining({ id, dic_items: ['Aisle', 'Window', 'Middle'] }),
      tracked_value: false,
    });

    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page
      .getByRole('cell', { name: `field:${id}` })
      .first()
      .waitFor();
    await expect(page.getByRole('cell', { name: `field:${id}` }).count()).resolves.toBe(2);
    expect(violations).toEqual([]);
  });
});
