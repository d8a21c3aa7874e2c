import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { findChromium } from '../browser/chromium.js';
import { consoleUser } from './console.js';
import { until } from './emails.js';
import { baseUrl, call } from './stack.js';

/**
 * The console in a real browser (the packaged Chromium the reference-page test drives),
 * against the test stack and its local sign-in: a user signs in through the issuer's form,
 * opens their instance, makes a data source and mints a key for it (shown once), defines an
 * activity with two attributes,
 * records it through the public API with the new key and finds it on the person's timeline,
 * revokes the key and sees the public API refuse it and the audit log name every change; another tenant's
 * user sees none of it. Every page passes axe-core without a serious or critical violation
 * and breaks no rule of its Content-Security-Policy. `CDP_CONSOLE_SCREENSHOTS=<dir>` keeps a
 * screenshot of each page (`npm run docs:console` updates docs/console/).
 */
const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const SCREENSHOTS = process.env.CDP_CONSOLE_SCREENSHOTS;

let profile: string;
let browser: BrowserContext;
const violations: string[] = [];

beforeAll(async () => {
  const found = await findChromium();
  profile = await mkdtemp(join(tmpdir(), 'cdp-console-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: found.executablePath,
    env: { ...process.env, ...found.env },
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-sync'],
  });
}, 90_000);

afterAll(async () => {
  await browser.close();
  await rm(profile, { recursive: true, force: true });
});

/** A page that records what its Content-Security-Policy refused. */
async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  page.on('console', (message) => {
    if (/Content.Security.Policy/i.test(message.text())) violations.push(message.text());
  });
  return page;
}

/** axe-core on what the page shows now: no serious or critical violation. */
async function accessible(page: Page, name: string): Promise<void> {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const result = await (
      globalThis as unknown as {
        axe: {
          run: () => Promise<{
            violations: { id: string; impact: string; help: string; nodes: { html: string }[] }[];
          }>;
        };
      }
    ).axe.run();
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((node) => node.html.slice(0, 160)),
    }));
  });
  const serious = found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect({ page: name, serious }).toEqual({ page: name, serious: [] });
  if (SCREENSHOTS) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
  }
}

async function signInAs(page: Page, email: string): Promise<void> {
  // Each test signs in through the issuer's form: no session of an earlier sign-in.
  await browser.clearCookies();
  await page.goto(`${baseUrl('default')}/console/`);
  await accessible(page, 'sign-in');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(consoleUser(email).password);
  if (email === 'ops@acme.test') await accessible(page, 'issuer-sign-in');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Instances' }).waitFor();
}

describe('the console in Chromium', () => {
  it('signs in, mints a key the API takes, revokes it, and audits both', async () => {
    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await expect(page.getByRole('cell', { name: 'acme', exact: true }).count()).resolves.toBe(1);
    await expect(page.getByText('globex', { exact: true }).count()).resolves.toBe(0);
    await accessible(page, 'instances');

    await page.getByRole('button', { name: 'Open Acme Corp' }).click();
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
