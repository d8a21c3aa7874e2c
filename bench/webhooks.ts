/**
 * Webhooks (docs/webhooks.md): figures beside references measured in the same run.
 *
 * 1. The lag from a merge to its delivery: a merge over HTTP, then the time until a receiver
 *    on this machine has the person's `person.created` (p50, p99), beside the merge's own
 *    round trip and the local stream poller's idle interval (200 ms), which bound it here.
 * 2. The delivery rate to one fast receiver: `BENCH_WEBHOOK_PEOPLE` people (default 300)
 *    created in merges of 100, deliveries per second from the first merge to the last
 *    delivery, beside the receiver's own rate (the same number of signed-size POSTs sent to
 *    it straight, 10 at a time).
 * 3. The same to ten receivers (ten webhooks, each its own server): deliveries per second
 *    of all ten, beside the ten receivers' own rate.
 *
 *   npm run bench:webhooks
 *   BENCH_PORT=15100 BENCH_DYNAMODB_PORT=15200 BENCH_SQS_PORT=15250 BENCH_SES_PORT=15205 \
 *     BENCH_WEBHOOK_RECEIVER_PORT=15300 npm run bench:webhooks
 */
import { createServer, type Server } from 'node:http';
import {
  burst,
  fixed,
  median,
  percentile,
  perSecond,
  post,
  printFigure,
  scaled,
} from './lib/report.js';
import type { FigureResult, Row } from './lib/report.js';
import { isMain, withBenchStack, type BenchStack } from './lib/stack.js';

const STREAM_IDLE_MS = 200;
const PEOPLE = Number(process.env.BENCH_WEBHOOK_PEOPLE ?? 300);
const RECEIVER_PORT = Number(process.env.BENCH_WEBHOOK_RECEIVER_PORT ?? 6400);

/** A receiver answering 200 at once; records when each person's creation arrived. */
interface Receiver {
  server: Server;
  url: string;
  arrivals: Map<string, number>;
  count: () => number;
}

