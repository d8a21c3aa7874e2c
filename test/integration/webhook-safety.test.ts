import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { erasureMarkKey } from '../../shared/adapters/erasure-marks.js';
import { mergeOne, uniqueEmail } from './people.js';
import { KEYS, call, stackDb } from './stack.js';
import { LocalKeyWrapper } from '../../shared/adapters/key-wrappers.js';
import { DynamoWebhookStore } from '../../shared/adapters/webhook-store.js';
import { tableName } from '../../shared/resources.js';
import { newId } from '../../shared/domain/ids.js';
import {
  deliver,
  DISABLE_AFTER_MS,
  type DeliveryPorts,
} from '../../shared/domain/webhooks/delivery.js';
import {
  bindWebhookSecrets,
  newWebhookSecret,
  SECRET_SHOWN_ONCE,
  secretContext,
  unwrapSecret,
  type Webhook,
} from '../../shared/domain/webhooks/webhook.js';

const key = KEYS.hooks;

/** A webhook written straight to the store, in an instance of the test's own. */
async function storedWebhook(
  store: DynamoWebhookStore,
  instanceId: string,
  secrets: Webhook['secrets'],
  extra: Partial<Webhook> = {},
): Promise<Webhook> {
  const now = new Date().toISOString();
  const webhook: Webhook = {
    id: newId(),
    url: 'https://hooks.example.com/cdp',
    events: ['*'],
    enabled: true,
    created_at: now,
    updated_at: now,
    secrets,
    ...extra,
  };
  await store.create(instanceId, webhook);
  return webhook;
}

function webhookStore() {
  const { db } = stackDb();
  return { db, store: new DynamoWebhookStore(db, tableName('default', 'config')) };
}

describe('webhook secrets at rest', () => {
  it('keeps no secret in the answer a repeat with the same Idempotency-Key gets', async () => {
    const idempotencyKey = `secret-once-${newId()}`;
    const body = { url: 'http://127.0.0.1:15999/secret-once', events: ['person.created'] };
    const first = await call('/v1/webhooks/create', {
      key,
      body,
      headers: { 'Idempotency-Key': idempotencyKey },
    });
    expect(first.status).toBe(200);
    const secret = String(first.body.secret);
    expect(secret).toMatch(/^whsec_/);

    const repeat = await call('/v1/webhooks/create', {
      key,
      body,
      headers: { 'Idempotency-Key': idempotencyKey },
    });
    expect(repeat.status).toBe(200);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body.id).toBe(first.body.id);
    expect(repeat.body.secret).toBeUndefined();
    expect(repeat.body.secret_note).toBe(SECRET_SHOWN_ONCE);

    const rotateKey = `rotate-once-${newId()}`;
    const rotated = await call('/v1/webhooks/rotate-secret', {
      key,
      method: 'PUT',
      body: { webhook_id: first.body.id },
      headers: { 'Idempotency-Key': rotateKey },
    });
    expect(rotated.status).toBe(200);
    const newSecret = String(rotated.body.secret);
    const rotatedAgain = await call('/v1/webhooks/rotate-secret', {
      key,
      method: 'PUT',
      body: { webhook_id: first.body.id },
      headers: { 'Idempotency-Key': rotateKey },
    });
    expect(rotatedAgain.status).toBe(200);
    expect(rotatedAgain.body).toEqual({
      id: first.body.id,
      previous_secret_expires_at: rotated.body.previous_secret_expires_at,
      secret_note: SECRET_SHOWN_ONCE,
    });

    // Nowhere in the requests table (idempotency records) nor the config table in plain form.
    const { db } = stackDb();
    for (const table of ['requests', 'config'] as const) {
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await db.send(
          new ScanCommand({ TableName: tableName('default', table), ExclusiveStartKey }),
        );
        const text = JSON.stringify(page.Items ?? []);
        expect(text.includes(secret.slice(6))).toBe(false);
        expect(text.includes(newSecret.slice(6))).toBe(false);
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
    }
    const deleted = await call('/v1/webhooks/delete', {
      key,
      method: 'DELETE',
      body: { webhook_id: first.body.id },
    });
    expect(deleted.status).toBe(200);
  });
});

