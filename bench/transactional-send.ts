/**
 * Figure 3, transactional send: requests of 100 recipients, each with Liquid in subject and
 * body and one 100 KB attachment. Recipients per second accepted (validated, merged,
 * rendered, recorded and queued: the 202), and rendered emails handed to SES per second
 * (from the first accept until every email is `sent`). The stack's email worker sends as
 * fast as SES lets it (`SES_MAX_SEND_RATE`, 1000 in the bench stack).
 *
 *   node --import tsx bench/transactional-send.ts     # a stack of its own
 */
import { randomBytes } from 'node:crypto';
import {
  fixed,
  percentile,
  perSecond,
  post,
  printFigure,
  scaled,
  type FigureResult,
} from './lib/report.js';
import { isMain, withBenchStack, type BenchStack } from './lib/stack.js';

const RECIPIENTS = 100;
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 180);

function request(run: string, n: number, attachment: string) {
  return {
    merge_by: ['str::email'],
    asset: {
      from_email: 'bench@mail.bench.test',
      from_name: 'Bench',
      subject: 'Order {{ json.order-id }} for {{ people.first-name | default: "you" }}',
      email_name: 'bench',
      html_body:
        '<html><body><p>Hi {{ people.first-name }}, your order {{ json.order-id }} is on its way.</p><p><a href="https://shop.example/orders/{{ json.order-id }}">Track it</a> or <a href="{{ urls.unsubscribe }}">unsubscribe</a>.</p></body></html>',
      attachments: [
        { filename: 'invoice.pdf', content_type: 'application/pdf', content: attachment },
      ],
    },
    emails: Array.from({ length: RECIPIENTS }, (_, i) => ({
      fields: { 'str::email': `${run}-${n}-${i}@send.bench`, 'str::first': `P${i}` },
      json_values: { order_id: `${n}-${i}` },
    })),
  };
}

export async function transactionalFigure(stack: BenchStack): Promise<FigureResult> {
  const requests = scaled(5);
  const attachment = randomBytes(75 * 1024).toString('base64'); // 100 KB once in base64
  const run = `send-${Date.now().toString(36)}`;
  const accepts: number[] = [];
  const messageIds: string[] = [];
  const started = performance.now();
  let acceptMs = 0;
  for (let n = 0; n < requests; n += 1) {
    const t0 = performance.now();
    const answer = await post(
      stack.base,
      stack.key,
      '/v1/transactional/send',
      request(run, n, attachment),
    );
    const ms = performance.now() - t0;
    accepts.push(ms);
    acceptMs += ms;
    for (const entry of answer.emails as { message_id?: string }[]) {
      if (entry.message_id) messageIds.push(entry.message_id);
    }
  }
  const pending = new Set(messageIds);
  const statuses: Record<string, number> = {};
  // A send that meets a fault waits for its message to come back (the queue's visibility
  // timeout): the drain is measured on what was sent until then, and says what was not.
  const deadline = Date.now() + DRAIN_SECONDS * 1000;
  while (pending.size > 0 && Date.now() < deadline) {
    const ids = [...pending].slice(0, 100);
    const answer = await post(stack.base, stack.key, '/v1/transactional/get', {
      message_ids: ids,
    });
    for (const email of answer.emails as { message_id: string; status: string }[]) {
      if (email.status !== 'queued') {
        pending.delete(email.message_id);
        statuses[email.status] = (statuses[email.status] ?? 0) + 1;
      }
    }
    if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const drainedMs = performance.now() - started;
  const sent = messageIds.length - pending.size;
  if (pending.size > 0) statuses['still queued or sending'] = pending.size;
  return {
    rows: [
      {
        figure: '3 transactional send',
        measure: `recipients accepted/s, sequential requests of ${RECIPIENTS} (p50 ${fixed(percentile(accepts, 50))} ms per request)`,
        value: `${fixed(perSecond(messageIds.length, acceptMs))}/s`,
      },
      {
        figure: '3 transactional send',
        measure: 'emails rendered and handed to SES/s (first accept to last sent)',
        value: `${fixed(perSecond(sent, drainedMs))}/s`,
      },
    ],
    notes: [
      `Transactional send: ${requests} requests × ${RECIPIENTS} new recipients, Liquid in subject and body (people and json values), a tracked link, the unsubscribe link, one 100 KB PDF attachment; final states ${JSON.stringify(statuses)}.`,
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Figure 3: transactional send', await withBenchStack(transactionalFigure));
}
