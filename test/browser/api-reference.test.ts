import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';
import { createRegionServer } from '../../local/http-adapter.js';
import type { HttpHandler } from '../../shared/http/api-handler.js';
import { FALLBACK_FUNCTION, ROUTES, routeKey, type RouteDefinition } from '../../shared/routes.js';
import { findChromium } from './chromium.js';

/**
 * The reference page in a real browser: Chromium (the system's, or the one `npm install`
 * brings: `chromium.ts`), headless, opens `GET /docs` as the
 * local stack serves it (the same HTTP adapter and handler modules, in this process: the
 * documentation routes need no store) and must list every endpoint of the routes table,
 * loading nothing from elsewhere and breaking no rule of its Content-Security-Policy.
 * `CDP_SCREENSHOT=<file>` keeps a screenshot (`npm run docs:screenshot` updates docs/api-reference.png).
 */
const DOCUMENTATION = ['openapi-document', 'api-reference', 'api-reference-assets'];

let server: Server;
let base: string;
let profile: string;
let browser: BrowserContext;

async function handlerOf(fn: string): Promise<HttpHandler> {
  const module = (await import(pathToFileURL(resolve('functions', fn, 'handler.ts')).href)) as {
    handler: HttpHandler;
  };
  return module.handler;
}

beforeAll(async () => {
  const chromiumBrowser = await findChromium();
  const routes = new Map<RouteDefinition, HttpHandler>();
  server = createRegionServer({ routes, fallback: await handlerOf(FALLBACK_FUNCTION.function) });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // What the functions read at cold start: their region and the regional addresses.
  Object.assign(process.env, {
    CDP_REGION: 'default',
    BASE_URL_DEFAULT: base,
    BASE_URL_AU: 'http://127.0.0.1:9/au',
    BASE_URL_EU: 'http://127.0.0.1:9/eu',
  });
  for (const route of ROUTES.filter((r) => DOCUMENTATION.includes(r.function))) {
    routes.set(route, await handlerOf(route.function));
  }
  profile = await mkdtemp(join(tmpdir(), 'cdp-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumBrowser.executablePath,
    env: { ...process.env, ...chromiumBrowser.env },
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 60_000);

afterAll(async () => {
  await browser.close();
  await new Promise((closed) => server.close(closed));
  await rm(profile, { recursive: true, force: true });
});

describe('the API reference page in Chromium', () => {
  it('lists every endpoint of the routes table, from this server alone', async () => {
    const page = await browser.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('response', (answer) => {
      if (answer.status() >= 400) problems.push(`${answer.status()} ${answer.url()}`);
    });

    const response = await page.goto(`${base}/docs`);
    expect(response?.status()).toBe(200);
    // Every operation rendered: as many summaries as routes.
    await page
      .locator('.opblock-summary-path')
      .nth(ROUTES.length - 1)
      .waitFor();
    const listed: string[] = [];
    for (const block of await page.locator('.opblock').all()) {
      const method = await block.locator('.opblock-summary-method').textContent();
      const path = await block.locator('.opblock-summary-path').getAttribute('data-path');
      listed.push(`${(method ?? '').trim().toUpperCase()} ${path ?? ''}`);
    }
    expect([...listed].sort()).toEqual(ROUTES.map(routeKey).sort());
    await expect(page.locator('.info .title').textContent()).resolves.toMatch(
      /Customer data platform API/,
    );
    // The servers menu offers this region first.
    await expect(page.locator('.servers select').inputValue()).resolves.toBe(base);

    expect(
      requested.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:')),
    ).toEqual([]);
    expect(requested).toEqual(
      expect.arrayContaining([
        `${base}/docs`,
        `${base}/docs/swagger-ui-bundle.js`,
        `${base}/docs/swagger-ui.css`,
        `${base}/openapi.json`,
      ]),
    );
    expect(problems).toEqual([]);

    if (process.env.CDP_SCREENSHOT) {
      await page.setViewportSize({ width: 1280, height: 1600 });
      await page.screenshot({ path: process.env.CDP_SCREENSHOT });
    }

    // An operation opens on its request and its answers, the error statuses included.
    await page.locator('#operations-People-personMerge .opblock-summary').click();
    const answers = page.locator('#operations-People-personMerge .responses-table').first();
    await answers.waitFor();
    await expect(answers.textContent()).resolves.toMatch(/200[\s\S]*422[\s\S]*503/);

    // A DELETE operation takes its JSON body like the others (erasure: `inclusion_ids`).
    const erase = page.locator('#operations-People-personDelete');
    await expect(erase.locator('.opblock-summary-method').textContent()).resolves.toBe('DELETE');
    await erase.locator('.opblock-summary').click();
    const body = erase.locator('.opblock-section-request-body');
    await body.waitFor();
    await expect(body.textContent()).resolves.toMatch(/application\/json[\s\S]*inclusion_ids/);
    await expect(erase.locator('.responses-table').first().textContent()).resolves.toMatch(
      /200[\s\S]*deleted_contacts/,
    );
    await page.close();
  }, 90_000);
});
