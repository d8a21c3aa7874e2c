import { describe, expect, it } from '@jest/globals';
import { ConflictError, NotFoundError, ValidationError } from '../../../shared/domain/errors.js';
import type { QueuedDelivery, WebhookEvent } from '../../../shared/domain/webhooks/delivery.js';
import {
  EVENT_SHARDS,
  REPLAY_PAGE,
  ReplayRequest,
  ReplayRunningError,
  abandonReplay,
  getReplay,
  replay,
  type ReplayPorts,
  runReplay,
  type KeptEvent,
  type KeptEvents,
  type ReplayJob,
  type ReplayMessage,
  type ReplayPosition,
  type ReplayStore,
  type ReplayWorkerPorts,
} from '../../../shared/domain/webhooks/replay.js';
import type { Webhook } from '../../../shared/domain/webhooks/webhook.js';
import { parseWith } from '../../../shared/domain/validation.js';
import { testTenant } from '../fixtures.js';

const NOW = Date.parse('2026-11-24T12:00:00.000Z');
const tenant = testTenant();
const INSTANCE = tenant.instance.id;
const WEBHOOK = '0123456789abcdef01234567';

const webhook = (extra: Partial<Webhook> = {}): Webhook => ({
  id: WEBHOOK,
  url: 'https://hooks.example.com/cdp',
  events: ['person.*'],
  enabled: true,
  created_at: '2026-11-01T00:00:00.000Z',
  updated_at: '2026-11-01T00:00:00.000Z',
  secrets: [{ wrapped: 'w' }],
  ...extra,
});

const eventAt = (n: number, type = 'person.created'): WebhookEvent => ({
  id: `msg_${n.toString(16).padStart(32, '0')}`,
  type,
  timestamp: new Date(NOW - 3_600_000 + n * 1000).toISOString(),
  data: { person_id: String(n) },
});

/** Kept events of one webhook, spread over the shards as the store spreads them. */
class Kept implements KeptEvents {
  constructor(readonly events: WebhookEvent[]) {}

  shardOf = (event: WebhookEvent) => Number.parseInt(event.id.slice(-2), 16) % EVENT_SHARDS;

  find(_instance: string, webhookId: string, eventId: string) {
    const event = this.events.find((candidate) => candidate.id === eventId);
    return Promise.resolve(
      webhookId === WEBHOOK && event ? { id: event.id, type: event.type, event } : undefined,
    );
  }

  page(
    _instance: string,
    _webhook: string,
    query: { since: string; until: string; shard: number; after: string | null; limit: number },
  ) {
    const keyOf = (event: WebhookEvent) => `${event.timestamp}#${event.id}`;
    const inRange = this.events
      .filter((event) => this.shardOf(event) === query.shard)
      .filter((event) => event.timestamp >= query.since && event.timestamp < query.until)
      .filter((event) => query.after === null || keyOf(event) > query.after)
      .sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    const page = inRange.slice(0, query.limit);
    const last = page.at(-1);
    return Promise.resolve({
      events: page.map((event): KeptEvent => ({ id: event.id, type: event.type, event })),
      last: last ? keyOf(last) : null,
      hasMore: inRange.length > query.limit,
    });
  }
}

/** Replays in memory, with the conditions the DynamoDB store writes with. */
class Jobs implements ReplayStore {
  readonly jobs = new Map<string, ReplayJob>();
  holder: string | undefined;
  /** Fails the next `advance` once (a worker that stops after queueing its page). */
  failNextAdvance = false;

  create(_instance: string, job: ReplayJob, exclusive: boolean) {
    if (exclusive && this.holder !== undefined) {
      return Promise.reject(new ReplayRunningError(job.webhook_id, this.holder));
    }
    if (exclusive) this.holder = job.id;
    this.jobs.set(job.id, structuredClone(job));
    return Promise.resolve();
  }

  get(_instance: string, id: string) {
    const job = this.jobs.get(id);
    return Promise.resolve(job && structuredClone(job));
  }

