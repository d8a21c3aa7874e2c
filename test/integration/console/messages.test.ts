import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook as Verifier } from 'standardwebhooks';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { messageLogKey, messagePreviewKey } from '../../../shared/adapters/email-store.js';
import { tableName } from '../../../shared/resources.js';
import { baseUrl, call, KEYS, stackDb } from '../stack.js';
import { fetchLink, html, linkTokensOf, until } from '../emails.js';
import { mergeOne, uniqueEmail } from '../people.js';
import { consoleCall, consoleUser, signIn } from './sign-in.js';

/**
 * The console's emails, webhooks and a person's emails and audiences: made through the public
 * API (acme's key), read and changed through the console as acme's operator; globex's
 * operator is answered 404 for all of it and writes nothing; every change is audited.
 */
let acme = '';
let globex = '';
beforeAll(async () => {
  [acme, globex] = await Promise.all([
    signIn(consoleUser('ops@acme.test')),
    signIn(consoleUser('ops@globex.test')),
  ]);
});

type Body = Record<string, unknown>;
interface Email {
  message_id: string;
  person_id: string;
  to: string;
  subject: string | null;
  status: string;
  opens: number;
  clicks: number;
  bounce: { at: string; detail: string | null } | null;
}

const suffix = Math.random().toString(36).slice(2, 8);

async function sendAcme(to: string, subject: string): Promise<string> {
  const response = await call('/v1/transactional/send', {
    key: KEYS.acme,
    body: {
      merge_by: ['str::email'],
      asset: {
        from_email: 'team@mail.acme.test',
        subject,
        email_name: `console-${suffix}`,
        html_body: html(
          `<p>Hello {{ people.first-name }}</p><a href="https://example.com/offer-${suffix}">Offer</a><a href="{{ urls.unsubscribe }}">unsubscribe</a>`,
        ),
      },
      emails: [{ fields: { 'str::email': to, 'str::first': 'Ada' } }],
    },
  });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 202 });
  const [entry] = response.body.emails as { message_id?: string; email_status: string }[];
  expect(entry?.email_status).toBe('queued');
  return entry?.message_id ?? '';
}

const emailsOf = (token: string, body: Body) =>
  consoleCall('POST', '/console/v1/emails/get', token, body);
const auditOf = async (token: string, instance: string) =>
  (await consoleCall('POST', '/console/v1/audit/get', token, { instance_id: instance })).body;

