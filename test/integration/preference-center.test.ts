import { describe, expect, it, jest } from '@jest/globals';
import { asset, fetchLink, html, linkTokensOf, sendOk, settledStatus } from './emails.js';
import { fieldsOf, mergeOne, uniqueEmail } from './people.js';
import { KEYS, WORKER_PATIENCE_MS, WORKER_TEST_TIMEOUT_MS, baseUrl, call } from './stack.js';

/**
 * The unsubscribe page of an email as a preference center: the public audiences
 * the person belongs to, each with a button that unsubscribes from it alone; the page's
 * other button (and RFC 8058 one-click) still unsubscribes from all email.
 */
const key = KEYS.mailer;
jest.setTimeout(WORKER_TEST_TIMEOUT_MS);

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + Math.max(120_000, WORKER_PATIENCE_MS);
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function subscriptionOf(personId: string, audienceId: string) {
  const response = await call('/v1/person/subscriptions', {
    key,
    body: { people: [{ person_id: personId }] },
  });
  const [entry] = response.body.people as {
    subscriptions: { audience_id: string; subscribed: boolean }[];
  }[];
  return entry?.subscriptions.find((subscription) => subscription.audience_id === audienceId);
}

describe('the preference center of the unsubscribe page', () => {
  it('lists the public audiences of the person and unsubscribes from one alone', async () => {
    const stamp = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const filter = { '$str::is': { field_id: 'str::last', value: `Pref${stamp}` } };
    const create = async (body: Record<string, unknown>) => {
      const response = await call('/v1/audiences/create', { key, body: { filter, ...body } });
      expect(response.status).toBe(200);
      return String(response.body.id);
    };
    const news = await create({
      name: `News ${stamp}`,
      is_public: true,
      public_name: `Newsletter ${stamp}`,
      public_description: 'Once a month',
    });
    const hidden = await create({ name: `Internal ${stamp}` });
    const email = uniqueEmail('pref');
    const { person_id: id = '' } = await mergeOne(key, {
      fields: { 'str::email': email, 'str::first': 'Pat', 'str::last': `Pref${stamp}` },
    });
    await until(
      () => subscriptionOf(id, news),
      (found) => found?.subscribed === true,
    );
    await until(
      () => subscriptionOf(id, hidden),
      (found) => found?.subscribed === true,
    );

    const [sent] = await sendOk({
      asset: asset({
        html_body: html(
          '<p>Hi</p><a href="https://shop.example/x">x</a> <a href="{{ urls.unsubscribe }}">u</a>',
        ),
      }),
      emails: [{ fields: { 'str::email': email } }],
    });
    const messageId = sent?.message_id ?? '';
    await settledStatus(messageId, ['sent', 'delivered']);
    const { unsubscribe } = await linkTokensOf('mailer', messageId);
    const link = `${baseUrl('default')}/t/u?t=${unsubscribe}`;

    const page = await (await fetchLink(link)).text();
    expect(page).toContain(`Newsletter ${stamp}`);
    expect(page).toContain('Once a month');
    // Not public: not offered.
    expect(page).not.toContain(`Internal ${stamp}`);
    expect(page).toContain(`audience=${news}`);

    const one = await fetchLink(`${link}&audience=${news}`, 'POST');
    expect(one.status).toBe(200);
    expect(await one.text()).toContain(`Newsletter ${stamp}`);
    expect(await subscriptionOf(id, news)).toMatchObject({ subscribed: false });
    // The other audience and the person's global permission are untouched.
    expect(await subscriptionOf(id, hidden)).toMatchObject({ subscribed: true });
    expect(await fieldsOf(key, id, ['bol::p'])).toEqual({ 'bol::p': true });
    // A hidden audience cannot be unsubscribed from through the page.
    expect((await fetchLink(`${link}&audience=${hidden}`, 'POST')).status).toBe(404);
    expect((await (await fetchLink(link)).text()).includes('unsubscribed')).toBe(true);

    // One-click still unsubscribes from everything.
    expect((await fetchLink(link, 'POST')).status).toBe(200);
    expect(await fieldsOf(key, id, ['bol::p'])).toEqual({ 'bol::p': false });
  });
});