describe('wrapped webhook secrets are bound to their webhook', () => {
  const wrapper = new LocalKeyWrapper();

  it('unwraps a secret for its own instance and webhook only', async () => {
    const secret = newWebhookSecret();
    const wrapped = await wrapper.wrap(secret, secretContext('acme', 'w1'));
    await expect(wrapper.unwrap(wrapped, secretContext('acme', 'w1'))).resolves.toBe(secret);
    await expect(wrapper.unwrap(wrapped, secretContext('acme', 'w2'))).rejects.toThrow(/another/);
    await expect(wrapper.unwrap(wrapped, secretContext('other', 'w1'))).rejects.toThrow();
    await expect(wrapper.unwrap(wrapped)).rejects.toThrow();
  });

  it('a secret copied from one webhook to another does not sign the other one’s deliveries', async () => {
    const { store } = webhookStore();
    const instanceId = `bound-${newId()}`;
    const secret = newWebhookSecret();
    const first = await storedWebhook(store, instanceId, [
      { wrapped: await wrapper.wrap(secret, secretContext(instanceId, 'x')), bound: true },
    ]);
    // Its own context is another webhook's ID: as if its wrapped secret had been copied.
    const copied = (await store.get(instanceId, first.id)) as Webhook;
    await expect(
      unwrapSecret(wrapper, instanceId, copied.id, copied.secrets[0] as Webhook['secrets'][0]),
    ).rejects.toThrow();
  });

  it('admin apply binds the secrets wrapped before, which then sign as before', async () => {
    const { store } = webhookStore();
    const instanceId = `rebind-${newId()}`;
    const secret = newWebhookSecret();
    const legacy = await storedWebhook(store, instanceId, [
      { wrapped: await wrapper.wrap(secret) },
    ]);
    expect(await bindWebhookSecrets(instanceId, store, wrapper)).toBe(1);
    const rebound = (await store.get(instanceId, legacy.id)) as Webhook;
    const only = rebound.secrets[0] as Webhook['secrets'][0];
    expect(only.bound).toBe(true);
    await expect(wrapper.unwrap(only.wrapped, secretContext(instanceId, legacy.id))).resolves.toBe(
      secret,
    );
    await expect(wrapper.unwrap(only.wrapped)).rejects.toThrow();
    // A second run has nothing left to do.
    expect(await bindWebhookSecrets(instanceId, store, wrapper)).toBe(0);
  });
});

describe('disabling a failing webhook', () => {
  it('a late failed attempt does not disable a webhook its owner changed meanwhile', async () => {
    const { store } = webhookStore();
    const wrapper = new LocalKeyWrapper();
    const instanceId = `stale-${newId()}`;
    const since = new Date(Date.now() - DISABLE_AFTER_MS - 60_000).toISOString();
    const created = await storedWebhook(store, instanceId, [
      { wrapped: await wrapper.wrap(newWebhookSecret()) },
    ]);
    const failing = { failing_since: since, failures: 40, paused_until: Date.now() - 1 };
    expect(await store.recordFailure(instanceId, created.id, undefined, failing)).toBe(true);
    // The attempt reads the failing webhook...
    const stale = (await store.get(instanceId, created.id)) as Webhook;
    // ...its owner fixes the endpoint meanwhile (a new URL: a fresh start)...
    const fixed: Webhook = {
      ...stale,
      url: 'https://fixed.example.com/cdp',
      updated_at: new Date(Date.now() + 1).toISOString(),
    };
    delete fixed.health;
    await store.update(instanceId, fixed, stale);
    // ...and the attempt, failing, records it from what it read.
    await expect(
      failedAttempt(instanceId, created.id, {
        ...bind(store),
        get: () => Promise.resolve(structuredClone(stale)),
      }),
    ).rejects.toThrow(/failed/);
    const after = (await store.get(instanceId, created.id)) as Webhook;
    expect(after.enabled).toBe(true);
    expect(after.disabled_reason).toBeUndefined();
    expect(after.url).toBe('https://fixed.example.com/cdp');
    expect(after.health).toBeUndefined();
  });

  it('still disables one that has failed for 5 days, as read', async () => {
    const { store } = webhookStore();
    const wrapper = new LocalKeyWrapper();
    const instanceId = `failing-${newId()}`;
    const since = new Date(Date.now() - DISABLE_AFTER_MS - 60_000).toISOString();
    const created = await storedWebhook(store, instanceId, [
      { wrapped: await wrapper.wrap(newWebhookSecret()) },
    ]);
    await store.recordFailure(instanceId, created.id, undefined, {
      failing_since: since,
      failures: 40,
      paused_until: Date.now() - 1,
    });
    await expect(failedAttempt(instanceId, created.id, bind(store))).rejects.toThrow(/failed/);
    const after = (await store.get(instanceId, created.id)) as Webhook;
    expect(after.enabled).toBe(false);
    expect(after.disabled_reason).toMatch(/failed for 5 days/);
  });
});

