import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KEYS, call } from './stack.js';
import { mergeRepeating } from './people.js';

/**
 * One tenant's slow endpoint never slows another's deliveries: instance A subscribes an
 * endpoint that answers 200 after 14 seconds (never a failure, so it is never paused) and
 * queues 80 events for it; instance B's events to a prompt endpoint keep their latency.
 */
const SLOW_ANSWER_MS = 14_000;
const run = Date.now().toString(36);

class Receiver {
  private server?: Server;
  port = 0;
  readonly arrivals = new Map<string, number[]>();

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const path = request.url ?? '';
      request.resume();
      request.on('end', () => {
        const answer = () => {
          this.arrivals.set(path, [...(this.arrivals.get(path) ?? []), Date.now()]);
          response.writeHead(200).end('ok');
        };
        if (path.startsWith('/slow')) setTimeout(answer, SLOW_ANSWER_MS);
        else answer();
      });
    });
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.server?.close(() => {
        resolve();
      }),
    );
  }

  count(path: string): number {
    return this.arrivals.get(path)?.length ?? 0;
  }
}

const receiver = new Receiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

async function until(check: () => boolean, what: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return Date.now() - started;
}

async function webhook(key: string, path: string): Promise<string> {
  const response = await call('/v1/webhooks/create', {
    key,
    body: { url: `http://127.0.0.1:${receiver.port}${path}`, events: ['person.created'] },
  });
  expect(response.status).toBe(200);
  return String(response.body.id);
}

describe('delivery capacity is shared fairly', () => {
  it('keeps instance B’s delivery latency while instance A’s endpoint takes 14 s per answer', async () => {
    const slow = `/slow-${run}`;
    const fast = `/fast-${run}`;
    const hooks = [
      [KEYS.fairness, await webhook(KEYS.fairness, slow)],
      [KEYS.fairnessOther, await webhook(KEYS.fairnessOther, fast)],
    ] as const;
    try {
      // B's latency alone first: what the stack takes for one delivery (the stream, the
      // fan-out, the queue), here or on LocalStack.
      const deliverB = async (n: number) => {
        const before = receiver.count(fast);
        await mergeRepeating(KEYS.fairnessOther, {
          people: [{ fields: { 'str::email': `b-${n}-${run}@fairness.test` } }],
        });
        return until(() => receiver.count(fast) > before, `B's delivery ${n}`, 120_000);
      };
      const alone = await deliverB(-1);
      // A: 80 people, 80 deliveries to its slow endpoint.
      await mergeRepeating(KEYS.fairness, {
        people: Array.from({ length: 80 }, (_, n) => ({
          fields: { 'str::email': `a-${n}-${run}@fairness.test` },
        })),
      });
      // Its first answers: the endpoint is known slow from then on.
      await until(() => receiver.count(slow) > 0, 'the slow endpoint’s first answer', 120_000);
      // B: one person at a time, each delivered promptly although A's backlog is queued.
      const latencies: number[] = [];
      for (let n = 0; n < 5; n += 1) latencies.push(await deliverB(n));
      // A delivery alone takes 0.1-0.3 s here: B's stay about there (less than a first
      // attempt at another test's hanging endpoint can hold a batch), while A's backlog held
      // every worker before: B's first waited 28 s behind 40 of A's events.
      const bound = Math.max(8_000, 4 * alone);
      expect(latencies.filter((ms) => ms >= bound)).toEqual([]);
      // A's backlog is still being worked through, at its endpoint's own pace.
      expect(receiver.count(slow)).toBeLessThan(80);
    } finally {
      for (const [key, id] of hooks) {
        await call('/v1/webhooks/delete', { key, method: 'DELETE', body: { webhook_id: id } });
      }
    }
  }, 300_000);
});
