import { describe, expect, it } from '@jest/globals';
import { Webhook as Verifier } from 'standardwebhooks';
import {
  deliver,
  DELIVERY_TIMEOUT_MS,
  DeliveryFailedError,
  DISABLE_AFTER_MS,
  LOOKUP_TIMEOUT_MS,
  SLOW_ANSWER_MS,
  SLOW_FOR_MS,
  MAX_ATTEMPTS,
  MAX_PAUSE_SECONDS,
  pauseSeconds,
  RETRY_SCHEDULE_SECONDS,
  retryDelaySeconds,
  type DeliveryMessage,
  type DeliveryPorts,
  type DeliveryRequest,
} from '../../../shared/domain/webhooks/delivery.js';
import {
  newWebhookSecret,
  type Webhook,
  type WebhookHealth,
} from '../../../shared/domain/webhooks/webhook.js';
import { retryAfterMs } from '../../../shared/lib/retry-later.js';
import type { DeliveryAttempt } from '../../../shared/domain/webhooks/attempts.js';

const NOW = Date.parse('2026-11-24T12:00:00Z');
const plain = {
  wrap: (s: string) => Promise.resolve(`w:${s}`),
  unwrap: (w: string) => Promise.resolve(w.slice(2)),
};

function webhookWith(
  secrets: { secret: string; expires_at?: string }[],
  extra: Partial<Webhook> = {},
): Webhook {
  return {
    id: '0123456789abcdef01234567',
    url: 'https://hooks.example.com/cdp',
    events: ['person.*'],
    enabled: true,
    created_at: '2026-11-01T00:00:00.000Z',
    updated_at: '2026-11-01T00:00:00.000Z',
    secrets: secrets.map(({ secret, expires_at }) => ({
      wrapped: `w:${secret}`,
      ...(expires_at ? { expires_at } : {}),
    })),
    ...extra,
  };
}

const message: DeliveryMessage = {
  instance_id: 'acme',
  webhook_id: '0123456789abcdef01234567',
  event: {
    id: 'msg_00112233445566778899aabbccddeeff',
    type: 'person.created',
    timestamp: '2026-11-24T11:59:58.000Z',
    data: { person_id: '66a1f0c2e4b0a1b2c3d4e5f6' },
  },
};

/** A store of one webhook, whose endpoint record the deliveries change as DynamoDB would. */
class OneWebhook {
  constructor(public webhook: Webhook | undefined) {}

  get = () => Promise.resolve(this.webhook && structuredClone(this.webhook));

  recordFailure = (
    _i: string,
    _w: string,
    seen: WebhookHealth | undefined,
    next: WebhookHealth,
  ) => {
    if (this.webhook && this.webhook.health?.failures === seen?.failures) {
      this.webhook.health = next;
      return Promise.resolve(true);
    }
    return Promise.resolve(false);
  };

  recordSuccess = () => {
    if (this.webhook) delete this.webhook.health;
    return Promise.resolve();
  };

  markSlow = (_i: string, _w: string, until: number) => {
    if (this.webhook && (this.webhook.slow_until ?? 0) < until) this.webhook.slow_until = until;
    return Promise.resolve();
  };

  clearSlow = () => {
    if (this.webhook) delete this.webhook.slow_until;
    return Promise.resolve();
  };

  takeProbe = (_i: string, _w: string, seen: number, until: number) => {
    const health = this.webhook?.health;
    if (health?.paused_until !== seen) return Promise.resolve(false);
    health.paused_until = until;
    return Promise.resolve(true);
  };

  disable = (
    _i: string,
    _w: string,
    seen: { health: WebhookHealth; updated_at: string },
    reason: string,
  ) => {
    const { webhook } = this;
    if (
      !webhook?.enabled ||
      webhook.updated_at !== seen.updated_at ||
      webhook.health?.failures !== seen.health.failures
    ) {
      return Promise.resolve(false);
    }
    Object.assign(webhook, { enabled: false, disabled_reason: reason });
    return Promise.resolve(true);
  };
}