async function startReceiver(port: number): Promise<Receiver> {
  const arrivals = new Map<string, number>();
  let count = 0;
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      count += 1;
      try {
        const event = JSON.parse(body) as { type?: string; data?: { person_id?: string } };
        const id = event.data?.person_id;
        if (event.type === 'person.created' && id && !arrivals.has(id)) {
          arrivals.set(id, performance.now());
        }
      } catch {
        // The receiver's own rate is measured with bodies that are not events.
      }
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${port}/hook`, arrivals, count: () => count };
}

const stopReceiver = (receiver: Receiver) =>
  new Promise<void>((resolve) => {
    receiver.server.closeAllConnections();
    receiver.server.close(() => {
      resolve();
    });
  });

async function until(check: () => boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function webhookTo(stack: BenchStack, url: string): Promise<string> {
  const created = await post(stack.base, stack.key, '/v1/webhooks/create', {
    url,
    events: ['person.created'],
  });
  return String(created.id);
}

async function removeWebhook(stack: BenchStack, id: string) {
  const response = await fetch(`${stack.base}/v1/webhooks/delete`, {
    method: 'DELETE',
    headers: { 'x-api-key': stack.key, 'content-type': 'application/json' },
    body: JSON.stringify({ webhook_id: id }),
  });
  if (!response.ok) throw new Error(`webhooks/delete: HTTP ${response.status}`);
}

async function lagRows(stack: BenchStack): Promise<Row[]> {
  console.error('bench: merge → delivery lag…');
  const receiver = await startReceiver(RECEIVER_PORT);
  const hook = await webhookTo(stack, receiver.url);
  const lags: number[] = [];
  const merges: number[] = [];
  const samples = scaled(40);
  try {
    for (let n = 0; n < samples; n += 1) {
      const started = performance.now();
      const answer = await post(stack.base, stack.key, '/v1/person/merge', {
        people: [{ fields: { 'str::email': `lag-${n}-${Date.now().toString(36)}@hooks.bench` } }],
      });
      merges.push(performance.now() - started);
      const [entry] = answer.people as { person_id: string }[];
      const id = entry?.person_id ?? '';
      await until(() => receiver.arrivals.has(id), 30_000, 'delivery');
      lags.push((receiver.arrivals.get(id) ?? 0) - started);
    }
  } finally {
    await removeWebhook(stack, hook);
    await stopReceiver(receiver);
  }
  const reference = `merge alone p50 ${fixed(median(merges))} ms; poller idle ${STREAM_IDLE_MS} ms`;
  return [50, 99].map((p) => ({
    figure: 'W1 delivery lag',
    measure: `merge → delivered, p${p} ms (${samples} merges)`,
    value: fixed(percentile(lags, p)),
    reference,
    ratio: percentile(lags, p) / (median(merges) + STREAM_IDLE_MS),
  }));
}

/** What the receivers take on their own: `count` POSTs of an event's size, 10 at a time. */
async function receiverRate(receivers: Receiver[], count: number): Promise<number> {
  const body = JSON.stringify({ type: 'bench', timestamp: '', data: { pad: 'x'.repeat(400) } });
  const ms = await burst(count, 10, async (n) => {
    const target = receivers[n % receivers.length];
    if (!target) return;
    const response = await fetch(target.url, { method: 'POST', body });
    await response.arrayBuffer();
  });
  return perSecond(count, ms);
}

async function rateRows(stack: BenchStack, endpoints: number): Promise<Row[]> {
  console.error(`bench: delivery rate to ${endpoints} receiver(s)…`);
  const receivers = await Promise.all(
    Array.from({ length: endpoints }, (_, k) => startReceiver(RECEIVER_PORT + 1 + k)),
  );
  const hooks = await Promise.all(receivers.map((receiver) => webhookTo(stack, receiver.url)));
  const people = scaled(PEOPLE);
  const expected = people * endpoints;
  const tag = Date.now().toString(36);
  try {
    const started = performance.now();
    for (let first = 0; first < people; first += 100) {
      const size = Math.min(100, people - first);
      await post(stack.base, stack.key, '/v1/person/merge', {
        people: Array.from({ length: size }, (_, k) => ({
          fields: { 'str::email': `rate-${endpoints}-${tag}-${first + k}@hooks.bench` },
        })),
      });
    }
    const total = () => receivers.reduce((sum, r) => sum + r.arrivals.size, 0);
    await until(() => total() >= expected, 600_000, 'every delivery');
    const rate = perSecond(expected, performance.now() - started);
    const own = await receiverRate(receivers, expected);
    return [
      {
        figure: `W${endpoints === 1 ? 2 : 3} delivery rate`,
        measure: `${people} people × ${endpoints} webhook(s): deliveries/s, merge to last delivery`,
        value: fixed(rate, 1),
        reference: `the receiver(s) alone: ${fixed(own, 1)} POSTs/s (10 at a time)`,
        ratio: rate / own,
      },
    ];
  } finally {
    for (const hook of hooks) await removeWebhook(stack, hook);
    await Promise.all(receivers.map(stopReceiver));
  }
}

export async function webhooksFigure(stack: BenchStack): Promise<FigureResult> {
  const rows = [...(await lagRows(stack)), ...(await rateRows(stack, 1))];
  rows.push(...(await rateRows(stack, 10)));
  return {
    rows,
    notes: [
      `Local stack: DynamoDB Local's stream read by the local stream poller (idle ${STREAM_IDLE_MS} ms between empty reads), the fan-out worker, fauxqs, and 4 pollers of the webhooks queue (batches of 10, each message of a batch at once), all in one Node process per region.`,
      'Each delivery signs with HMAC-SHA256 and re-resolves the address before posting; every event is one message of the webhooks queue.',
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Webhooks', await withBenchStack(webhooksFigure));
}
