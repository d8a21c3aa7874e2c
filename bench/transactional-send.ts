/**
 * Transactional send benchmark: requests of 100 recipients, each with Liquid in subject and
 * body and one 100 KB attachment. Prints the time to accept each request (validated,
 * recipients merged, rendered, recorded and queued: the 202) and the email worker's drain
 * rate (emails per second from the first accept until every email is `sent`).
 * Against the local stack (`npm start` must be running; the demo instance and its key).
 *
 *   npm start            # in another terminal
 *   node --import tsx bench/transactional-send.ts [requests=5]
 *
 * The worker paces sends at SES_MAX_SEND_RATE (default 14/s, a new SES account's rate);
 * start the stack with SES_MAX_SEND_RATE=1000 to measure the worker itself.
 */
import { randomBytes } from 'node:crypto';
import { localApi } from './local-api.js';

const requests = Number(process.argv[2] ?? 5);
const { base, key } = localApi();

async function post(path: string, body: unknown) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

const attachment = randomBytes(75 * 1024).toString('base64'); // 100 KB once in base64
const run = `send-${Date.now().toString(36)}`;

function request(n: number) {
  return {
    merge_by: ['str::email'],
    asset: {
      from_email: 'bench@mail.demo.test',
      from_name: 'Bench',
      subject: 'Order {{ json.order-id }} for {{ people.first-name | default: "you" }}',
      email_name: 'bench',
      html_body:
        '<html><body><p>Hi {{ people.first-name }}, your order {{ json.order-id }} is on its way.</p><p><a href="https://shop.example/orders/{{ json.order-id }}">Track it</a> or <a href="{{ urls.unsubscribe }}">unsubscribe</a>.</p></body></html>',
      attachments: [
        { filename: 'invoice.pdf', content_type: 'application/pdf', content: attachment },
      ],
    },
    emails: Array.from({ length: 100 }, (_, i) => ({
      fields: { 'str::email': `${run}-${n}-${i}@bench.test`, 'str::first': `P${i}` },
      json_values: { order_id: `${n}-${i}` },
    })),
  };
}

const accepts: number[] = [];
const messageIds: string[] = [];
const started = performance.now();
for (let n = 0; n < requests; n += 1) {
  const t0 = performance.now();
  const answer = await post('/v1/transactional/send', request(n));
  accepts.push(performance.now() - t0);
  for (const entry of answer.emails as { message_id?: string }[]) {
    if (entry.message_id) messageIds.push(entry.message_id);
  }
}
const pending = new Set(messageIds);
while (pending.size > 0) {
  const ids = [...pending].slice(0, 100);
  const answer = await post('/v1/transactional/get', { message_ids: ids });
  for (const email of answer.emails as { message_id: string; status: string }[]) {
    if (email.status !== 'queued') pending.delete(email.message_id);
  }
  if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 250));
}
const drained = performance.now() - started;
const sorted = [...accepts].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
console.log(
  [
    `transactional send, ${requests} requests × 100 recipients, Liquid, one 100 KB attachment`,
    `  accept (202): median ${median.toFixed(0)} ms, min ${(sorted[0] ?? 0).toFixed(0)} ms, max ${(sorted.at(-1) ?? 0).toFixed(0)} ms per request`,
    `  drain: ${messageIds.length} emails sent in ${(drained / 1000).toFixed(1)} s = ${((messageIds.length / drained) * 1000).toFixed(1)} emails/s`,
  ].join('\n'),
);