/** One attempt of an event to a webhook whose endpoint answers 503. */
function failedAttempt(instanceId: string, webhookId: string, store: DeliveryPorts['store']) {
  return deliver(
    {
      instance_id: instanceId,
      webhook_id: webhookId,
      event: {
        id: `msg_${newId()}`,
        type: 'person.created',
        timestamp: new Date().toISOString(),
        data: {},
      },
    },
    5,
    {
      store,
      secrets: new LocalKeyWrapper(),
      addresses: { allowLoopback: false },
      resolve: () => Promise.resolve(['93.184.215.14']),
      transport: () => Promise.resolve({ status: 503, latencyMs: 2, body: 'down' }),
      log: { record: () => Promise.resolve() },
      replays: { delivered: () => Promise.resolve() },
    },
  );
}

/** The store's methods as functions of their own (a port is a plain object). */
function bind(store: DynamoWebhookStore): DeliveryPorts['store'] {
  return {
    get: store.get.bind(store),
    recordFailure: store.recordFailure.bind(store),
    recordSuccess: store.recordSuccess.bind(store),
    takeProbe: store.takeProbe.bind(store),
    disable: store.disable.bind(store),
    markSlow: store.markSlow.bind(store),
    clearSlow: store.clearSlow.bind(store),
  };
}

describe('an erased person’s events', () => {
  const arrivals: { at: number; body: string }[] = [];
  const refused = new Set<string>();
  let server: Server | undefined;
  let port = 0;
  beforeAll(async () => {
    const listening = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        arrivals.push({ at: Date.now(), body });
        // The activity's first attempt fails: its retry comes after the erasure has answered.
        const first = body.includes('"activity.created"') && !refused.has(body);
        if (first) refused.add(body);
        response.writeHead(first ? 503 : 200).end();
      });
    });
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    port = (listening.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) =>
      server?.close(() => {
        resolve();
      }),
    );
  });

  it('an activity racing the erasure is never delivered, replayed or kept once person/delete answered', async () => {
    const tracker = KEYS.tracker;
    const hook = await call('/v1/webhooks/create', {
      key: tracker,
      body: {
        url: `http://127.0.0.1:${port}/erased-race`,
        events: ['activity.created', 'person.deleted'],
      },
    });
    expect(hook.status).toBe(200);
    const email = uniqueEmail('raced');
    try {
      const personId = String(
        (await mergeOne(tracker, { fields: { 'str::email': email } })).person_id,
      );
      // The activity, then at once the archive and the erasure: its event is fanned out
      // from the activities stream around the time the person goes.
      const recorded = await call('/v1/activities/create', {
        key: tracker,
        body: { activities: [{ activity_id: 'act:cm:viewed', person_id: personId }] },
      });
      expect(recorded.status).toBe(200);
      await call('/v1/person/archive', {
        key: tracker,
        method: 'PUT',
        body: { inclusion_ids: [personId] },
      });
      const erased = await call('/v1/person/delete', {
        key: tracker,
        method: 'DELETE',
        body: { inclusion_ids: [personId] },
      });
      expect(erased.status).toBe(200);
      const answeredAt = Date.now();
      // The mark is there before the erasure answers.
      const { db } = stackDb();
      const mark = await db.send(
        new GetCommand({
          TableName: tableName('default', 'requests'),
          Key: erasureMarkKey('tracker', personId),
          ConsistentRead: true,
        }),
      );
      expect(mark.Item?.erased_at).toEqual(expect.any(String));
      // The streams catch up: person.deleted arrives, and the activity's retry is due (the
      // schedule's first wait, 5 s, after its refused first attempt).
      const deadline = Date.now() + 60_000;
      while (
        !arrivals.some((a) => a.body.includes('"person.deleted"') && a.body.includes(personId))
      ) {
        if (Date.now() > deadline) throw new Error('person.deleted did not arrive');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      // Nothing naming the person but person.deleted came after the erasure answered.
      const late = arrivals.filter(
        (a) =>
          a.at > answeredAt && a.body.includes(personId) && !a.body.includes('"person.deleted"'),
      );
      expect(late).toEqual([]);
      // Nothing kept of them but person.deleted (which names the ID only).
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      const kept: string[] = [];
      do {
        const page = await db.send(
          new ScanCommand({ TableName: tableName('default', 'deliveries'), ExclusiveStartKey }),
        );
        for (const item of page.Items ?? []) {
          const text = JSON.stringify(item);
          if (text.includes(personId) && !text.includes('person.deleted')) kept.push(text);
        }
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      expect(kept).toEqual([]);
    } finally {
      await call('/v1/webhooks/delete', {
        key: tracker,
        method: 'DELETE',
        body: { webhook_id: hook.body.id },
      });
    }
  }, 120_000);
});