describe('the email log', () => {
  const to = uniqueEmail('console-mail');
  let first = '';
  let second = '';
  let personId = '';

  beforeAll(async () => {
    first = await sendAcme(to, `First ${suffix}`);
    second = await sendAcme(to, `Second {{ people.first-name }} ${suffix}`);
    const found = await emailsOf(acme, { instance_id: 'acme', limit: 100 });
    personId = (found.body.emails as Email[]).find((e) => e.message_id === first)?.person_id ?? '';
  });

  it('lists the instance’s emails newest first, with their subject, recipient and state', async () => {
    const page = await emailsOf(acme, { instance_id: 'acme', limit: 100 });
    expect(page.status).toBe(200);
    const emails = page.body.emails as Email[];
    const ids = emails.map((e) => e.message_id);
    expect(ids.indexOf(second)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(second)).toBeLessThan(ids.indexOf(first));
    expect(ids).toEqual([...ids].sort().reverse());
    expect(emails.find((e) => e.message_id === second)).toMatchObject({
      to,
      subject: `Second Ada ${suffix}`,
      status: expect.stringMatching(/^(queued|sent)$/),
      opens: 0,
      clicks: 0,
      bounce: null,
    });
    expect(personId).toMatch(/^[0-9a-f]{24}$/);
  });

  it('pages one person’s emails with next/before', async () => {
    const one = await emailsOf(acme, { instance_id: 'acme', person_id: personId, limit: 1 });
    expect(one.status).toBe(200);
    expect((one.body.emails as Email[]).map((e) => e.message_id)).toEqual([second]);
    expect(one.body.next).toBe(second);
    const two = await emailsOf(acme, {
      instance_id: 'acme',
      person_id: personId,
      limit: 1,
      before: second,
    });
    expect((two.body.emails as Email[]).map((e) => e.message_id)).toEqual([first]);
    expect(two.body.next).toBeNull();
  });

  it('counts opens and clicks as they are recorded', async () => {
    const tokens = await linkTokensOf('acme', second);
    const base = baseUrl('default');
    expect((await fetchLink(`${base}/t/o?t=${tokens.open}`)).status).toBe(200);
    expect((await fetchLink(`${base}/t/c?t=${tokens.click}`)).status).toBe(302);
    const counted = await until('the open and the click', async () => {
      const page = await emailsOf(acme, { instance_id: 'acme', person_id: personId, limit: 1 });
      const email = (page.body.emails as Email[])[0];
      return email && email.opens === 1 && email.clicks === 1 ? email : undefined;
    });
    expect(counted).toMatchObject({ message_id: second, status: 'sent' });
  });

  it('previews an email as written: its links to their destinations, no tracking pixel', async () => {
    const preview = await consoleCall('POST', '/console/v1/emails/preview', acme, {
      instance_id: 'acme',
      message_id: second,
    });
    expect(preview.status).toBe(200);
    expect(preview.body.email).toMatchObject({ message_id: second, to });
    const body = String(preview.body.html);
    expect(body).toContain('<p>Hello Ada</p>');
    expect(body).toContain(`href="https://example.com/offer-${suffix}"`);
    expect(body).not.toContain('/t/o?');
    expect(body).not.toContain('/t/c?');
  });

  it('shows a bounce with its kind', async () => {
    const bounced = await sendAcme('bounce@simulator.amazonses.com', `Bounce ${suffix}`);
    const email = await until('the bounce', async () => {
      const page = await emailsOf(acme, { instance_id: 'acme', limit: 100 });
      const found = (page.body.emails as Email[]).find((e) => e.message_id === bounced);
      return found?.status === 'bounced' ? found : undefined;
    });
    expect(email.bounce).toEqual({ at: expect.any(String), detail: expect.any(String) });
  });

  it('answers another tenant 404 for every email read, and bad input 400 naming the field', async () => {
    const refused = await Promise.all([
      emailsOf(globex, { instance_id: 'acme' }),
      consoleCall('POST', '/console/v1/emails/preview', globex, {
        instance_id: 'acme',
        message_id: first,
      }),
    ]);
    for (const answer of refused) {
      expect(answer).toMatchObject({
        status: 404,
        body: { details: [{ field: 'instance_id', error: 'not found' }] },
      });
    }
    // Acme's email asked of globex's own instance: not there.
    const elsewhere = await consoleCall('POST', '/console/v1/emails/preview', globex, {
      instance_id: 'globex',
      message_id: first,
    });
    expect(elsewhere).toMatchObject({
      status: 404,
      body: { details: [{ field: 'message_id', error: 'not found' }] },
    });
    const ofGlobex = await emailsOf(globex, { instance_id: 'globex', person_id: personId });
    expect(ofGlobex).toMatchObject({ status: 200, body: { emails: [], next: null } });

    const bad = await Promise.all([
      emailsOf(acme, { instance_id: 'acme', limit: 0 }),
      emailsOf(acme, { instance_id: 'acme', before: 'yesterday' }),
      consoleCall('POST', '/console/v1/emails/preview', acme, {
        instance_id: 'acme',
        message_id: 'x',
      }),
    ]);
    expect(bad.map((answer) => answer.status)).toEqual([400, 400, 400]);
    expect(bad[0].body.error).toMatch(/limit/);
    expect(bad[1].body.error).toMatch(/before/);
    expect(bad[2].body.error).toMatch(/message_id/);
  });

  it('shows the person’s emails and audiences on their profile', async () => {
    const tag = `console-${suffix}`;
    const audience = await call('/v1/audiences/create', {
      key: KEYS.acme,
      body: {
        name: `Console ${suffix}`,
        filter: { $and: [{ '$u4s::is': { field_id: 'u4s::t', value: tag } }] },
      },
    });
    expect(audience.status).toBe(200);
    await mergeOne(KEYS.acme, { fields: { 'str::email': to }, tags: [tag] });
    const profile = await until('the person in the audience', async () => {
      const answer = await consoleCall('POST', '/console/v1/people/profile', acme, {
        instance_id: 'acme',
        person_id: personId,
      });
      expect(answer.status).toBe(200);
      return (answer.body.audiences as unknown[]).length > 0 ? answer.body : undefined;
    });
    expect(profile.audiences).toEqual([
      {
        audience_id: audience.body.id,
        name: `Console ${suffix}`,
        member_from: expect.any(String),
        subscribed: true,
      },
    ]);
    expect((profile.emails as Email[]).map((e) => e.message_id)).toEqual([second, first]);
    expect((profile.emails as Email[])[0]).toMatchObject({ subject: `Second Ada ${suffix}` });
  });
});