function portsFor(
  webhook: Webhook | undefined,
  answer: number | Error = 200,
  addresses: string[] = ['93.184.215.14'],
  clock: { now: number } = { now: NOW },
) {
  const sent: DeliveryRequest[] = [];
  const store = new OneWebhook(webhook);
  const logged: DeliveryAttempt[] = [];
  const delivered: string[] = [];
  const ports: DeliveryPorts = {
    store,
    secrets: plain,
    addresses: { allowLoopback: false },
    resolve: () => Promise.resolve(addresses),
    transport: (request) => {
      sent.push(request);
      return answer instanceof Error
        ? Promise.reject(answer)
        : Promise.resolve({ status: answer, latencyMs: 3, body: `answer ${answer}` });
    },
    log: {
      record: (_instance, attempt) => {
        logged.push(attempt);
        return Promise.resolve();
      },
    },
    replays: {
      delivered: (_instance, replayId, _webhook, eventId) => {
        delivered.push(`${replayId}/${eventId}`);
        return Promise.resolve();
      },
    },
    now: () => clock.now,
  };
  return { ports, sent, store, logged, delivered };
}

describe('deliver', () => {
  it('posts the event signed per Standard Webhooks, verifiable with the reference library', async () => {
    const secret = newWebhookSecret();
    const { ports, sent } = portsFor(webhookWith([{ secret }]));
    await expect(deliver(message, 1, ports)).resolves.toMatchObject({
      kind: 'delivered',
      status: 200,
    });
    const [request] = sent;
    if (!request) throw new Error('nothing sent');
    expect(request.headers['webhook-id']).toBe(message.event.id);
    expect(request.headers['webhook-timestamp']).toBe(String(NOW / 1000));
    expect(JSON.parse(request.body)).toEqual({
      type: 'person.created',
      timestamp: message.event.timestamp,
      data: message.event.data,
    });
    const verifier = new Verifier(secret);
    // The library checks the timestamp against its clock: verify at the attempt's time.
    const realNow = Date.now;
    Date.now = () => NOW;
    try {
      expect(verifier.verify(request.body, request.headers)).toEqual(JSON.parse(request.body));
    } finally {
      Date.now = realNow;
    }
  });

  it('signs with the rotated-out secret during its grace, and not after', async () => {
    const current = newWebhookSecret();
    const old = newWebhookSecret();
    const inGrace = portsFor(
      webhookWith([{ secret: current }, { secret: old, expires_at: '2026-11-25T00:00:00.000Z' }]),
    );
    await deliver(message, 1, inGrace.ports);
    expect(inGrace.sent[0]?.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    const expired = portsFor(
      webhookWith([{ secret: current }, { secret: old, expires_at: '2026-11-24T11:00:00.000Z' }]),
    );
    await deliver(message, 1, expired.ports);
    expect(expired.sent[0]?.headers['webhook-signature']?.split(' ')).toHaveLength(1);
  });

  it('fails a non-2xx answer with the schedule wait, keeping the same webhook-id', async () => {
    const { ports, sent } = portsFor(webhookWith([{ secret: newWebhookSecret() }]), 500);
    const failure = await deliver(message, 3, ports).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DeliveryFailedError);
    expect(retryAfterMs(failure)).toBeGreaterThanOrEqual(120_000);
    expect(retryAfterMs(failure)).toBeLessThanOrEqual(144_000);
    expect(sent[0]?.headers['webhook-id']).toBe(message.event.id);
  });

  it('fails a redirect (never followed) and a transport error alike', async () => {
    const secret = newWebhookSecret();
    await expect(
      deliver(message, 1, portsFor(webhookWith([{ secret }]), 302).ports),
    ).rejects.toThrow('answered 302');
    await expect(
      deliver(
        message,
        1,
        portsFor(webhookWith([{ secret }]), new Error('no answer within 15000 ms')).ports,
      ),
    ).rejects.toThrow(DeliveryFailedError);
  });

  it('checks the address again at delivery: a name now resolving to a private address is not posted to', async () => {
    const { ports, sent } = portsFor(webhookWith([{ secret: newWebhookSecret() }]), 200, [
      '169.254.169.254',
    ]);
    await expect(deliver(message, 1, ports)).rejects.toThrow('its address is refused');
    expect(sent).toHaveLength(0);
  });

  it('drops events of a deleted, disabled or unsubscribed webhook without posting', async () => {
    const secret = newWebhookSecret();
    for (const webhook of [
      undefined,
      webhookWith([{ secret }], { enabled: false }),
      webhookWith([{ secret }], { events: ['organization.*'] }),
    ]) {
      const { ports, sent } = portsFor(webhook);
      await expect(deliver(message, 1, ports)).resolves.toMatchObject({ kind: 'dropped' });
      expect(sent).toHaveLength(0);
    }
  });
});

