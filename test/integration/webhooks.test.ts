import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as Verifier } from 'standardwebhooks';
import { CreateQueueCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { KEYS, WORKER_PATIENCE_MS, call, functionEnv, stackDb } from './stack.js';
import { createWebhookDeliveryWorker } from '../../shared/worker/webhook-runtime.js';
import { createS3Client, createSqsClient } from '../../shared/adapters/aws-clients.js';
import { SqsDeliveryQueue } from '../../shared/adapters/delivery-queue.js';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDeliveryStore, payloadKey } from '../../shared/adapters/delivery-store.js';
import {
  LARGE_EVENT_BYTES,
  MAX_IN_FLIGHT_PER_ENDPOINT,
  queuedDelivery,
  type QueuedDelivery,
  type DeliveryMessage,
} from '../../shared/domain/webhooks/delivery.js';
import { localBucketName, queueName, tableName } from '../../shared/resources.js';
import type { DeliveryAttempt } from '../../shared/domain/webhooks/attempts.js';
import type { ReplayEntry } from '../../shared/domain/webhooks/replay.js';
import { mergeOne, uniqueEmail } from './people.js';

/**
 * Webhooks end to end on the local stack (docs/webhooks.md): the endpoints, the people
 * table's stream fed to the fan-out worker by the local stream poller, the webhooks queue's
 * delivery worker, and a real HTTP receiver on this machine (`http://127.0.0.1`, which only
 * the local stack allows). Deliveries are verified with the `standardwebhooks` package.
 */
const key: string = KEYS.hooks;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the receiver answered. */
  answered: number;
}

interface Delivery {
  type: string;
  timestamp: string;
  data: { person_id: string } & Record<string, unknown>;
}

const HANG = 0;

