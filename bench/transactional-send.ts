/**
 * Figure 3, transactional send: requests of 100 recipients, each with Liquid in subject and
 * body and one 100 KB attachment. Recipients per second accepted (validated, merged,
 * rendered, recorded and queued: the 202), and rendered emails handed to SES per second
 * (each request's first email sent to its last; the next request waits for them).
 * The stack's email worker sends as fast as SES lets it (`SES_MAX_SEND_RATE`, 1000 in the
 * bench stack).
 *
 *   node --import tsx bench/transactional-send.ts     # a stack of its own
 */
import { randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { createS3Client, createSqsClient } from '../shared/adapters/aws-clients.js';
import { batchGet, batchWrite } from '../shared/adapters/dynamo-helpers.js';
import { messageKey } from '../shared/adapters/email-store.js';
import { referencePuts } from '../shared/adapters/person-references.js';
import { newId } from '../shared/domain/ids.js';
import { runBounded } from '../shared/lib/bounded.js';
import { localBucketName, tableName } from '../shared/resources.js';
import { WORKERS } from '../shared/workers.js';
import { createPersonDirectly } from './person-merge.js';
import {
  burst,
  fixed,
  percentile,
  perSecond,
  post,
  printFigure,
  scaled,
  type FigureResult,
} from './lib/report.js';
import {
  BENCH_INSTANCE,
  benchDb,
  isMain,
  settle,
  withBenchStack,
  withQueueWorkersHeld,
  withStackCpu,
  type BenchStack,
} from './lib/stack.js';

const RECIPIENTS = 100;
/** Target: the worker hands emails to SES at least at half the stand-in's own rate. */
const SEND_TARGET = 0.5;
/** Target: a request is accepted at least at half the rate of the store work it needs. */
const ACCEPT_TARGET = 0.5;
/** The email worker's sends in flight at most: its batches at once × the messages of one. */
const emailWorker = WORKERS.find((worker) => worker.queue === 'email');
const SEND_CONCURRENCY = (emailWorker?.maxConcurrency ?? 1) * (emailWorker?.batchSize ?? 1);

interface SentSummary {
  messageId: string;
  at: string;
  configurationSet?: string;
  tags: Record<string, string>;
  from: string;
  destinations: string[];
}

/** What the SES stand-in took of this run's emails (the gateway's own record of each send). */
async function sentOf(stack: BenchStack, instanceId: string, messageIds: Set<string>) {
  const response = await fetch(`${stack.sesEndpoint}/messages`);
  const { messages } = (await response.json()) as { messages: SentSummary[] };
  return messages.filter((m) => {
    const tag = m.tags.cdp_message ?? '';
    return tag.startsWith(`${instanceId}_`) && messageIds.has(tag.slice(instanceId.length + 1));
  });
}

/**
 * The ceiling: the raw messages the worker sent (byte for byte, read back from the stand-in),
 * sent straight to the same stand-in with the same configuration set (so it publishes the
 * same events) at the worker's concurrency; tagged as probes, so that their events move
 * nothing but the events watermark. The milliseconds they took.
 */
async function sesCeiling(stack: BenchStack, sent: SentSummary[]): Promise<number> {
  const raws = await Promise.all(
    sent.map(async (m) => {
      const response = await fetch(`${stack.sesEndpoint}/raw/${encodeURIComponent(m.messageId)}`);
      return Buffer.from(await response.arrayBuffer());
    }),
  );
  const ses = new SESv2Client({ endpoint: stack.sesEndpoint, maxAttempts: 1 });
  const ms = await burst(sent.length, SEND_CONCURRENCY, async (n) => {
    const m = sent[n] as SentSummary;
    await ses.send(
      new SendEmailCommand({
        FromEmailAddress: m.from,
        Destination: { ToAddresses: m.destinations },
        Content: { Raw: { Data: raws[n] } },
        EmailTags: [{ Name: 'cdp_probe', Value: String(Date.now()) }],
        ...(m.configurationSet ? { ConfigurationSetName: m.configurationSet } : {}),
      }),
    );
  });
  ses.destroy();
  return ms;
}
/**
 * The ceiling of an accept: the store work one request of 100 new recipients needs, made
 * directly, one request after the other as the accepts were. Per request: its attachment put
 * in the bucket once; its 100 people created as figure 1's ceiling creates them (a
 * transaction of the item and its email claim each, 16 in flight); the 100 erasure references
 * and then the 100 email records, in batches of 25 (the email records are this run's own,
 * read back and written again under new IDs); and 100 queue messages of their size, in
 * batches of 10, to a queue of the ceiling's own (the email worker does not read it).
 * Recipients per second. It leaves out the accept's own reads (claims and people of the
 * merge, the suppression list, the template): the ceiling is higher than the store work of
 * an accept allows, and the ratio to it a lower bound.
 */
async function acceptCeiling(
  requests: number,
  attachment: string,
  messageIds: string[],
): Promise<number> {
  const db = benchDb();
  const emails = tableName('default', 'emails');
  const records = await batchGet(
    db,
    emails,
    messageIds.slice(0, RECIPIENTS).map((id) => messageKey(BENCH_INSTANCE, id)),
  );
  if (records.length === 0) throw new Error('no email record of this run to copy');
  const s3 = createS3Client();
  const sqs = createSqsClient();
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `bench-accept-ceiling-${Date.now().toString(36)}` }),
  );
  const instanceId = `${BENCH_INSTANCE}-ceiling`;
  const content = Buffer.from(attachment, 'base64');
  const run = `accept-${Date.now().toString(36)}`;
  const now = new Date().toISOString();
  const expires = Math.floor(Date.now() / 1000) + 86_400;
  let ms = 0;
  try {
    for (let n = 0; n < requests; n += 1) {
      const started = performance.now();
      await s3.send(
        new PutObjectCommand({
          Bucket: localBucketName('default', 'payloads'),
          Key: `bench/attachments/${run}-${n}`,
          Body: content,
        }),
      );
      const recipients = Array.from(
        { length: RECIPIENTS },
        (_, i) => `${run}-${n}-${i}@send.bench`,
      );
      const personIds: string[] = [];
      const created = await runBounded([...recipients.keys()], 16, async (i) => {
        personIds[i] = await createPersonDirectly(
          db,
          instanceId,
          { 'str::email': recipients[i] ?? '', 'str::first': `P${i}` },
          [],
          now,
        );
      });
      if (created.failure) throw created.failure.error;
      const copies = recipients.map((_, i) => {
        const messageId = newId();
        const record: Record<string, unknown> = records[i % records.length] ?? {};
        return {
          ...record,
          ...messageKey(instanceId, messageId),
          message_id: messageId,
          person_id: personIds[i] ?? '',
        };
      });
      await batchWrite(
        db,
        emails,
        copies.flatMap((copy) =>
          referencePuts(instanceId, [copy.person_id], `M#${copy.message_id}`, expires),
        ),
      );
      await batchWrite(
        db,
        emails,
        copies.map((Item) => ({ PutRequest: { Item } })),
      );
      for (let start = 0; start < copies.length; start += 10) {
        await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl,
            Entries: copies.slice(start, start + 10).map((copy) => ({
              Id: copy.message_id,
              MessageBody: JSON.stringify(copy),
            })),
          }),
        );
      }
      ms += performance.now() - started;
    }
  } finally {
    await sqs.send(new DeleteQueueCommand({ QueueUrl })).catch(() => undefined);
    s3.destroy();
    sqs.destroy();
  }
  return perSecond(requests * RECIPIENTS, ms);
}

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