describe('the attempt log', () => {
  it('records a delivered attempt with its status, latency and the answer’s first KB', async () => {
    const { ports, logged, delivered } = portsFor(webhookWith([{ secret: newWebhookSecret() }]));
    await deliver(message, 1, ports);
    expect(logged).toEqual([
      {
        webhook_id: message.webhook_id,
        event_id: message.event.id,
        event_type: 'person.created',
        replay_id: null,
        attempt: 1,
        status: 'succeeded',
        status_code: 200,
        latency_ms: 3,
        response_body: 'answer 200',
        response_truncated: false,
        error: null,
        attempted_at: new Date(NOW).toISOString(),
      },
    ]);
    // Not a replay: no replay counts a delivery.
    expect(delivered).toEqual([]);
  });

  it('records a failed attempt: a non-2xx with its answer, a timeout with its wait', async () => {
    const answered = portsFor(webhookWith([{ secret: newWebhookSecret() }]), 500);
    await deliver(message, 4, answered.ports).catch(() => undefined);
    expect(answered.logged).toEqual([
      expect.objectContaining({
        attempt: 4,
        status: 'failed',
        status_code: 500,
        response_body: 'answer 500',
        error: 'it answered 500',
      }),
    ]);
    const clock = { now: NOW };
    const hanging = portsFor(webhookWith([{ secret: newWebhookSecret() }]), 200, undefined, clock);
    hanging.ports.transport = () => {
      clock.now += 15_000;
      return Promise.reject(new Error('no answer within 15000 ms'));
    };
    await deliver(message, 1, hanging.ports).catch(() => undefined);
    expect(hanging.logged).toEqual([
      expect.objectContaining({
        status: 'failed',
        status_code: null,
        latency_ms: 15_000,
        response_body: null,
        error: 'no answer within 15000 ms',
        attempted_at: new Date(NOW).toISOString(),
      }),
    ]);
  });

  it('records an address refused at delivery without a request or a latency', async () => {
    const { ports, logged } = portsFor(webhookWith([{ secret: newWebhookSecret() }]), 200, [
      '10.0.0.5',
    ]);
    await deliver(message, 2, ports).catch(() => undefined);
    expect(logged).toEqual([
      expect.objectContaining({
        status: 'failed',
        status_code: null,
        latency_ms: null,
        error: 'its address is refused',
      }),
    ]);
  });

  it('records nothing for an attempt skipped while paused, nor for a dropped event', async () => {
    const paused = portsFor(
      webhookWith([{ secret: newWebhookSecret() }], {
        health: {
          failing_since: '2026-11-24T11:00:00.000Z',
          failures: 2,
          paused_until: NOW + 60_000,
        },
      }),
    );
    await deliver(message, 3, paused.ports).catch(() => undefined);
    expect(paused.logged).toEqual([]);
    const dropped = portsFor(webhookWith([{ secret: newWebhookSecret() }], { enabled: false }));
    await deliver(message, 1, dropped.ports);
    expect(dropped.logged).toEqual([]);
  });

  it('counts a replayed event delivered for its replay, and names the replay in the record', async () => {
    const { ports, logged, delivered } = portsFor(webhookWith([{ secret: newWebhookSecret() }]));
    await deliver({ ...message, replay_id: 'replay-1' }, 1, ports);
    expect(logged[0]).toMatchObject({ replay_id: 'replay-1', status: 'succeeded' });
    expect(delivered).toEqual([`replay-1/${message.event.id}`]);
    // A failed replayed attempt counts nothing.
    const failed = portsFor(webhookWith([{ secret: newWebhookSecret() }]), 503);
    await deliver({ ...message, replay_id: 'replay-1' }, 1, failed.ports).catch(() => undefined);
    expect(failed.delivered).toEqual([]);
  });

  it('delivers even when the log or a replay’s count cannot be written (neither is part of the delivery)', async () => {
    const { ports, sent } = portsFor(webhookWith([{ secret: newWebhookSecret() }]));
    ports.log = { record: () => Promise.reject(new Error('throttled')) };
    ports.replays = { delivered: () => Promise.reject(new Error('throttled')) };
    await expect(deliver({ ...message, replay_id: 'replay-1' }, 1, ports)).resolves.toMatchObject({
      kind: 'delivered',
    });
    expect(sent).toHaveLength(1);
  });
});