/** A receiver: records every request, answers each path with its script of statuses. */
class Receiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, number[]>();
  private readonly bodies = new Map<string, (status: number) => string>();
  private server: Server | undefined;

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        const answered = this.scripts.get(path)?.shift() ?? 200;
        this.received.push({
          path,
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          answered,
        });
        // 0: never answers (the sender gives up after its timeout).
        if (answered === HANG) return;
        response
          .writeHead(answered, { 'content-type': 'text/plain' })
          .end(this.bodies.get(path)?.(answered) ?? 'ok');
      });
    });
    // Port 0: the system picks a free port, clear of every other engineer's stacks.
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}${path}`;
  }

  /** The next answers of a path (then 200). */
  script(path: string, statuses: number[]): void {
    this.scripts.set(path, [...statuses]);
  }

  /** The body of each answer of a path, by its status (instead of `ok`). */
  answerWith(path: string, body: (status: number) => string): void {
    this.bodies.set(path, body);
  }

  at(path: string): Received[] {
    return this.received.filter((entry) => entry.path === path);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => {
        resolve();
      });
    });
  }
}

const receiver = new Receiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

async function until<T>(
  read: () => T | undefined,
  what: string,
  timeoutMs = Math.max(40_000, WORKER_PATIENCE_MS),
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface Created {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  secret: string;
  created_at: string;
}

async function createWebhook(body: Record<string, unknown>, apiKey = key): Promise<Created> {
  const response = await call('/v1/webhooks/create', { key: apiKey, body });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 200 });
  return response.body as unknown as Created;
}

/** A delivery verified with the secret, read: throws when the signature does not verify. */
function verified(entry: Received, secret: string): Delivery {
  const headers = Object.fromEntries(
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
      name,
      String(entry.headers[name]),
    ]),
  );
  return new Verifier(secret).verify(entry.body, headers) as Delivery;
}

const parsed = (entry: Received) => JSON.parse(entry.body) as Delivery;

/** The deliveries at a path about one person, of one type. */
const about = (path: string, personId: string, type: string) =>
  receiver.at(path).filter((entry) => {
    const delivery = parsed(entry);
    return delivery.type === type && delivery.data.person_id === personId;
  });

async function personId(email: string, apiKey = key, fields: Record<string, unknown> = {}) {
  const entry = await mergeOne(apiKey, { fields: { 'str::email': email, ...fields } });
  expect(entry.status).toMatch(/created|merged/);
  return entry.person_id as string;
}

describe('webhooks: the endpoints', () => {
  it('creates a webhook with a Standard Webhooks secret, lists, changes and deletes it', async () => {
    const created = await createWebhook({
      url: receiver.url('/crud'),
      events: ['person.created', 'person.*'],
      description: 'crud',
      enabled: false,
    });
    expect(created).toMatchObject({
      url: receiver.url('/crud'),
      events: ['person.created', 'person.*'],
      enabled: false,
    });
    expect(created.id).toMatch(/^[0-9a-f]{24}$/);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);

    const one = await call('/v1/webhooks/get', { key, body: { webhook_id: created.id } });
    expect(one.status).toBe(200);
    expect(one.body.webhooks).toEqual([
      {
        id: created.id,
        url: created.url,
        events: created.events,
        description: 'crud',
        enabled: false,
        created_at: created.created_at,
        updated_at: created.created_at,
      },
    ]);
    // The secret is never shown again, nor stored in plain form.
    expect(JSON.stringify(one.body)).not.toContain(created.secret.slice(6));

    const updated = await call('/v1/webhooks/update', {
      key,
      method: 'PUT',
      body: { webhook_id: created.id, events: ['*'], description: null },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ events: ['*'], description: null, enabled: false });

    const deleted = await call('/v1/webhooks/delete', {
      key,
      method: 'DELETE',
      body: { webhook_id: created.id },
    });
    expect(deleted.body).toEqual({ webhook_id: created.id, deleted: true });
    const gone = await call('/v1/webhooks/get', { key, body: { webhook_id: created.id } });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toContain('webhook_id');
  });

  it.each([
    ['a name that resolves to loopback', 'http://localhost:15999/hook'],
    ['another loopback address', 'http://127.0.0.2:15999/hook'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['a private address', 'https://10.1.2.3/hook'],
    ['a private address (172.16/12)', 'https://172.20.0.5/hook'],
    ['a private address (192.168/16)', 'https://192.168.0.10/hook'],
    ['the metadata service', 'http://169.254.169.254/latest/meta-data/'],
    ['the metadata service over https', 'https://169.254.169.254/latest/meta-data/'],
    ['the IPv6 metadata service', 'https://[fd00:ec2::254]/'],
    ['a mapped private IPv4 address', 'https://[::ffff:10.0.0.1]/'],
    ['a translated metadata address', 'https://[::ffff:0:a9fe:a9fe]/'],
    ['a compatible loopback address', 'https://[::7f00:1]/'],
    ['6to4 of the metadata service', 'https://[2002:a9fe:a9fe::1]/'],
    ['NAT64 of a private address', 'https://[64:ff9b:1::a00:1]/'],
    ['multicast', 'https://239.1.2.3/'],
    ['plain http to a public name', 'http://example.com/hook'],
    ['a name that does not resolve', 'https://no-such-host.invalid/hook'],
  ])('refuses %s (%s) with a 400 naming url, and saves nothing', async (_what, url) => {
    const before = await call('/v1/webhooks/get', { key, body: {} });
    const response = await call('/v1/webhooks/create', { key, body: { url, events: ['*'] } });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(/^url: /);
    const after = await call('/v1/webhooks/get', { key, body: {} });
    expect(after.body.webhooks).toEqual(before.body.webhooks);
  });

  it('allows at most 20 webhooks per instance', async () => {
    const listed = await call('/v1/webhooks/get', { key: KEYS.hooksOther, body: {} });
    const existing = (listed.body.webhooks as unknown[]).length;
    const made: string[] = [];
    for (let n = existing; n < 20; n += 1) {
      made.push(
        (
          await createWebhook(
            { url: receiver.url('/full'), events: ['*'], enabled: false },
            KEYS.hooksOther,
          )
        ).id,
      );
    }
    const over = await call('/v1/webhooks/create', {
      key: KEYS.hooksOther,
      body: { url: receiver.url('/full'), events: ['*'] },
    });
    expect(over.status).toBe(400);
    expect(over.body.error).toContain('20 webhooks');
    for (const id of made) {
      await call('/v1/webhooks/delete', {
        key: KEYS.hooksOther,
        method: 'DELETE',
        body: { webhook_id: id },
      });
    }
    const again = await createWebhook(
      { url: receiver.url('/full'), events: ['*'], enabled: false },
      KEYS.hooksOther,
    );
    await call('/v1/webhooks/delete', {
      key: KEYS.hooksOther,
      method: 'DELETE',
      body: { webhook_id: again.id },
    });
  });
});

describe('webhooks: deliveries', () => {
  it('delivers person events, signed and verifiable, with stable IDs', async () => {
    const hook = await createWebhook({ url: receiver.url('/people'), events: ['person.*'] });
    const email = uniqueEmail('hook');
    const id = await personId(email, key, { 'str::first': 'Ada' });
    const [arrived] = await until(() => {
      const found = about('/people', id, 'person.created');
      return found.length > 0 ? found : undefined;
    }, 'person.created');
    if (!arrived) throw new Error('unreachable');
    const created = verified(arrived, hook.secret);
    expect(created.type).toBe('person.created');
    expect(created.data).toMatchObject({
      person_id: id,
      fields: { 'str::first': 'Ada' },
    });
    expect(String(arrived.headers['webhook-id'])).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(arrived.headers['content-type']).toBe('application/json');
    // Another secret does not verify it.
    expect(() => verified(arrived, `whsec_${Buffer.alloc(32, 7).toString('base64')}`)).toThrow();

    await personId(email, key, { 'str::first': 'Grace' });
    const updated = await until(() => about('/people', id, 'person.updated')[0], 'person.updated');
    expect(verified(updated, hook.secret).data).toEqual({
      person_id: id,
      changed_field_ids: ['str::first'],
      changes: { 'str::first': 'Grace' },
    });

    const archived = await call('/v1/person/archive', {
      key,
      method: 'PUT',
      body: { inclusion_ids: [id] },
    });
    expect(archived.status).toBe(200);
    const event = await until(() => about('/people', id, 'person.archived')[0], 'archived');
    expect(verified(event, hook.secret).data).toMatchObject({ person_id: id });

    // Erased: the event names the person's ID and nothing else of them.
    const erased = await call('/v1/person/delete', {
      key,
      method: 'DELETE',
      body: { inclusion_ids: [id] },
    });
    expect(erased.status).toBe(200);
    const deleted = await until(() => about('/people', id, 'person.deleted')[0], 'deleted');
    expect(verified(deleted, hook.secret).data).toEqual({ person_id: id });
    expect(deleted.body).not.toContain(email);

    // Each event once: no event ID arrived twice (nothing failed, nothing was retried).
    const ids = receiver.at('/people').map((entry) => String(entry.headers['webhook-id']));
    expect(new Set(ids).size).toBe(ids.length);
    await call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: hook.id } });
  });

  it('delivers organization events, created then updated with the changed fields', async () => {
    const hook = await createWebhook({ url: receiver.url('/orgs'), events: ['organization.*'] });
    const name = `Hooked ${Date.now().toString(36)}`;
    const mergeOrganization = async (fields: Record<string, unknown>) => {
      const response = await call('/v1/organizations/merge', {
        key,
        body: {
          merge_by: ['str:o:name'],
          organizations: [{ fields: { 'str:o:name': name, ...fields } }],
        },
      });
      expect(response.status).toBe(200);
      return (
        (response.body.organizations as { organization_id: string }[])[0]?.organization_id ?? ''
      );
    };
    const id = await mergeOrganization({ 'int:o:employees': 5 });
    const ofOrganization = (type: string) =>
      receiver.at('/orgs').filter((entry) => {
        const delivery = JSON.parse(entry.body) as { type: string; data: Record<string, unknown> };
        return delivery.type === type && delivery.data.organization_id === id;
      });
    const created = await until(
      () => ofOrganization('organization.created')[0],
      'organization.created',
    );
    expect(verified(created, hook.secret).data).toMatchObject({
      organization_id: id,
      fields: { 'str:o:name': name, 'int:o:employees': 5 },
    });
    await mergeOrganization({ 'int:o:employees': 6 });
    const updated = await until(
      () => ofOrganization('organization.updated')[0],
      'organization.updated',
    );
    expect(verified(updated, hook.secret).data).toEqual({
      organization_id: id,
      changed_field_ids: ['int:o:employees'],
      changes: { 'int:o:employees': 6 },
    });
    // People events are not among what it subscribed to.
    expect(receiver.at('/orgs').every((entry) => !entry.body.includes('"person.'))).toBe(true);
    await call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: hook.id } });
  });

  it('delivers activity.created for a recorded activity', async () => {
    const hook = await createWebhook(
      { url: receiver.url('/activities'), events: ['activity.*'] },
      KEYS.tracker,
    );
    const email = uniqueEmail('acted');
    const recorded = await call('/v1/activities/create', {
      key: KEYS.tracker,
      body: {
        activities: [
          {
            activity_id: 'act:cm:viewed',
            fields: { 'str::email': email },
            attributes: { 'str:cm:page': '/hooked' },
          },
        ],
      },
    });
    expect(recorded.status).toBe(200);
    const entry = (recorded.body.activities as { person_id: string; activity_id: string }[])[0];
    const arrived = await until(
      () =>
        receiver
          .at('/activities')
          .find(
            (delivery) =>
              parsed(delivery).data.person_id === entry?.person_id &&
              parsed(delivery).data.field_id === 'act:cm:viewed',
          ),
      'activity.created',
    );
    expect(verified(arrived, hook.secret)).toMatchObject({
      type: 'activity.created',
      data: {
        person_id: entry?.person_id,
        field_id: 'act:cm:viewed',
        attributes: { 'str:cm:page': '/hooked' },
      },
    });
    // Built-in activities too: the new person's subscription (`act::s-all`).
    await until(
      () =>
        receiver
          .at('/activities')
          .find(
            (delivery) =>
              parsed(delivery).data.person_id === entry?.person_id &&
              parsed(delivery).data.field_id === 'act::s-all',
          ),
      'the built-in activity',
    );
    await call('/v1/webhooks/delete', {
      key: KEYS.tracker,
      method: 'DELETE',
      body: { webhook_id: hook.id },
    });
  });

  it('delivers email.sent once SES has taken a transactional email', async () => {
    const hook = await createWebhook(
      { url: receiver.url('/emails'), events: ['email.*'] },
      KEYS.mailer,
    );
    const sent = await call('/v1/transactional/send', {
      key: KEYS.mailer,
      body: {
        merge_by: ['str::email'],
        asset: {
          from_email: 'team@mail.mailer.test',
          subject: 'Hooked',
          email_name: 'hooked',
          html_body: '<html><body><p>Hello</p></body></html>',
        },
        emails: [{ fields: { 'str::email': uniqueEmail('mailed') } }],
      },
    });
    expect(sent.status).toBe(202);
    const messageId = (sent.body.emails as { message_id: string }[])[0]?.message_id;
    const arrived = await until(
      () =>
        receiver
          .at('/emails')
          .find(
            (delivery) =>
              (parsed(delivery).data as Record<string, unknown>).message_id === messageId,
          ),
      'email.sent',
    );
    expect(verified(arrived, hook.secret)).toMatchObject({
      type: 'email.sent',
      data: { message_id: messageId, email_name: 'hooked', status: 'sent' },
    });
    await call('/v1/webhooks/delete', {
      key: KEYS.mailer,
      method: 'DELETE',
      body: { webhook_id: hook.id },
    });
  });

  it('delivers audience.entered and audience.exited as a person joins and leaves', async () => {
    const hook = await createWebhook(
      { url: receiver.url('/audiences'), events: ['audience.*'] },
      KEYS.audiences,
    );
    const plan = `hooked-${Date.now().toString(36)}`;
    const created = await call('/v1/audiences/create', {
      key: KEYS.audiences,
      body: {
        name: `Hooked ${plan}`,
        filter: { $and: [{ '$str::is': { field_id: 'str:cm:plan', value: plan } }] },
      },
    });
    expect(created.status).toBe(200);
    const audienceId = created.body.id as string;
    const email = uniqueEmail('joiner');
    const id = await personId(email, KEYS.audiences, { 'str:cm:plan': plan });
    const ofType = (type: string) =>
      receiver.at('/audiences').find((delivery) => {
        const event = parsed(delivery);
        return event.type === type && event.data.person_id === id;
      });
    const entered = await until(() => ofType('audience.entered'), 'audience.entered');
    expect(verified(entered, hook.secret).data).toMatchObject({
      audience_id: audienceId,
      person_id: id,
    });
    await personId(email, KEYS.audiences, { 'str:cm:plan': 'other' });
    const exited = await until(() => ofType('audience.exited'), 'audience.exited');
    expect(verified(exited, hook.secret).data).toMatchObject({ audience_id: audienceId });
    await call('/v1/audiences/delete', {
      key: KEYS.audiences,
      method: 'DELETE',
      body: { audience_id: audienceId },
    });
    await call('/v1/webhooks/delete', {
      key: KEYS.audiences,
      method: 'DELETE',
      body: { webhook_id: hook.id },
    });
  });

  it('retries an endpoint that answered 500, with the same webhook-id', async () => {
    receiver.script('/flaky', [500]);
    const hook = await createWebhook({ url: receiver.url('/flaky'), events: ['person.created'] });
    const id = await personId(uniqueEmail('flaky'));
    const attempts = await until(() => {
      const found = about('/flaky', id, 'person.created');
      return found.length >= 2 ? found : undefined;
    }, 'the retry');
    expect(attempts.map((entry) => entry.answered)).toEqual([500, 200]);
    const [first, second] = attempts;
    if (!first || !second) throw new Error('unreachable');
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.body).toBe(first.body);
    // Signed anew for its own time, and still verifiable.
    expect(verified(second, hook.secret).data.person_id).toBe(id);
    await call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: hook.id } });
  });

  it('keeps a hanging endpoint from delaying the deliveries of another', async () => {
    receiver.script(
      '/hang',
      Array.from({ length: 500 }, () => HANG),
    );
    const hanging = await createWebhook({ url: receiver.url('/hang'), events: ['person.created'] });
    // A backlog for the hanging endpoint: more events than the workers attempt at once
    // (4 pollers of 10 messages locally).
    const BACKLOG = 60;
    const backlog = await call('/v1/person/merge', {
      key,
      body: {
        people: Array.from({ length: BACKLOG }, (_, i) => ({
          fields: { 'str::email': uniqueEmail(`backlog${i}`) },
        })),
      },
    });
    expect(backlog.status).toBe(200);
    await until(() => (receiver.at('/hang').length > 0 ? true : undefined), 'a hanging attempt');
    const fast = await createWebhook({ url: receiver.url('/fast'), events: ['person.created'] });
    const ids = await Promise.all(
      Array.from({ length: 10 }, (_, i) => personId(uniqueEmail(`fast${i}`))),
    );
    await until(
      () => (ids.every((id) => about('/fast', id, 'person.created').length > 0) ? true : undefined),
      'every delivery to the other endpoint',
      90_000,
    );
    // The hanging endpoint was paused after its first attempts timed out: the other
    // endpoint's deliveries did not wait for an attempt of each of its events.
    expect(receiver.at('/hang').length).toBeLessThan(BACKLOG);
    // Its record says since when it fails (once its first attempt has timed out).
    const failing = async () => {
      const listed = await call('/v1/webhooks/get', { key, body: { webhook_id: hanging.id } });
      return (listed.body.webhooks as Record<string, unknown>[])[0];
    };
    let entry = await failing();
    for (let round = 0; round < 60 && entry?.failing_since === undefined; round += 1) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      entry = await failing();
    }
    expect(entry).toMatchObject({ enabled: true, failing_since: expect.stringMatching(/^\d{4}-/) });
    for (const hook of [hanging, fast]) {
      await call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: hook.id } });
    }
  }, 180_000);

  it('signs with both secrets for a day after a rotation', async () => {
    const hook = await createWebhook({ url: receiver.url('/rotated'), events: ['person.created'] });
    const rotated = await call('/v1/webhooks/rotate-secret', {
      key,
      method: 'PUT',
      body: { webhook_id: hook.id },
    });
    expect(rotated.status).toBe(200);
    const secret = rotated.body.secret as string;
    expect(secret).not.toBe(hook.secret);
    const expires = Date.parse(rotated.body.previous_secret_expires_at as string);
    expect(Math.abs(expires - (Date.now() + 86_400_000))).toBeLessThan(60_000);
    const id = await personId(uniqueEmail('rotated'));
    const arrived = await until(() => about('/rotated', id, 'person.created')[0], 'delivery');
    expect(String(arrived.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(arrived, secret).data.person_id).toBe(id);
    expect(verified(arrived, hook.secret).data.person_id).toBe(id);
    await call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: hook.id } });
  });

  it("never delivers one instance's events to another's webhooks", async () => {
    const mine = await createWebhook({ url: receiver.url('/mine'), events: ['*'] });
    const theirs = await createWebhook(
      { url: receiver.url('/theirs'), events: ['*'] },
      KEYS.hooksOther,
    );
    const myPerson = await personId(uniqueEmail('mine'));
    const theirPerson = await personId(uniqueEmail('theirs'), KEYS.hooksOther);
    await until(() => about('/mine', myPerson, 'person.created')[0], 'my delivery');
    await until(() => about('/theirs', theirPerson, 'person.created')[0], 'their delivery');
    const people = (path: string) => receiver.at(path).map((entry) => parsed(entry).data.person_id);
    expect(people('/theirs')).not.toContain(myPerson);
    expect(people('/mine')).not.toContain(theirPerson);
    // The other instance has no people but this test's; this one's earlier tests' late
    // events (a slow stream) may reach `/mine`, which subscribes to everything of it.
    expect(people('/mine')).toContain(myPerson);
    expect(new Set(people('/theirs'))).toEqual(new Set([theirPerson]));
    await call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: mine.id } });
    await call('/v1/webhooks/delete', {
      key: KEYS.hooksOther,
      method: 'DELETE',
      body: { webhook_id: theirs.id },
    });
  });
});

type Attempt = DeliveryAttempt;

interface Page {
  deliveries: Attempt[];
  cursor_id: string | null;
  has_more: boolean;
}

async function deliveries(body: Record<string, unknown>, apiKey = key): Promise<Page> {
  const response = await call('/v1/webhooks/deliveries/get', { key: apiKey, body });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 200 });
  return response.body as unknown as Page;
}

/** Every page of a listing, following its cursors. */
async function everyPage(body: Record<string, unknown>): Promise<Attempt[][]> {
  const pages: Attempt[][] = [];
  let cursor: string | null = null;
  do {
    const page = await deliveries({ ...body, ...(cursor ? { cursor_id: cursor } : {}) });
    pages.push(page.deliveries);
    expect(page.has_more).toBe(page.cursor_id !== null);
    cursor = page.cursor_id;
  } while (cursor !== null);
  return pages;
}

type Replay = ReplayEntry;

async function replay(body: Record<string, unknown>): Promise<Replay> {
  const response = await call('/v1/webhooks/replay', { key, body });
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 202 });
  return response.body as unknown as Replay;
}

async function replayState(replayId: string): Promise<Replay> {
  // `webhooks/replay` with the replay's ID alone answers its progress.
  const response = await call('/v1/webhooks/replay', { key, body: { replay_id: replayId } });
  expect(response.status).toBe(200);
  return response.body as unknown as Replay;
}

/** Polls an async read until `done` holds of its value. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached (last: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

const removeHook = (id: string) =>
  call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: id } });

describe('webhooks: attempts and replays', () => {
  it('lists a failed then a succeeded attempt with their codes, latency and the answer’s first KB', async () => {
    receiver.script('/logged', [500]);
    // Both answers pass the 1 KB kept: the failure's is long, the success's longer.
    receiver.answerWith('/logged', (status) =>
      status === 500 ? 'e'.repeat(3000) : 'é'.repeat(900),
    );
    const hook = await createWebhook({ url: receiver.url('/logged'), events: ['person.created'] });
    const id = await personId(uniqueEmail('logged'));
    const [first] = await until(() => {
      const found = about('/logged', id, 'person.created');
      return found.length >= 2 ? found : undefined;
    }, 'the retry');
    const eventId = String(first?.headers['webhook-id']);
    const page = await eventually(
      () => deliveries({ webhook_id: hook.id }),
      (listed) => listed.deliveries.length >= 2,
      'two attempts listed',
    );
    expect(page.has_more).toBe(false);
    expect(page.cursor_id).toBeNull();
    // Newest first: the retry, then the failure.
    const [succeeded, failed] = page.deliveries;
    expect(failed).toEqual({
      webhook_id: hook.id,
      event_id: eventId,
      event_type: 'person.created',
      replay_id: null,
      attempt: 1,
      status: 'failed',
      status_code: 500,
      latency_ms: expect.any(Number),
      response_body: 'e'.repeat(1024),
      response_truncated: true,
      error: 'it answered 500',
      attempted_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(succeeded).toMatchObject({
      event_id: eventId,
      attempt: 2,
      status: 'succeeded',
      status_code: 200,
      response_truncated: true,
      error: null,
    });
    // 512 two-byte characters: the first KB, no character cut in two.
    expect(succeeded?.response_body).toBe('é'.repeat(512));
    expect(failed?.latency_ms).toBeGreaterThanOrEqual(0);
    expect(succeeded?.latency_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(succeeded?.attempted_at ?? '')).toBeGreaterThan(
      Date.parse(failed?.attempted_at ?? ''),
    );
    await removeHook(hook.id);
  }, 90_000);

  it('filters attempts by outcome and time, and pages them with cursors', async () => {
    receiver.script('/paged', [503]);
    const hook = await createWebhook({ url: receiver.url('/paged'), events: ['person.created'] });
    const people: string[] = [];
    for (let n = 0; n < 5; n += 1) people.push(await personId(uniqueEmail(`paged${n}`)));
    await until(
      () =>
        people.every((person) =>
          about('/paged', person, 'person.created').some((entry) => entry.answered === 200),
        )
          ? true
          : undefined,
      'every delivery',
      60_000,
    );
    const all = await eventually(
      () => deliveries({ webhook_id: hook.id }),
      (listed) => listed.deliveries.length >= 6,
      'six attempts listed',
    );
    expect(all.deliveries).toHaveLength(6);
    const times = all.deliveries.map((entry) => entry.attempted_at);
    expect([...times].sort().reverse()).toEqual(times);

    const failed = await deliveries({ webhook_id: hook.id, status: 'failed' });
    expect(failed.deliveries.map((entry) => [entry.status, entry.status_code])).toEqual([
      ['failed', 503],
    ]);

    // Pages of two: every succeeded attempt once, newest first across pages.
    const pages = await everyPage({ webhook_id: hook.id, status: 'succeeded', limit: 2 });
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    const paged = pages.flat();
    expect(new Set(paged.map((entry) => `${entry.event_id}/${entry.attempt}`)).size).toBe(5);
    expect(paged.every((entry) => entry.status === 'succeeded')).toBe(true);
    expect(paged.map((entry) => entry.attempted_at)).toEqual(
      all.deliveries.filter((entry) => entry.status === 'succeeded').map((e) => e.attempted_at),
    );

    // A time range: `from` inclusive, `to` exclusive.
    const middle = all.deliveries[2]?.attempted_at ?? '';
    const since = await deliveries({ webhook_id: hook.id, from: middle });
    // (Two attempts may share a millisecond: what the range holds is said by the times.)
    expect(since.deliveries.map((entry) => entry.attempted_at)).toEqual(
      times.filter((time) => time >= middle),
    );
    const before = await deliveries({ webhook_id: hook.id, to: middle });
    expect(before.deliveries.map((entry) => entry.attempted_at)).toEqual(
      times.filter((time) => time < middle),
    );
    expect(since.deliveries.length + before.deliveries.length).toBe(6);

    // A cursor belongs to its listing.
    const first = await deliveries({ webhook_id: hook.id, status: 'succeeded', limit: 2 });
    const other = await call('/v1/webhooks/deliveries/get', {
      key,
      body: { webhook_id: hook.id, status: 'failed', cursor_id: first.cursor_id },
    });
    expect(other.status).toBe(400);
    expect(other.body.error).toMatch(/^cursor_id: /);
    await removeHook(hook.id);
  }, 120_000);

  it('replays one event with its webhook-id, signed anew with the current secret', async () => {
    const hook = await createWebhook({ url: receiver.url('/again'), events: ['person.created'] });
    const id = await personId(uniqueEmail('again'));
    const original = await until(() => about('/again', id, 'person.created')[0], 'delivery');
    const eventId = String(original.headers['webhook-id']);
    const rotated = await call('/v1/webhooks/rotate-secret', {
      key,
      method: 'PUT',
      body: { webhook_id: hook.id },
    });
    const secret = rotated.body.secret as string;

    const started = await replay({ webhook_id: hook.id, event_id: eventId });
    expect(started).toMatchObject({
      webhook_id: hook.id,
      event_id: eventId,
      status: 'complete',
      events_found: 1,
      events_queued: 1,
    });
    const again = await until(() => {
      const found = about('/again', id, 'person.created');
      return found.length >= 2 ? found[1] : undefined;
    }, 'the replayed delivery');
    expect(again.headers['webhook-id']).toBe(eventId);
    expect(again.body).toBe(original.body);
    // Signed with the secret made after the event: the replay was signed anew.
    expect(verified(again, secret).data.person_id).toBe(id);
    expect(() => verified(original, secret)).toThrow();

    const done = await eventually(
      () => replayState(started.replay_id),
      (state) => state.events_delivered === 1,
      'the replay delivered',
    );
    expect(done.status).toBe('complete');
    const listed = await eventually(
      () => deliveries({ webhook_id: hook.id }),
      (page) => page.deliveries.some((entry) => entry.replay_id === started.replay_id),
      'the replayed attempt listed',
    );
    expect(listed.deliveries[0]).toMatchObject({
      event_id: eventId,
      replay_id: started.replay_id,
      attempt: 1,
      status: 'succeeded',
    });

    const unknown = await call('/v1/webhooks/replay', {
      key,
      body: { webhook_id: hook.id, event_id: `msg_${'0'.repeat(32)}` },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/^event_id: /);
    await removeHook(hook.id);
  }, 90_000);

  it('replays every event since a time in a background job whose progress ends complete', async () => {
    const hook = await createWebhook({ url: receiver.url('/since'), events: ['person.created'] });
    const since = new Date().toISOString();
    const ids: string[] = [];
    for (let n = 0; n < 4; n += 1) ids.push(await personId(uniqueEmail(`since${n}`)));
    await until(
      () =>
        ids.every((id) => about('/since', id, 'person.created').length > 0) ? true : undefined,
      'the first deliveries',
    );
    const started = await replay({ webhook_id: hook.id, since });
    expect(started).toMatchObject({ status: 'queued', events_found: 0, since });
    const busy = await call('/v1/webhooks/replay', { key, body: { webhook_id: hook.id, since } });
    // One replay of a webhook at a time (unless it completed already, on a fast machine).
    if (busy.status !== 202) {
      expect(busy.status).toBe(409);
      expect(busy.body.error).toContain(started.replay_id);
    }
    const done = await eventually(
      () => replayState(started.replay_id),
      (state) => state.status === 'complete' && state.events_delivered === state.events_queued,
      'the replay complete and delivered',
    );
    expect(done).toMatchObject({ events_found: 4, events_queued: 4, events_skipped: 0 });
    for (const id of ids) {
      const arrived = about('/since', id, 'person.created');
      expect(arrived.length).toBeGreaterThanOrEqual(2);
      const [first, second] = arrived;
      if (!first || !second) throw new Error('unreachable');
      expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
      expect(verified(second, hook.secret).data.person_id).toBe(id);
    }
    await removeHook(hook.id);
  }, 120_000);

  it("answers another instance's webhook and replay as unknown: it cannot list or replay them", async () => {
    const hook = await createWebhook({ url: receiver.url('/private'), events: ['person.created'] });
    const id = await personId(uniqueEmail('private'));
    const arrived = await until(() => about('/private', id, 'person.created')[0], 'delivery');
    const eventId = String(arrived.headers['webhook-id']);
    const mine = await replay({ webhook_id: hook.id, event_id: eventId });
    for (const [path, body] of [
      ['/v1/webhooks/deliveries/get', { webhook_id: hook.id }],
      ['/v1/webhooks/replay', { webhook_id: hook.id, event_id: eventId }],
      [
        '/v1/webhooks/replay',
        { webhook_id: hook.id, since: new Date(Date.now() - 60_000).toISOString() },
      ],
      ['/v1/webhooks/replay', { replay_id: mine.replay_id }],
    ] as const) {
      const response = await call(path, { key: KEYS.hooksOther, body });
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect(response.body.error).toMatch(/^(webhook_id|replay_id): no /);
    }
    // Nothing more reached the receiver than this instance's own delivery and replay.
    await until(
      () => (about('/private', id, 'person.created').length >= 2 ? true : undefined),
      'the replay',
    );
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(about('/private', id, 'person.created')).toHaveLength(2);
    await removeHook(hook.id);
  }, 90_000);

  it('delivers an event larger than a queue message by claim check, whole and verifiable', async () => {
    const hook = await createWebhook({ url: receiver.url('/large'), events: ['person.updated'] });
    // What the fan-out does with an event of a person holding a large value: keep it (its body
    // in the payloads bucket) and queue its ID only.
    const { db } = stackDb();
    const kept = new DynamoDeliveryStore(
      db,
      tableName('default', 'deliveries'),
      createS3Client(),
      localBucketName('default', 'payloads'),
    );
    const message: DeliveryMessage = {
      instance_id: 'hooks',
      webhook_id: hook.id,
      event: {
        id: `msg_${Date.now().toString(16).padStart(32, '0')}`,
        type: 'person.updated',
        timestamp: new Date().toISOString(),
        data: {
          person_id: '66a1f0c2e4b0a1b2c3d4e5f6',
          changed_field_ids: ['str:cm:notes'],
          changes: { 'str:cm:notes': 'n'.repeat(300 * 1024) },
        },
      },
    };
    const queued = queuedDelivery(message);
    expect(queued.event).toBeUndefined();
    expect(queued.event_id).toBe(message.event.id);
    expect(JSON.stringify(message.event).length).toBeGreaterThan(LARGE_EVENT_BYTES);
    await kept.keep('hooks', [message]);
    const sqs = createSqsClient();
    const { QueueUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: queueName('default', 'webhooks') }),
    );
    await new SqsDeliveryQueue(sqs, QueueUrl ?? '').queue([queued]);
    const arrived = await until(() => receiver.at('/large')[0], 'the large delivery');
    expect(arrived.headers['webhook-id']).toBe(message.event.id);
    expect(verified(arrived, hook.secret).data).toEqual(message.event.data);
    await removeHook(hook.id);
  });

  it('erases what was kept of an erased person: their events, attempts and large bodies, but not person.deleted', async () => {
    const hook = await createWebhook({ url: receiver.url('/erased'), events: ['person.*'] });
    const email = uniqueEmail('erased');
    const id = await personId(email, key, { 'str::first': 'Erin' });
    const created = await until(() => about('/erased', id, 'person.created')[0], 'delivery');
    const createdId = String(created.headers['webhook-id']);
    // A large event of theirs, kept as the fan-out keeps one (its body in the bucket).
    const { db } = stackDb();
    const table = tableName('default', 'deliveries');
    const s3 = createS3Client();
    const bucket = localBucketName('default', 'payloads');
    const large: DeliveryMessage = {
      instance_id: 'hooks',
      webhook_id: hook.id,
      event: {
        id: `msg_${Date.now().toString(16).padStart(32, 'e')}`,
        type: 'person.updated',
        timestamp: new Date().toISOString(),
        data: {
          person_id: id,
          changed_field_ids: ['str:cm:notes'],
          changes: { 'str:cm:notes': `${email} `.repeat(20_000) },
        },
      },
    };
    await new DynamoDeliveryStore(db, table, s3, bucket).keep('hooks', [large]);
    const body = { Bucket: bucket, Key: payloadKey('hooks', large.event.id) };
    await s3.send(new HeadObjectCommand(body));

    const archived = await call('/v1/person/archive', {
      key,
      method: 'PUT',
      body: { inclusion_ids: [id] },
    });
    expect(archived.status).toBe(200);
    await until(() => about('/erased', id, 'person.archived')[0], 'archived');
    const erased = await call('/v1/person/delete', {
      key,
      method: 'DELETE',
      body: { inclusion_ids: [id] },
    });
    expect(erased.status).toBe(200);
    const deleted = await until(() => about('/erased', id, 'person.deleted')[0], 'deleted');

    // Nothing of theirs is kept: not an event, not an attempt, not a body in the bucket.
    const partition = (pk: string) =>
      db
        .send(
          new QueryCommand({
            TableName: table,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': pk },
            ConsistentRead: true,
          }),
        )
        .then((page) => page.Items ?? []);
    await eventually(
      () => partition(`hooks#WE#${hook.id}#${createdId}`),
      (items) => items.length === 0,
      'the kept person.created erased',
    );
    expect(await partition(`hooks#WE#${hook.id}#${large.event.id}`)).toEqual([]);
    // The references go last (after the events and the bodies): waited for too, since under
    // injected throttling the worker may still be deleting them when the events are gone.
    await eventually(
      () => partition(`hooks#PREF#${id}`),
      (items) => items.length === 0,
      'the references to the erased person deleted',
    );
    await expect(s3.send(new HeadObjectCommand(body))).rejects.toThrow();
    const everything = await db.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
    expect(JSON.stringify(everything.Items ?? [])).not.toContain(email);
    const gone = await call('/v1/webhooks/replay', {
      key,
      body: { webhook_id: hook.id, event_id: createdId },
    });
    expect(gone.status).toBe(404);
    // person.deleted names the ID only, and is what receivers erase by: still kept.
    const again = await replay({
      webhook_id: hook.id,
      event_id: String(deleted.headers['webhook-id']),
    });
    expect(again.events_queued).toBe(1);
    await removeHook(hook.id);
  }, 120_000);

  it('caps the attempts in flight to an endpoint before its first failure is known', async () => {
    // A batch of the delivery worker, in this process: ten events for one endpoint that
    // hangs. Without a cap all ten would wait their 15 s; with it, MAX_IN_FLIGHT_PER_ENDPOINT
    // do and fail, pausing the endpoint, and the others, finding no slot within a moment, move
    // to the slow endpoints' queue without a request (the batch holds no more than that).
    const BATCH = 10;
    receiver.script(
      '/capped',
      Array.from({ length: BATCH }, () => HANG),
    );
    const hook = await createWebhook({
      url: receiver.url('/capped'),
      events: ['email.complained'],
    });
    // This process's AWS settings point at the stack's services.
    stackDb();
    const sqs = createSqsClient();
    const { QueueUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: queueName('default', 'webhooks') }),
    );
    // The moved messages go to a queue of the test's own (the stack's slow worker would
    // attempt them at once, the endpoint not paused yet).
    const slow = await sqs.send(
      new CreateQueueCommand({ QueueName: `capped-slow-${Date.now().toString(36)}` }),
    );
    functionEnv({
      WEBHOOKS_QUEUE_URL: QueueUrl ?? '',
      WEBHOOKS_SLOW_QUEUE_URL: slow.QueueUrl ?? '',
      DELIVERIES_TABLE: tableName('default', 'deliveries'),
      CDP_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    });
    const worker = createWebhookDeliveryWorker();
    const records = Array.from({ length: BATCH }, (_, n): SQSRecord => {
      const body: QueuedDelivery = {
        instance_id: 'hooks',
        webhook_id: hook.id,
        event: {
          id: `msg_${(Date.now() * 100 + n).toString(16).padStart(32, '0')}`,
          type: 'email.complained',
          timestamp: new Date().toISOString(),
          data: { message_id: String(n) },
        },
      };
      return {
        messageId: `capped-${n}`,
        // Not a receipt of the queue: the worker's backoff (a visibility change) fails, harmlessly.
        receiptHandle: `capped-${n}`,
        body: JSON.stringify(body),
        attributes: { ApproximateReceiveCount: '1' },
      } as unknown as SQSRecord;
    });
    const started = Date.now();
    const batch: SQSEvent = { Records: records };
    const answer = await worker(batch, {
      getRemainingTimeInMillis: () => 60_000,
    } as unknown as Parameters<typeof worker>[1]);
    expect(answer.batchItemFailures).toHaveLength(MAX_IN_FLIGHT_PER_ENDPOINT);
    expect(receiver.at('/capped')).toHaveLength(MAX_IN_FLIGHT_PER_ENDPOINT);
    // One wave of timeouts, not two: the messages that waited found the endpoint paused.
    expect(Date.now() - started).toBeLessThan(2 * 15_000);
    const listed = await call('/v1/webhooks/get', { key, body: { webhook_id: hook.id } });
    expect((listed.body.webhooks as Record<string, unknown>[])[0]).toMatchObject({
      failing_since: expect.stringMatching(/^\d{4}-/),
    });
    await removeHook(hook.id);
  }, 60_000);
});