/** Polls until none of `ids` is `queued`; their final states counted into `statuses`. */
async function drained(
  stack: BenchStack,
  ids: string[],
  statuses: Record<string, number>,
  deadline: number,
): Promise<number> {
  const pending = new Set(ids);
  while (pending.size > 0 && Date.now() < deadline) {
    const answer = await post(stack.base, stack.key, '/v1/transactional/get', {
      message_ids: [...pending].slice(0, 100),
    });
    for (const email of answer.emails as { message_id: string; status: string }[]) {
      if (email.status !== 'queued') {
        pending.delete(email.message_id);
        statuses[email.status] = (statuses[email.status] ?? 0) + 1;
      }
    }
    if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return pending.size;
}

/**
 * Requests sent first, unmeasured: DynamoDB Local's JVM compiles the worker's calls meanwhile
 * (after 4, its C2 compiler still took 39 % of its CPU while the worker sent: ratios 0.43-0.53;
 * after 10, 0.64 and 0.65).
 */
const WARM_REQUESTS = Number(process.env.BENCH_SEND_WARM_REQUESTS ?? 10);

export async function transactionalFigure(stack: BenchStack): Promise<FigureResult> {
  const requests = scaled(5);
  const attachment = randomBytes(75 * 1024).toString('base64'); // 100 KB once in base64
  const run = `send-${Date.now().toString(36)}`;
  const accepts: number[] = [];
  const messageIds: string[] = [];
  const statuses: Record<string, number> = {};
  let acceptMs = 0;
  let notSent = 0;
  // Requests first, unmeasured: cold code paths in the worker and the SES stand-in, and
  // DynamoDB Local's JVM, which compiles the worker's calls over the first thousand emails
  // (its CPU per email fell from 31 to 12 ms over the first 400, and the worker's rate rose
  // from 52 to about 72/s; the ceiling touches no table). The store on AWS compiles nothing.
  for (let n = 0; n < WARM_REQUESTS; n += 1) {
    const warm = await post(
      stack.base,
      stack.key,
      '/v1/transactional/send',
      request(`${run}-warm`, n, attachment),
    );
    const ids = (warm.emails as { message_id?: string }[]).flatMap((entry) =>
      entry.message_id ? [entry.message_id] : [],
    );
    await drained(stack, ids, {}, Date.now() + DRAIN_SECONDS * 1000);
  }
  // Each request is accepted with the queue workers held (locally the API and the workers
  // share the machine's two cores; on AWS each is a function of its own), then its emails are
  // sent by the worker alone, and then the same raw messages straight to the stand-in: the
  // worker's window and its ceiling one beside the other, so that a slower minute of the
  // machine weighs on both. The worker's window runs from the first email SES took to its
  // last (the stand-in's times).
  let sentInWindows = 0;
  let windowMs = 0;
  let ceilingSent = 0;
  let ceilingMs = 0;
  let workerCpu = 0;
  let ceilingCpu = 0;
  for (let n = 0; n < requests; n += 1) {
    await settle(stack);
    const ids = await withQueueWorkersHeld(stack, async () => {
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
      const accepted = (answer.emails as { message_id?: string }[]).flatMap((entry) =>
        entry.message_id ? [entry.message_id] : [],
      );
      await settle(stack);
      return accepted;
    });
    messageIds.push(...ids);
    // A send that meets a fault waits for its message to come back (the queue's visibility
    // timeout): the rate is measured on what was sent by then, and the note says what was not.
    const sending = await withStackCpu(stack, () =>
      drained(stack, ids, statuses, Date.now() + DRAIN_SECONDS * 1000),
    );
    notSent += sending.result;
    workerCpu += sending.cpuSeconds;
    const taken = await sentOf(stack, BENCH_INSTANCE, new Set(ids));
    const times = taken.map((m) => Date.parse(m.at));
    if (times.length < 2) continue;
    // The rate between sends: the first send opens the window (n sends, n - 1 intervals).
    sentInWindows += times.length - 1;
    windowMs += Math.max(...times) - Math.min(...times);
    await settle(stack);
    const straight = await withStackCpu(stack, () => sesCeiling(stack, taken));
    ceilingSent += taken.length;
    ceilingMs += straight.result;
    ceilingCpu += straight.cpuSeconds;
  }
  if (notSent > 0) statuses['still queued or sending'] = notSent;
  const workerRate = perSecond(sentInWindows, windowMs);
  const ceiling = perSecond(ceilingSent, ceilingMs);
  const ratio = workerRate / ceiling;
  const acceptRate = perSecond(messageIds.length, acceptMs);
  await settle(stack);
  const storeCeiling = await acceptCeiling(requests, attachment, messageIds);
  return {
    rows: [
      {
        figure: '3 transactional send',
        measure: 'emails handed to SES/s by the email worker',
        notes: [
          `Email worker: ${messageIds.length} emails in ${requests} windows, each request's first email sent to its last (the stand-in's own times), accepted with the workers held, each window beside its ceiling; the stack's CPU per email: worker ${fixed((workerCpu * 1000) / Math.max(1, messageIds.length), 1)} ms, ceiling ${fixed((ceilingCpu * 1000) / Math.max(1, ceilingSent), 1)} ms.`,
        ],
        value: `${fixed(workerRate)}/s`,
        reference: `${fixed(ceiling)}/s`,
        ratio,
        target: `≥ ${SEND_TARGET}`,
        met: ratio >= SEND_TARGET,
      },
      {
        figure: '3 transactional send',
        measure: `recipients accepted/s, requests of ${RECIPIENTS}`,
        notes: [
          `Accept: ${requests} requests one after the other, the email worker held; p50 ${fixed(percentile(accepts, 50))} ms a request.`,
        ],
        value: `${fixed(acceptRate)}/s`,
        reference: `${fixed(storeCeiling)}/s`,
        ratio: acceptRate / storeCeiling,
        target: `≥ ${ACCEPT_TARGET}`,
        met: acceptRate / storeCeiling >= ACCEPT_TARGET,
      },
    ],
    notes: [
      `Transactional send: ${requests} requests × ${RECIPIENTS} new recipients, Liquid in subject and body (people and json values), a tracked link, the unsubscribe link, one 100 KB PDF attachment; final states ${JSON.stringify(statuses)}. ${WARM_REQUESTS} unmeasured requests of the same kind go first (cold code paths, and DynamoDB Local's JVM, which compiles the worker's calls over the first thousand emails). Each measured request is accepted with the queue workers held (SIGSTOP; on AWS the API and the workers are functions of their own, locally they share two cores), then its emails are sent by the worker alone, then the same raw messages (read back from the SES stand-in) straight to it, ${SEND_CONCURRENCY} at a time (the worker's batches at once × its batch size), with the same configuration set: the ceiling, window by window. Targets: each side at least ${SEND_TARGET} of its ceiling; SES_MAX_SEND_RATE ${process.env.SES_MAX_SEND_RATE ?? '1000'}.`,
      "Ceiling of the accept: the store work of each request made directly, one request after the other (its attachment put once; its 100 people created as figure 1 creates them, a transaction of the item and its claim each, 16 in flight; the erasure references and the email records, copies of this run's, in batches of 25; 100 queue messages of their size in batches of 10). The accept's reads (claims, people, suppression list) are not in it, so the ratio is a lower bound.",
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Figure 3: transactional send', await withBenchStack(transactionalFigure));
}