describe('erasing a person', () => {
  it('takes their emails out of the log, with their previews', async () => {
    const to = uniqueEmail('console-erased');
    const messageId = await sendAcme(to, `Erased ${suffix}`);
    const listed = await until('the email in the log', async () => {
      const page = await emailsOf(acme, { instance_id: 'acme', limit: 100 });
      return (page.body.emails as Email[]).find((e) => e.message_id === messageId);
    });
    const { db } = stackDb();
    const kept = async () => {
      const found = await db.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName('default', 'emails')]: {
              Keys: [messageLogKey('acme', messageId), messagePreviewKey('acme', messageId)],
              ConsistentRead: true,
            },
          },
        }),
      );
      return (found.Responses?.[tableName('default', 'emails')] ?? []).map((item) =>
        String(item.sk),
      );
    };
    expect((await kept()).sort()).toEqual([messageId, 'HTML']);

    const archived = await call('/v1/person/archive', {
      key: KEYS.acme,
      method: 'PUT',
      body: { inclusion_ids: [listed.person_id] },
    });
    expect(archived.status).toBe(200);
    const erased = await call('/v1/person/delete', {
      key: KEYS.acme,
      method: 'DELETE',
      body: { inclusion_ids: [listed.person_id] },
    });
    expect(erased).toMatchObject({ status: 200, body: { deleted_contacts: 1 } });
    await until('the erasure', async () => ((await kept()).length === 0 ? true : undefined));
    const page = await emailsOf(acme, { instance_id: 'acme', limit: 100 });
    expect((page.body.emails as Email[]).map((e) => e.message_id)).not.toContain(messageId);
    const preview = await consoleCall('POST', '/console/v1/emails/preview', acme, {
      instance_id: 'acme',
      message_id: messageId,
    });
    expect(preview.status).toBe(404);
  });
});

/** A receiver of deliveries on this machine (the local stack allows 127.0.0.1). */
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
let server: Server | undefined;
beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
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

interface Attempt {
  event_id: string;
  replay_id: string | null;
  status: string;
  status_code: number | null;
  latency_ms: number | null;
  attempted_at: string;
}