  advance(
    _instance: string,
    job: ReplayJob,
    step: { to: ReplayPosition; found: number; queued: number; skipped: number; done: boolean },
  ) {
    if (this.failNextAdvance) {
      this.failNextAdvance = false;
      return Promise.reject(new Error('the worker stopped'));
    }
    const stored = this.jobs.get(job.id);
    if (
      !stored ||
      !['queued', 'running'].includes(stored.status) ||
      JSON.stringify(stored.position) !== JSON.stringify(job.position)
    ) {
      return Promise.resolve(false);
    }
    stored.position = step.to;
    stored.events_found += step.found;
    stored.events_queued += step.queued;
    stored.events_skipped += step.skipped;
    stored.status = step.done ? 'complete' : 'running';
    if (step.done && this.holder === job.id) this.holder = undefined;
    return Promise.resolve(true);
  }

  fail(_instance: string, job: ReplayJob, error: string) {
    const stored = this.jobs.get(job.id);
    if (stored) Object.assign(stored, { status: 'failed', error });
    if (this.holder === job.id) this.holder = undefined;
    return Promise.resolve();
  }

  remove(_instance: string, job: ReplayJob) {
    this.jobs.delete(job.id);
    if (this.holder === job.id) this.holder = undefined;
    return Promise.resolve();
  }
}

function portsFor(events: WebhookEvent[], hook: Webhook = webhook()) {
  const queued: QueuedDelivery[] = [];
  const continued: ReplayMessage[] = [];
  const slept: number[] = [];
  const clock = { now: NOW };
  const jobs = new Jobs();
  const ports: ReplayWorkerPorts = {
    webhooks: { get: (_i, id) => Promise.resolve(id === hook.id ? hook : undefined) },
    events: new Kept(events),
    jobs,
    deliveries: {
      queue: (messages) => {
        queued.push(...messages);
        return Promise.resolve();
      },
    },
    replays: {
      send: (message) => {
        continued.push(message);
        return Promise.resolve();
      },
    },
    now: () => clock.now,
    sliceMs: 20_000,
    eventsPerSecond: 100,
    sleep: (ms) => {
      slept.push(ms);
      clock.now += ms;
      return Promise.resolve();
    },
  };
  return { ports, queued, continued, slept, jobs, clock };
}

/** Starts a replay through the endpoint's entry: it must start one. */
async function replayed(body: ReplayRequest, of: typeof tenant, ports: ReplayPorts) {
  const answer = await replay(body, of, ports);
  expect(answer.started).toBe(true);
  return answer.replay;
}

const request = (body: Record<string, unknown>) =>
  parseWith(ReplayRequest, { webhook_id: WEBHOOK, ...body }, 'request body');

describe('replay requests', () => {
  it('takes one event or a time since, not both, not neither, and until only with since', () => {
    expect(() => request({})).toThrow(/event_id: expected either event_id/);
    expect(() => request({ event_id: eventAt(1).id, since: '2026-11-24T00:00:00Z' })).toThrow(
      /since: expected either/,
    );
    expect(() => request({ event_id: eventAt(1).id, until: '2026-11-24T00:00:00Z' })).toThrow(
      /until: only with since/,
    );
    expect(() => request({ event_id: 'msg_1' })).toThrow(/event_id: expected an event ID/);
    expect(() => request({ since: 'yesterday' })).toThrow(/since: expected an ISO 8601 time/);
    expect(request({ since: '2026-11-24T10:00:00+02:00' }).since).toBe('2026-11-24T08:00:00.000Z');
    expect(() => request({ webhook_id: undefined, since: '2026-11-24T10:00:00Z' })).toThrow(
      /webhook_id: expected a webhook ID/,
    );
    expect(() => request({ replay_id: '0123456789abcdef01234567' })).toThrow(
      /webhook_id: not with replay_id/,
    );
  });

  it('refuses, before anything is written, a range older than what is kept, in the future or empty', async () => {
    const { ports, jobs, continued } = portsFor([]);
    for (const [body, field] of [
      [{ since: '2026-10-20T00:00:00Z' }, 'since'],
      [{ since: '2026-11-24T10:00:00Z', until: '2026-11-25T00:00:00Z' }, 'until'],
      [{ since: '2026-11-24T10:00:00Z', until: '2026-11-24T09:00:00Z' }, 'until'],
      [{ since: '2026-11-24T13:00:00Z' }, 'since'],
    ] as const) {
      const error = await replayed(request(body), tenant, ports).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(new RegExp(`^${field}: `));
    }
    expect(jobs.jobs.size).toBe(0);
    expect(continued).toEqual([]);
  });

  it('answers an unknown webhook, or another instance’s, as not found, and refuses a disabled one', async () => {
    const { ports } = portsFor([eventAt(1)]);
    await expect(
      replayed(
        request({ webhook_id: 'ffffffffffffffffffffffff', event_id: eventAt(1).id }),
        tenant,
        ports,
      ),
    ).rejects.toThrow(NotFoundError);
    const disabled = portsFor([eventAt(1)], webhook({ enabled: false }));
    await expect(
      replayed(request({ event_id: eventAt(1).id }), tenant, disabled.ports),
    ).rejects.toThrow(/^webhook_id: .* is disabled/);
  });
});

