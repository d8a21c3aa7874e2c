/**
 * Asynchronous ingestion benchmark: a burst of 10,000 activities (100 requests of 100, 8 in
 * flight) sent with `async: true`: how fast they are accepted (requests/s, records/s), and
 * how fast the ingest worker drains them (records/s from the first accept until the last
 * request is done); then the same burst sent synchronously, on the same run, for comparison.
 * Against the local stack (`npm start` must be running; the demo instance and its key).
 *
 *   npm start            # in another terminal
 *   node --import tsx bench/async-activities.ts [requests=100] [in-flight=8]
 */
import { localApi } from './local-api.js';

const requests = Number(process.argv[2] ?? 100);
const inFlight = Number(process.argv[3] ?? 8);
const perRequest = 100;
const { base, key } = localApi();

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

function activities(run: string, request: number) {
  return Array.from({ length: perRequest }, (_, i) => ({
    activity_id: 'act:cm:purchased',
    fields: { 'str::email': `${run}-${request}-${i % 20}@bench.test` },
    attributes: { 'str:cm:item': `Item ${i}`, 'int:cm:price': 1000 + i },
  }));
}

/** Runs `work` for 0..count-1 with `inFlight` at a time; the elapsed milliseconds. */
async function burst(count: number, work: (n: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      for (let n = next++; n < count; n = next++) await work(n);
    }),
  );
  return performance.now() - started;
}

const records = requests * perRequest;
const run = `bench-${Date.now().toString(36)}`;

const ids: string[] = [];
const startedAsync = performance.now();
const acceptMs = await burst(requests, async (n) => {
  const answer = await post('/v1/activities/create', {
    async: true,
    activities: activities(`${run}-a`, n),
  });
  ids.push(String(answer.request_id));
});
let pending = [...ids];
while (pending.length > 0) {
  const states = await Promise.all(
    pending.map(async (id) => ({
      id,
      status: (await post('/v1/async/get', { request_id: id })).status,
    })),
  );
  const failed = states.filter((s) => s.status === 'failed');
  if (failed.length > 0) throw new Error(`failed: ${failed.map((s) => s.id).join(', ')}`);
  pending = states.filter((s) => s.status !== 'done').map((s) => s.id);
  if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 250));
}
const drainMs = performance.now() - startedAsync;

const syncMs = await burst(requests, async (n) => {
  await post('/v1/activities/create', { activities: activities(`${run}-s`, n) });
});

const rate = (count: number, ms: number) => (count / (ms / 1000)).toFixed(0).padStart(8);
console.log(`${records} activities, ${requests} requests of ${perRequest}, ${inFlight} in flight:`);
console.log('                      requests/s  records/s   seconds');
console.log(
  `  async accept        ${rate(requests, acceptMs)}   ${rate(records, acceptMs)}   ${(acceptMs / 1000).toFixed(1).padStart(7)}`,
);
console.log(
  `  async drain                     ${rate(records, drainMs)}   ${(drainMs / 1000).toFixed(1).padStart(7)}  (first accept to last done)`,
);
console.log(
  `  sync                ${rate(requests, syncMs)}   ${rate(records, syncMs)}   ${(syncMs / 1000).toFixed(1).padStart(7)}`,
);