describe('webhooks', () => {
  const path = `/console-${suffix}`;
  let webhookId = '';
  let secret = '';
  const url = () => `http://127.0.0.1:${(server?.address() as AddressInfo).port}${path}`;
  const attempts = async (token = acme) =>
    consoleCall('POST', '/console/v1/webhooks/attempts', token, {
      instance_id: 'acme',
      webhook_id: webhookId,
    });

  beforeAll(async () => {
    const created = await call('/v1/webhooks/create', {
      key: KEYS.acme,
      body: { url: url(), events: ['person.created'], description: `console ${suffix}` },
    });
    expect(created.status).toBe(200);
    webhookId = String(created.body.id);
    secret = String(created.body.secret);
    await mergeOne(KEYS.acme, { fields: { 'str::email': uniqueEmail('hook') } });
  });

  it('lists the endpoints with their health, never their secrets', async () => {
    const listed = await consoleCall('POST', '/console/v1/webhooks/get', acme, {
      instance_id: 'acme',
    });
    expect(listed.status).toBe(200);
    const mine = (listed.body.webhooks as Body[]).find((hook) => hook.id === webhookId);
    expect(mine).toMatchObject({
      url: url(),
      events: ['person.created'],
      enabled: true,
      health: { state: 'healthy', failures: 0, failing_since: null },
    });
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
  });

  it('shows the attempts, replays one (audited) and rotates the secret (shown once, audited)', async () => {
    const [attempt] = await until('the first attempt', async () => {
      const page = await attempts();
      const list = page.body.deliveries as Attempt[] | undefined;
      return list && list.length > 0 ? list : undefined;
    });
    expect(attempt).toMatchObject({
      status: 'succeeded',
      status_code: 200,
      replay_id: null,
      latency_ms: expect.any(Number),
    });
    const eventId = attempt?.event_id ?? '';

    const replayed = await consoleCall('POST', '/console/v1/webhooks/replay', acme, {
      instance_id: 'acme',
      webhook_id: webhookId,
      event_id: eventId,
    });
    expect(replayed).toMatchObject({
      status: 202,
      body: { webhook_id: webhookId, event_id: eventId, events_queued: 1 },
    });
    const again = await until('the replayed delivery', () =>
      Promise.resolve(
        received.filter((r) => r.headers['webhook-id'] === eventId).length >= 2 ? true : undefined,
      ),
    );
    expect(again).toBe(true);
    const replayedAttempt = await until('the replay’s attempt', async () =>
      ((await attempts()).body.deliveries as Attempt[]).find(
        (a) => a.replay_id === replayed.body.replay_id,
      ),
    );
    expect(replayedAttempt).toMatchObject({ event_id: eventId, status: 'succeeded' });

    const rotated = await consoleCall('PUT', '/console/v1/webhooks/rotate', acme, {
      instance_id: 'acme',
      webhook_id: webhookId,
    });
    expect(rotated.status).toBe(200);
    const fresh = String(rotated.body.secret);
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(secret);
    const overlap = Date.parse(String(rotated.body.previous_secret_expires_at)) - Date.now();
    expect(overlap).toBeGreaterThan(23 * 3_600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3_600_000);

    // The next delivery is signed by both: the receiver may switch whenever it likes.
    const before = received.length;
    await mergeOne(KEYS.acme, { fields: { 'str::email': uniqueEmail('hook') } });
    const next = await until('a delivery after the rotation', () =>
      Promise.resolve(received.slice(before).find((r) => r.body.includes('person.created'))),
    );
    const headers = Object.fromEntries(
      Object.entries(next.headers).map(([name, value]) => [name, String(value)]),
    );
    expect(String(headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => new Verifier(fresh).verify(next.body, headers)).not.toThrow();
    expect(() => new Verifier(secret).verify(next.body, headers)).not.toThrow();

    const entries = (await auditOf(acme, 'acme')).entries as Body[];
    const replayEntry = entries.find((e) => e.action === 'webhook.replay');
    expect(replayEntry).toMatchObject({
      target: `webhook:${webhookId}`,
      details: { event_id: eventId },
      actor: { email: 'ops@acme.test' },
    });
    const rotation = entries.find((e) => e.action === 'webhook.rotate_secret');
    expect(rotation).toMatchObject({ target: `webhook:${webhookId}`, details: {} });
    expect(JSON.stringify(entries)).not.toContain(fresh);
  });

  it('answers another tenant 404 and writes nothing; bad input 400 naming the field', async () => {
    // Other tests change these instances meanwhile: what is compared is this webhook's own.
    const mine = async (token: string, instance: string) => {
      const log = (await auditOf(token, instance)).entries as Body[];
      return log.filter((entry) => entry.target === `webhook:${webhookId}`);
    };
    const hook = async () =>
      (
        (await consoleCall('POST', '/console/v1/webhooks/get', acme, { instance_id: 'acme' })).body
          .webhooks as Body[]
      ).find((entry) => entry.id === webhookId);
    const acmeAudit = await mine(acme, 'acme');
    const hookBefore = await hook();
    const eventId = `msg_${'0'.repeat(32)}`;
    const refused = await Promise.all([
      consoleCall('POST', '/console/v1/webhooks/get', globex, { instance_id: 'acme' }),
      attempts(globex),
      consoleCall('POST', '/console/v1/webhooks/replay', globex, {
        instance_id: 'acme',
        webhook_id: webhookId,
        event_id: eventId,
      }),
      consoleCall('PUT', '/console/v1/webhooks/rotate', globex, {
        instance_id: 'acme',
        webhook_id: webhookId,
      }),
    ]);
    for (const answer of refused) {
      expect(answer).toMatchObject({
        status: 404,
        body: { details: [{ field: 'instance_id', error: 'not found' }] },
      });
    }
    // Acme's webhook named in globex's own instance: not there, and nothing audited.
    const elsewhere = await Promise.all([
      consoleCall('POST', '/console/v1/webhooks/attempts', globex, {
        instance_id: 'globex',
        webhook_id: webhookId,
      }),
      consoleCall('POST', '/console/v1/webhooks/replay', globex, {
        instance_id: 'globex',
        webhook_id: webhookId,
        event_id: eventId,
      }),
      consoleCall('PUT', '/console/v1/webhooks/rotate', globex, {
        instance_id: 'globex',
        webhook_id: webhookId,
      }),
    ]);
    for (const answer of elsewhere) {
      expect(answer).toMatchObject({
        status: 404,
        body: { details: [{ field: 'webhook_id', error: 'not found' }] },
      });
    }
    const bad = await Promise.all([
      consoleCall('POST', '/console/v1/webhooks/replay', acme, {
        instance_id: 'acme',
        webhook_id: webhookId,
        event_id: 'nope',
      }),
      consoleCall('PUT', '/console/v1/webhooks/rotate', acme, {
        instance_id: 'acme',
        webhook_id: 'x',
      }),
      consoleCall('POST', '/console/v1/webhooks/attempts', acme, {
        instance_id: 'acme',
        webhook_id: webhookId,
        status: 'maybe',
      }),
    ]);
    expect(bad.map((answer) => answer.status)).toEqual([400, 400, 400]);
    expect(bad[0].body.error).toMatch(/event_id/);
    expect(bad[1].body.error).toMatch(/webhook_id/);
    expect(bad[2].body.error).toMatch(/status/);

    expect(await mine(acme, 'acme')).toEqual(acmeAudit);
    expect(await mine(globex, 'globex')).toEqual([]);
    expect(await hook()).toEqual(hookBefore);
  });
});
