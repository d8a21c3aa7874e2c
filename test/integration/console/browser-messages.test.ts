import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { html, until } from '../emails.js';
import { mergeOne, uniqueEmail } from '../people.js';
import { call, KEYS } from '../stack.js';
import { accessible, newPage, signInAs, useConsoleBrowser, violations } from './browser.js';

/**
 * The console's emails, webhooks and a person's emails and audiences in Chromium: an email
 * sent and a webhook delivered through the public API are found in the console, the email
 * previewed in its sandboxed frame, an event sent again and the secret rotated (shown once),
 * both in the audit log; the person's profile lists the email and the audience. Every page
 * passes axe-core and breaks no rule of the Content-Security-Policy (`browser.ts`).
 */
useConsoleBrowser();

const deliveries: string[] = [];
let server: Server | undefined;
beforeAll(async () => {
  server = createServer((request, response) => {
    deliveries.push(String(request.headers['webhook-id']));
    request.resume();
    request.on('end', () => response.writeHead(200).end('ok'));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server?.closeAllConnections();
      server?.close(() => {
        resolve();
      });
    }),
);

describe('the console’s emails and webhooks in Chromium', () => {
  it('lists and previews an email, replays an event, rotates a secret and shows the person’s emails and audiences', async () => {
    const suffix = Math.random().toString(36).slice(2, 7);
    const to = uniqueEmail(`browser-${suffix}`);
    const tag = `browser-${suffix}`;
    const audience = await call('/v1/audiences/create', {
      key: KEYS.acme,
      body: {
        name: `Readers ${suffix}`,
        filter: { $and: [{ '$u4s::is': { field_id: 'u4s::t', value: tag } }] },
      },
    });
    expect(audience.status).toBe(200);
    const sent = await call('/v1/transactional/send', {
      key: KEYS.acme,
      body: {
        merge_by: ['str::email'],
        asset: {
          from_email: 'team@mail.acme.test',
          subject: `Welcome aboard ${suffix}`,
          email_name: 'welcome',
          html_body: html(
            `<h1>Welcome, {{ people.first-name }}</h1><p>Your plan is ready.</p><script>document.documentElement.dataset.ran = 'yes'</script><a href="https://example.com/start">Start</a>`,
          ),
        },
        emails: [{ fields: { 'str::email': to, 'str::first': 'Grace' }, tags: [tag] }],
      },
    });
    expect(sent.status).toBe(202);
    await mergeOne(KEYS.acme, { fields: { 'str::email': to }, tags: [tag] });

    const url = `http://127.0.0.1:${(server?.address() as AddressInfo).port}/browser-${suffix}`;
    const hook = await call('/v1/webhooks/create', {
      key: KEYS.acme,
      body: { url, events: ['person.created'] },
    });
    expect(hook.status).toBe(200);
    await mergeOne(KEYS.acme, { fields: { 'str::email': uniqueEmail(`hooked-${suffix}`) } });
    await until('a delivery', () => Promise.resolve(deliveries.length > 0 ? true : undefined));

    const page = await newPage();
    await signInAs(page, 'ops@acme.test');
    await page.getByRole('button', { name: 'Open Acme Corp' }).click();

    // The email log, and the email's HTML in a sandboxed frame.
    await page.getByRole('tab', { name: 'Emails' }).click();
    await page.getByRole('cell', { name: `Welcome aboard ${suffix}` }).waitFor();
    await accessible(page, 'emails');
    await page.getByRole('button', { name: new RegExp(`^Preview the email to ${to}`) }).click();
    const frame = page.locator('iframe[title^="The HTML of the email"]');
    await frame.waitFor();
    expect(await frame.getAttribute('sandbox')).toBe('');
    const inside = page.frameLocator('iframe[title^="The HTML of the email"]');
    await inside.getByRole('heading', { name: 'Welcome, Grace' }).waitFor();
    // Its script never ran: the frame allows none.
    await expect(inside.locator('html').getAttribute('data-ran')).resolves.toBeNull();
    await expect(inside.locator('a').getAttribute('href')).resolves.toBe(
      'https://example.com/start',
    );
    await accessible(page, 'email-preview');
    await page.keyboard.press('Escape');

    // The webhook, its attempts, an event sent again, and the secret rotated.
    await page.getByRole('tab', { name: 'Webhooks' }).click();
    await page.getByRole('cell', { name: url, exact: true }).waitFor();
    await accessible(page, 'webhooks');
    await page.getByRole('button', { name: `Attempts of ${url}` }).click();
    const eventId = deliveries[0] ?? '';
    const replayButton = page.getByRole('button', { name: `Send again: event ${eventId}` });
    await replayButton.waitFor();
    await accessible(page, 'webhook-attempts');
    await replayButton.click();
    await page.getByText(`Event ${eventId} queued again`).waitFor();
    await until('the replayed delivery', () =>
      Promise.resolve(deliveries.filter((id) => id === eventId).length >= 2 ? true : undefined),
    );

    await page.getByRole('button', { name: `Rotate the secret of ${url}` }).click();
    await accessible(page, 'webhook-rotate');
    await page.getByRole('button', { name: 'Rotate the secret', exact: true }).click();
    const secret = page.getByTestId('new-secret');
    await secret.waitFor();
    expect((await secret.textContent())?.trim()).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    await accessible(page, 'webhook-secret');
    await page.keyboard.press('Escape');

    // The person's profile: the email with its state, and the audience.
    await page.getByRole('tab', { name: 'People' }).click();
    await page.getByLabel('Search people').fill(to);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('button', { name: `Open ${to}` }).click();
    await page.getByRole('cell', { name: `Welcome aboard ${suffix}` }).waitFor();
    await until('the person in the audience', async () => {
      if ((await page.getByRole('cell', { name: `Readers ${suffix}` }).count()) > 0) return true;
      await page.getByRole('button', { name: 'Back to the people' }).click();
      await page.getByRole('button', { name: `Open ${to}` }).click();
      await page.getByRole('cell', { name: `Welcome aboard ${suffix}` }).waitFor();
      return undefined;
    });
    // The picture shows the emails and audiences, below the fields and the timeline.
    await page.evaluate('window.scrollTo(0, document.body.scrollHeight)');
    await accessible(page, 'person-messages');

    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page.getByText('webhook.rotate_secret').first().waitFor();
    await expect(page.getByText('webhook.replay').count()).resolves.toBeGreaterThan(0);
    expect(violations).toEqual([]);
  }, 120_000);
});