describe('replaying one event', () => {
  it('queues it at once with its own ID, for a replay that is complete', async () => {
    const event = eventAt(7);
    const { ports, queued, jobs } = portsFor([event]);
    const answer = await replayed(request({ event_id: event.id }), tenant, ports);
    expect(answer).toMatchObject({
      webhook_id: WEBHOOK,
      event_id: event.id,
      status: 'complete',
      events_found: 1,
      events_queued: 1,
    });
    expect(queued).toEqual([
      { instance_id: INSTANCE, webhook_id: WEBHOOK, replay_id: answer.replay_id, event },
    ]);
    await expect(getReplay(answer.replay_id, tenant, jobs)).resolves.toEqual(answer);
  });

  it('answers an event the webhook never had as not found, one of a type no longer subscribed as bad input', async () => {
    const { ports, queued } = portsFor([eventAt(1, 'organization.created')]);
    await expect(replayed(request({ event_id: eventAt(2).id }), tenant, ports)).rejects.toThrow(
      /^event_id: no event/,
    );
    await expect(replayed(request({ event_id: eventAt(1).id }), tenant, ports)).rejects.toThrow(
      /^event_id: .*no longer subscribes to organization.created/,
    );
    expect(queued).toEqual([]);
  });

  it('takes the replay back when its event cannot be queued', async () => {
    const event = eventAt(3);
    const { ports, jobs } = portsFor([event]);
    ports.deliveries = { queue: () => Promise.reject(new Error('queue unavailable')) };
    await expect(replayed(request({ event_id: event.id }), tenant, ports)).rejects.toThrow(
      'queue unavailable',
    );
    expect(jobs.jobs.size).toBe(0);
  });
});