describe("one endpoint's trouble stays its own", () => {
  const failing = (ports: DeliveryPorts) =>
    deliver(message, 1, ports).catch((error: unknown) => error);

  it('pauses an endpoint after a failed attempt: its messages fail at once, without a request', async () => {
    const clock = { now: NOW };
    const { ports, sent, store } = portsFor(
      webhookWith([{ secret: newWebhookSecret() }]),
      new Error('no answer within 15000 ms'),
      undefined,
      clock,
    );
    expect(await failing(ports)).toBeInstanceOf(DeliveryFailedError);
    expect(store.webhook?.health).toEqual({
      failing_since: new Date(NOW).toISOString(),
      failures: 1,
      paused_until: NOW + RETRY_SCHEDULE_SECONDS[0] * 1000,
      last_failure: 'no answer within 15000 ms',
    });
    // Ten more messages while paused: no request, each failed with the schedule's wait.
    clock.now = NOW + 1_000;
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => failing(ports)));
    expect(sent).toHaveLength(1);
    for (const outcome of outcomes) {
      expect(outcome).toBeInstanceOf(DeliveryFailedError);
      expect(String(outcome)).toContain('paused after 1 failed attempts');
      expect(retryAfterMs(outcome)).toBeGreaterThanOrEqual(RETRY_SCHEDULE_SECONDS[0] * 1000);
    }
    expect(store.webhook?.health?.failures).toBe(1);
  });

  it('lets one probe through when the pause ends, pauses longer when it fails, clears on a 2xx', async () => {
    const clock = { now: NOW };
    const hanging = portsFor(
      webhookWith([{ secret: newWebhookSecret() }]),
      new Error('no answer within 15000 ms'),
      undefined,
      clock,
    );
    await failing(hanging.ports);
    clock.now = NOW + 6_000;
    // Five messages come back at once: one goes, the others wait for it.
    await Promise.all(Array.from({ length: 5 }, () => failing(hanging.ports)));
    expect(hanging.sent).toHaveLength(2);
    expect(hanging.store.webhook?.health).toMatchObject({
      failures: 2,
      paused_until: clock.now + RETRY_SCHEDULE_SECONDS[1] * 1000,
    });
    // The endpoint is back: the next probe is delivered and the record goes.
    clock.now += RETRY_SCHEDULE_SECONDS[1] * 1000;
    const back = portsFor(hanging.store.webhook, 200, undefined, clock);
    await expect(deliver(message, 3, back.ports)).resolves.toMatchObject({ kind: 'delivered' });
    expect(back.store.webhook?.health).toBeUndefined();
    await expect(deliver(message, 1, back.ports)).resolves.toMatchObject({ kind: 'delivered' });
    expect(back.sent).toHaveLength(2);
  });

  it('pauses at most an hour, so that an endpoint that is back is found within it', () => {
    expect(pauseSeconds(1)).toBe(RETRY_SCHEDULE_SECONDS[0]);
    expect(pauseSeconds(4)).toBe(RETRY_SCHEDULE_SECONDS[3]);
    expect(pauseSeconds(40)).toBe(MAX_PAUSE_SECONDS);
    expect(MAX_PAUSE_SECONDS).toBe(3_600);
  });

  it('disables a webhook whose deliveries failed for 5 days, saying why', async () => {
    const since = new Date(NOW - DISABLE_AFTER_MS).toISOString();
    const { ports, store } = portsFor(
      webhookWith([{ secret: newWebhookSecret() }], {
        health: { failing_since: since, failures: 30, paused_until: NOW - 1 },
      }),
      503,
    );
    expect(await failing(ports)).toBeInstanceOf(DeliveryFailedError);
    expect(store.webhook).toMatchObject({
      enabled: false,
      disabled_reason: `its deliveries failed for 5 days (since ${since}; the last: it answered 503)`,
    });
    // Its next messages are dropped.
    await expect(deliver(message, 1, ports)).resolves.toMatchObject({ kind: 'dropped' });
  });

  it('does not disable one failing for less than 5 days', async () => {
    const since = new Date(NOW - DISABLE_AFTER_MS + 60_000).toISOString();
    const { ports, store } = portsFor(
      webhookWith([{ secret: newWebhookSecret() }], {
        health: { failing_since: since, failures: 30, paused_until: NOW - 1 },
      }),
      503,
    );
    await failing(ports);
    expect(store.webhook).toMatchObject({ enabled: true, health: { failing_since: since } });
  });
});

