import { afterAll, beforeAll, expect } from '@jest/globals';
import { mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { findChromium } from '../../browser/chromium.js';
import { baseUrl } from '../stack.js';
import { consoleUser } from './sign-in.js';

/**
 * The console in a real browser, for the browser tests of each page: the packaged Chromium
 * (one per test file, launched by `useConsoleBrowser`), pages that record what their
 * Content-Security-Policy refused, sign-in through the issuer's form, and axe-core on what a
 * page shows. `CDP_CONSOLE_SCREENSHOTS=<dir>` keeps a screenshot of each page checked
 * (`npm run docs:console` updates docs/console/).
 */
const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const SCREENSHOTS = process.env.CDP_CONSOLE_SCREENSHOTS;

let profile: string;
let browser: BrowserContext;
/** What the pages' Content-Security-Policy refused, in this test file. */
export const violations: string[] = [];

/** Launches Chromium before the file's tests and closes it after. */
export function useConsoleBrowser(): void {
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
}

/** A page that records what its Content-Security-Policy refused. */
export async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  page.on('console', (message) => {
    if (/Content.Security.Policy/i.test(message.text())) violations.push(message.text());
  });
  return page;
}

/** axe-core on what the page shows now: no serious or critical violation. */
export async function accessible(page: Page, name: string): Promise<void> {
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

export async function signInAs(page: Page, email: string): Promise<void> {
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