describe('replaying since a time', () => {
  const many = (count: number) => Array.from({ length: count }, (_, n) => eventAt(n + 1));

  async function start(events: WebhookEvent[], hook?: Webhook) {
    const setup = portsFor(events, hook);
    const answer = await replayed(
      request({ since: new Date(NOW - 7_200_000).toISOString() }),
      tenant,
      setup.ports,
    );
    const [message] = setup.continued.splice(0);
    if (!message) throw new Error('no job queued');
    return { ...setup, answer, message };
  }

  it('answers a queued job at once, then queues every event of the range, each once, and completes', async () => {
    const events = [...many(250), eventAt(900, 'organization.created')];
    const { answer, message, ports, queued, jobs } = await start(events);
    expect(answer).toMatchObject({ status: 'queued', events_found: 0, events_queued: 0 });
    await runReplay(message, ports);
    const job = await getReplay(answer.replay_id, tenant, jobs);
    expect(job).toMatchObject({
      status: 'complete',
      events_found: 251,
      events_queued: 250,
      events_skipped: 1,
    });
    const ids = queued.map((delivery) => delivery.event?.id);
    expect(new Set(ids).size).toBe(250);
    expect(ids).not.toContain(eventAt(900).id);
    expect(queued.every((delivery) => delivery.replay_id === answer.replay_id)).toBe(true);
  });

  it('paces itself, and queues the rest of a long replay as a new message after its slice', async () => {
    const { message, ports, queued, continued, slept } = await start(many(2_000));
    ports.eventsPerSecond = 50;
    ports.sliceMs = 10_000;
    await runReplay(message, ports);
    // 50 a second for 10 s: the slice ends near 500 events, and carries on in a message.
    expect(queued.length).toBeGreaterThanOrEqual(500);
    expect(queued.length).toBeLessThanOrEqual(500 + REPLAY_PAGE);
    expect(continued).toEqual([message]);
    expect(slept.every((ms) => ms > 0)).toBe(true);
    // The next messages carry on to the end.
    while (continued.length > 0) {
      continued.splice(0);
      await runReplay(message, ports);
    }
    expect(new Set(queued.map((delivery) => delivery.event?.id)).size).toBe(2_000);
    expect(queued).toHaveLength(2_000);
  });

  it('resumes from its position after a worker stopped mid-job: one page at most is queued twice', async () => {
    const { answer, message, ports, queued, jobs } = await start(many(600));
    jobs.failNextAdvance = true;
    await expect(runReplay(message, ports)).rejects.toThrow('the worker stopped');
    const first = queued.length;
    expect(first).toBeGreaterThan(0);
    // SQS delivers the message again: the job carries on from where it was recorded.
    await runReplay(message, ports);
    const job = await getReplay(answer.replay_id, tenant, jobs);
    expect(job).toMatchObject({ status: 'complete', events_found: 600, events_queued: 600 });
    expect(new Set(queued.map((delivery) => delivery.event?.id)).size).toBe(600);
    expect(queued.length - 600).toBe(first);
    expect(first).toBeLessThanOrEqual(REPLAY_PAGE);
  });

  it('counts each event once when its message is handled twice at the same time', async () => {
    const { answer, message, ports, queued, jobs } = await start(many(400));
    await Promise.all([runReplay(message, ports), runReplay(message, ports)]);
    const job = await getReplay(answer.replay_id, tenant, jobs);
    expect(job).toMatchObject({ status: 'complete', events_found: 400, events_queued: 400 });
    expect(new Set(queued.map((delivery) => delivery.event?.id)).size).toBe(400);
  });

  it('holds its webhook while it runs: a second replay of it is a conflict until it completes', async () => {
    const { message, ports } = await start(many(10));
    const second = await replayed(
      request({ since: new Date(NOW - 60_000).toISOString() }),
      tenant,
      ports,
    ).catch((error: unknown) => error);
    expect(second).toBeInstanceOf(ConflictError);
    expect(String(second)).toMatch(/^.*webhook_id: a replay of webhook .* is running/);
    await runReplay(message, ports);
    await expect(
      replayed(request({ since: new Date(NOW - 60_000).toISOString() }), tenant, ports),
    ).resolves.toMatchObject({ status: 'queued' });
  });

  it('stops, saying why, when its webhook is disabled or deleted meanwhile, or its worker gives up', async () => {
    const hook = webhook();
    const { answer, message, ports, jobs, queued } = await start(many(10), hook);
    hook.enabled = false;
    await runReplay(message, ports);
    expect(queued).toEqual([]);
    await expect(getReplay(answer.replay_id, tenant, jobs)).resolves.toMatchObject({
      status: 'failed',
      error: 'the webhook was disabled',
    });
    const other = await start(many(10));
    await abandonReplay(other.message, 'the replay stopped after repeated failures', other.ports);
    await expect(getReplay(other.answer.replay_id, tenant, other.jobs)).resolves.toMatchObject({
      status: 'failed',
    });
    expect(other.jobs.holder).toBeUndefined();
  });
});