describe('fair shares: slow endpoints apart', () => {
  const slowAnswer = (latencyMs: number) => ({ status: 200, latencyMs, body: 'ok' });

  it('marks an endpoint slow when it takes SLOW_ANSWER_MS to answer, and prompt again when it does not', async () => {
    const { ports, store } = portsFor(webhookWith([{ secret: newWebhookSecret() }]));
    ports.transport = () => Promise.resolve(slowAnswer(SLOW_ANSWER_MS + 1_000));
    await deliver(message, 1, ports);
    expect(store.webhook?.slow_until).toBe(NOW + SLOW_FOR_MS);
    ports.transport = () => Promise.resolve(slowAnswer(40));
    await deliver(message, 1, ports);
    expect(store.webhook?.slow_until).toBeUndefined();
  });

  it('moves a slow endpoint’s message to the slow queue without an attempt, from the prompt queue only', async () => {
    const webhook = webhookWith([{ secret: newWebhookSecret() }], { slow_until: NOW + 60_000 });
    const { ports, sent, logged } = portsFor(webhook);
    const moved: DeliveryMessage[] = [];
    const prompt = {
      ...ports,
      divert: (queued: DeliveryMessage) => {
        moved.push(queued);
        return Promise.resolve();
      },
    };
    await expect(deliver(message, 2, prompt)).resolves.toEqual({ kind: 'diverted' });
    expect(moved).toEqual([message]);
    expect(sent).toEqual([]);
    expect(logged).toEqual([]);
    // The slow queue's workers (no divert) make the attempt.
    await expect(deliver(message, 2, ports)).resolves.toMatchObject({ kind: 'delivered' });
    expect(sent).toHaveLength(1);
  });

  it('counts the name’s lookup in the attempt’s time: a resolver that never answers costs LOOKUP_TIMEOUT_MS', async () => {
    const { ports, sent, logged } = portsFor(webhookWith([{ secret: newWebhookSecret() }]));
    ports.resolve = () => new Promise<string[]>(() => undefined);
    const started = Date.now();
    await expect(deliver(message, 1, ports)).rejects.toBeInstanceOf(DeliveryFailedError);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(LOOKUP_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(LOOKUP_TIMEOUT_MS + 2_000);
    expect(sent).toEqual([]);
    expect(logged[0]).toMatchObject({ status: 'failed', error: 'its address is refused' });
  }, 15_000);

  it('gives the transport what is left of DELIVERY_TIMEOUT_MS after the lookup', async () => {
    const clock = { now: NOW };
    const { ports, sent } = portsFor(
      webhookWith([{ secret: newWebhookSecret() }]),
      200,
      undefined,
      clock,
    );
    ports.resolve = () => {
      clock.now += 4_000;
      return Promise.resolve(['93.184.215.14']);
    };
    await deliver(message, 1, ports);
    expect(sent[0]?.timeoutMs).toBe(DELIVERY_TIMEOUT_MS - 4_000);
  });
});

describe('the retry schedule', () => {
  it('retries for at least 3 days, each wait at most 20% over its base and at most 12 hours', () => {
    const total = RETRY_SCHEDULE_SECONDS.reduce((sum, wait) => sum + wait, 0);
    expect(total).toBeGreaterThanOrEqual(3 * 86_400);
    expect(MAX_ATTEMPTS).toBe(RETRY_SCHEDULE_SECONDS.length + 1);
    RETRY_SCHEDULE_SECONDS.forEach((base, index) => {
      expect(retryDelaySeconds(index + 1, () => 0)).toBe(base);
      const high = retryDelaySeconds(index + 1, () => 0.999);
      expect(high).toBeLessThanOrEqual(Math.min(43_200, Math.round(base * 1.2)));
      expect(high).toBeGreaterThanOrEqual(base);
    });
  });
});
