import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { GetQueueUrlCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp as buildFauxqs } from 'fauxqs';
import {
  createDocumentClient,
  createDynamoDbClient,
  createSqsClient,
} from '../../shared/adapters/aws-clients.js';
import { startDynamoDbLocal } from '../../local/dynamodb-local.js';
import { QUEUES, queueName, tableName } from '../../shared/resources.js';
import {
  KEYS,
  SEED_FILE,
  baseUrl,
  shifted,
  stackAwsEnv,
  stackEnv,
  startStack,
  stopStack,
  waitForBanner,
} from './stack.js';
import { checkedFetch } from '../contract.js';

/**
 * Whole processes of the local stack fail under load: DynamoDB Local is killed and
 * restarted, the SES stand-in goes down, the process of the API and its queue pollers (the
 * workers) is killed mid-batch. The test runs DynamoDB Local (on a data directory, so that
 * it survives its restart) and fauxqs itself, and the stack leaves them to it
 * (`CDP_SKIP_EMULATORS=dynamodb,sqs`): they outlive the stack, and the stack outlives them.
 *
 * The SQS stand-in goes away and comes back: the stack reaches fauxqs through a TCP proxy of
 * the test's, which refuses connections and cuts those open for a while, as a restart of a
 * durable queue looks to its clients (Amazon SQS keeps its messages). A restart of fauxqs
 * itself is not tested: the version that runs on Node.js 20 (1.9.2) keeps its queues in
 * memory only, so a restart loses every queued message and the queues themselves, which no
 * client can make up for; its persistent versions (2.x) need Node.js 22.5 or later.
 */
// Moved by CDP_TEST_PORT_OFFSET like the suite's stacks, clear of theirs and lifecycle's.
const PORTS = shifted({ port: 3960, dynamodbPort: 8960, sqsPort: 5026, sesPort: 8965 });
const ses = `http://127.0.0.1:${PORTS.sesPort}`;
const PEOPLE = tableName('default', 'people');

type Body = Record<string, unknown>;
interface Answer {
  status: number;
  body: Body;
  retryAfter: string | null;
}

async function post(path: string, key: string, body: unknown): Promise<Answer> {
  const response = await checkedFetch(`${baseUrl('default', PORTS)}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return {
    status: response.status,
    body: (await response.json()) as Body,
    retryAfter: response.headers.get('retry-after'),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'cdp-process-faults-'));
let dynamodb: ChildProcess | undefined;
let stack: ReturnType<typeof startStack> | undefined;
const fauxqs = buildFauxqs({ logger: false });

/**
 * The stack's way to fauxqs (on PORTS.sqsPort): a TCP proxy that can go down (refusing new
 * connections and cutting open ones, so requests in flight fail part-way) and come back.
 */
class QueueProxy {
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((client) => {
    const upstream = createConnection({ port: this.upstreamPort, host: '127.0.0.1' });
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });

  constructor(private readonly upstreamPort: number) {}

  async up(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(PORTS.sqsPort, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  async down(): Promise<void> {
    const closed = new Promise((resolve) => this.server.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}
let queueProxy: QueueProxy;
const aws = stackAwsEnv(PORTS);
let db: ReturnType<typeof createDocumentClient>;
let sqs: ReturnType<typeof createSqsClient>;

async function startDynamoDb(): Promise<void> {
  mkdirSync(join(dataDir, 'dynamodb'), { recursive: true });
  dynamodb = startDynamoDbLocal({
    path: join(dataDir, 'dynamodb'),
    port: PORTS.dynamodbPort,
    stdio: 'ignore',
  });
  await until('DynamoDB Local', async () => {
    // Any answer of DynamoDB's, even "no such table", says it listens.
    await db.send(new ScanCommand({ TableName: 'none', Limit: 1 })).catch((error: unknown) => {
      if ((error as Error).name !== 'ResourceNotFoundException') throw error;
    });
    return true;
  });
}

async function killDynamoDb(): Promise<void> {
  const child = dynamodb;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function startTheStack(): Promise<void> {
  stack = startStack(
    stackEnv(PORTS, {
      CDP_DATA_DIR: dataDir,
      CDP_SEED_FILE: SEED_FILE,
      CDP_SKIP_EMULATORS: 'dynamodb,sqs',
      // A request meeting the outage answers 503 after 5 s rather than API Gateway's 28.
      CDP_REQUEST_BUDGET_MS: '5000',
    }),
  );
  await waitForBanner(stack.output, stack.child);
}

/** The PID of a process of the stack, from the banner's `Processes:` line. */
function pidOf(name: string): number {
  const line = /Processes: (.*)/.exec(stack?.output() ?? '')?.[1] ?? '';
  const pid = new RegExp(`${name} (\\d+)`).exec(line)?.[1];
  if (!pid) throw new Error(`no PID of ${name} in the banner: ${line}`);
  return Number(pid);
}

/** Every item of an instance in the people table: people by ID, claims by key value. */
async function peopleOf(instanceId: string) {
  const items: Body[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(
      new ScanCommand({ TableName: PEOPLE, ExclusiveStartKey: start, ConsistentRead: true }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  const mine = items.filter((item) => String(item.pk).startsWith(`${instanceId}#`));
  const people = new Map(
    mine
      .filter((item) => item.sk === 'P')
      .map((item) => [String(item.pk).split('#P#')[1] ?? '', item]),
  );
  const claims = new Map(
    mine
      .filter((item) => item.sk === 'K')
      .map((item) => [String(item.pk).split('#K#str::email#')[1] ?? '', String(item.owner_id)]),
  );
  return { people, claims };
}

/** The email a person item holds (its `str::email` field, wherever the item keeps it). */
function emailOf(person: Body | undefined): string | undefined {
  const text = JSON.stringify(person ?? {});
  return /"([^"@]+@pf\.test)"/.exec(text)?.[1];
}

beforeAll(async () => {
  Object.assign(process.env, aws);
  db = createDocumentClient(createDynamoDbClient(), '');
  sqs = createSqsClient();
  await fauxqs.listen({ port: 0, host: '127.0.0.1' });
  queueProxy = new QueueProxy((fauxqs.server.address() as AddressInfo).port);
  await queueProxy.up();
  await startDynamoDb();
  await startTheStack();
}, 120_000);

afterAll(async () => {
  if (stack) await stopStack(stack.child);
  await killDynamoDb();
  await queueProxy.down();
  await fauxqs.close();
});

/**
 * How long before the SIGKILL (or, for an answer still on its way, after it) a write DynamoDB
 * Local answered may yet be missing from its file: 1-10 ms measured (a probe writing
 * transactions of two items four at a time, killed ten times: four answered writes lost, each
 * answered 1-10 ms before the kill, each lost whole); the answer then crosses the API and a
 * loaded machine.
 */
const UNSAVED_ANSWER_MS = 1000;

describe('DynamoDB Local killed and restarted under load', () => {
  it('answers 503 while it is down, applies nothing by halves, and resumes by itself', async () => {
    const prefix = `d${Date.now().toString(36)}`;
    // Warm: the first requests of a fresh stack are slow, and must not eat the load's time.
    await until('a first merge', async () => {
      const { status } = await post('/v1/person/merge', KEYS.safety, {
        people: [{ fields: { 'str::email': `${prefix}-warm@pf.test` } }],
      });
      return status === 200 ? true : undefined;
    });
    const answers = new Map<string, { started: number; ended: number; answer: Answer | Error }>();
    let running = true;
    let n = 0;
    const worker = async () => {
      while (running) {
        n += 1;
        const email = `${prefix}-${n}@pf.test`;
        const started = Date.now();
        const answer = await post('/v1/person/merge', KEYS.safety, {
          people: [{ fields: { 'str::email': email, 'str::first': 'Pat' }, tags: ['pf'] }],
        }).catch((error: unknown) => error as Error);
        answers.set(email, { started, ended: Date.now(), answer });
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    // The load runs until a few of its merges went through, then the store dies under it.
    await until(
      'merges under load',
      () =>
        [...answers.values()].filter(
          ({ answer }) => !(answer instanceof Error) && answer.status === 200,
        ).length >= 8
          ? true
          : undefined,
      30_000,
    );
    const killedAt = Date.now();
    await killDynamoDb();
    // Longer than a request's budget (CDP_REQUEST_BUDGET_MS): requests meet the outage.
    await sleep(6000);
    await startDynamoDb();
    const backAt = Date.now();
    // The API was left running: it resumes by itself once the store answers again.
    await until(
      'a merge after the restart',
      () => {
        const after = [...answers.values()].filter(({ started }) => started > backAt);
        return after.some(({ answer }) => !(answer instanceof Error) && answer.status === 200)
          ? true
          : undefined;
      },
      30_000,
    ).finally(() => (running = false));
    await Promise.all(workers);

    const all = [...answers.entries()].map(([email, timed]) => ({ email, ...timed }));
    expect(all.filter(({ answer }) => answer instanceof Error)).toEqual([]);
    const answered = all.map(({ email, started, ended, answer }) => ({
      email,
      started,
      ended,
      ...(answer as Answer),
    }));
    // Only 200 and 503: no generic 500, no other error.
    expect(answered.filter(({ status }) => status !== 200 && status !== 503)).toEqual([]);
    const refused = answered.filter(({ status }) => status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const { body, retryAfter } of refused) {
      expect(body).toMatchObject({ code: 503, request_id: expect.any(String) });
      expect(body.error).toMatch(/data store is overloaded or unavailable/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // Requests went through before the kill and after the restart, the API left running.
    const ok = answered.filter(({ status }) => status === 200);
    expect(ok.some(({ ended }) => ended < killedAt)).toBe(true);
    expect(ok.some(({ started }) => started > backAt)).toBe(true);

    const { people, claims } = await peopleOf('safety');
    const holders = new Map<string, string[]>();
    for (const [id, person] of people) {
      const email = emailOf(person);
      if (email?.startsWith(prefix)) holders.set(email, [...(holders.get(email) ?? []), id]);
    }
    const lostByTheStandIn: string[] = [];
    for (const { email, status, body, ended } of answered) {
      const owner = claims.get(email);
      const held = holders.get(email) ?? [];
      if (status === 200) {
        const person = (body.people as { person_id: string }[])[0];
        // DynamoDB Local answers a write a few milliseconds before it is in its file: one it
        // answered just before the SIGKILL can be lost whole (not half) when it restarts.
        // AWS answers only what it keeps. Such an answer must still be whole: neither the
        // person nor its claim.
        if (Math.abs(ended - killedAt) <= UNSAVED_ANSWER_MS && held.length === 0 && !owner) {
          lostByTheStandIn.push(email);
          continue;
        }
        expect({ email, held, owner }).toEqual({
          email,
          held: [person?.person_id],
          owner: person?.person_id,
        });
      } else {
        // Refused: applied wholly (one person, holding the claim) or not at all.
        expect({ email, held }).toEqual({ email, held: owner === undefined ? [] : [owner] });
      }
    }
    // At most the writes in flight at the kill: one a worker.
    expect(lostByTheStandIn.length).toBeLessThanOrEqual(4);
    // No claim of this load points at a missing person.
    for (const [email, owner] of claims) {
      if (email.startsWith(prefix))
        expect({ email, exists: people.has(owner) }).toEqual({
          email,
          exists: true,
        });
    }
  });
});

interface GatewayMessage {
  messageId: string;
  tags: Record<string, string>;
}

async function sentCounts(): Promise<Map<string, number>> {
  const response = await fetch(`${ses}/messages`);
  const { messages } = (await response.json()) as { messages: GatewayMessage[] };
  const counts = new Map<string, number>();
  for (const message of messages) {
    const tag = message.tags.cdp_message ?? '';
    counts.set(tag, (counts.get(tag) ?? 0) + 1);
  }
  return counts;
}

async function emailStatuses(ids: string[]): Promise<Map<string, Body>> {
  const { status, body } = await post('/v1/transactional/get', KEYS.mailer, { message_ids: ids });
  expect(status).toBe(200);
  return new Map((body.emails as Body[]).map((email) => [String(email.message_id), email]));
}

async function setSesDown(down: boolean): Promise<void> {
  const response = await fetch(`${ses}/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ down }),
  });
  expect(response.status).toBe(200);
}

describe('the SES stand-in down', () => {
  it('keeps emails waiting, then sends each exactly once when it is back', async () => {
    await setSesDown(true);
    let ids: string[] = [];
    try {
      const { status, body } = await post('/v1/transactional/send', KEYS.mailer, {
        merge_by: ['str::email'],
        asset: {
          from_email: 'team@mail.mailer.test',
          subject: 'Hello',
          email_name: 'pf',
          html_body: '<html><body><p>Hi</p></body></html>',
        },
        emails: Array.from({ length: 5 }, (_, i) => ({
          fields: { 'str::email': `ses-${Date.now().toString(36)}-${i}@pf.test` },
        })),
      });
      expect(status).toBe(202);
      ids = (body.emails as { message_id: string }[]).map((email) => email.message_id);
      expect(ids).toHaveLength(5);
      // Past the first retries (0.5 and 1 s) the emails still wait, none failed or sent.
      await sleep(2500);
      const waiting = await emailStatuses(ids);
      for (const id of ids) {
        expect(['queued', 'sending']).toContain(
          waiting.get(id)?.email_status ?? waiting.get(id)?.status,
        );
      }
      const counts = await sentCounts();
      expect(ids.map((id) => counts.get(`mailer_${id}`) ?? 0)).toEqual([0, 0, 0, 0, 0]);
    } finally {
      await setSesDown(false);
    }
    await until('every email to be sent', async () => {
      const statuses = await emailStatuses(ids);
      const sent = ids.every((id) => {
        const email = statuses.get(id);
        return (email?.email_status ?? email?.status) === 'sent';
      });
      return sent ? true : undefined;
    });
    await sleep(1000);
    const counts = await sentCounts();
    expect(ids.map((id) => counts.get(`mailer_${id}`) ?? 0)).toEqual([1, 1, 1, 1, 1]);
  });
});

async function settled(requestId: string): Promise<Body> {
  return until(
    `async request ${requestId}`,
    async () => {
      const { status, body } = await post('/v1/async/get', KEYS.safety, { request_id: requestId });
      if (status !== 200) return undefined;
      return body.status === 'done' || body.status === 'failed' ? body : undefined;
    },
    90_000,
  );
}

/** The ingest queue's own visibility timeout (6 minutes), which the tests below shorten. */
const INGEST_VISIBILITY =
  QUEUES.find((queue) => queue.name === 'ingest')?.visibilityTimeoutSeconds ?? 360;

async function setVisibility(queue: 'ingest', seconds: number): Promise<void> {
  const { QueueUrl } = await sqs.send(
    new GetQueueUrlCommand({ QueueName: queueName('default', queue) }),
  );
  await sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl,
      Attributes: { VisibilityTimeout: String(seconds) },
    }),
  );
}

/** A request that may have been queued although no 200 came back. */
function outcomeUnknown(answer: PromiseSettledResult<Answer> | undefined): boolean {
  if (!answer) return false;
  if (answer.status === 'rejected') return true;
  const details = answer.value.body.details;
  return (
    answer.value.status === 503 &&
    Array.isArray(details) &&
    details.some((detail: { status?: unknown }) => detail.status === 'may_be_queued')
  );
}

describe('the SQS stand-in gone and back', () => {
  // The queue's own visibility timeout again, whether the test passed or failed.
  afterEach(() => setVisibility('ingest', INGEST_VISIBILITY));

  it('refuses or queues each request while it is gone, finishes every accepted one, and resumes by itself', async () => {
    // A receive the outage cut after the queue handed its messages out leaves them invisible
    // for the visibility timeout (6 minutes here and on AWS): 5 s, so that they come back
    // within the test (seen twice on a loaded machine, 2026-11-28).
    await setVisibility('ingest', 5);
    const prefix = `q${Date.now().toString(36)}`;
    interface Sent {
      emails: string[];
      started: number;
      answer: Answer | Error;
    }
    const sent: Sent[] = [];
    let running = true;
    let n = 0;
    const worker = async () => {
      while (running) {
        n += 1;
        const emails = Array.from({ length: 3 }, (_, i) => `${prefix}-${n}-${i}@pf.test`);
        const started = Date.now();
        const answer = await post('/v1/person/merge', KEYS.safety, {
          async: true,
          people: emails.map((email) => ({ fields: { 'str::email': email } })),
        }).catch((error: unknown) => error as Error);
        sent.push({ emails, started, answer });
        // An answer at once (a refused connection) must not spin the load.
        await sleep(50);
      }
    };
    const accepted = () =>
      sent.filter(({ answer }) => !(answer instanceof Error) && answer.status === 200);
    const workers = Array.from({ length: 4 }, worker);
    await until('requests accepted under load', () => (accepted().length >= 5 ? true : undefined));
    await queueProxy.down();
    const downAt = Date.now();
    // Longer than a request's budget and than the pollers' long poll: both meet the outage.
    await sleep(6000);
    await queueProxy.up();
    const backAt = Date.now();
    await until(
      'a request accepted after the queue came back',
      () => (accepted().some(({ started }) => started > backAt) ? true : undefined),
      30_000,
    ).finally(() => (running = false));
    await Promise.all(workers);

    expect(sent.filter(({ answer }) => answer instanceof Error)).toEqual([]);
    const answered = sent.map(({ answer, ...rest }) => ({ ...rest, ...(answer as Answer) }));
    // Accepted or refused with the 503 envelope: nothing else, no generic 500.
    expect(answered.filter(({ status }) => status !== 200 && status !== 503)).toEqual([]);
    const refused = answered.filter(({ status }) => status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const { body, retryAfter } of refused) {
      expect(body).toMatchObject({ code: 503, request_id: expect.any(String) });
      expect(body.error).toMatch(
        /The ingest queue (is unavailable: nothing was queued|did not confirm)/,
      );
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    }
    const maybeQueued = refused.filter(({ body }) =>
      (body.details as { status?: string }[] | undefined)?.some(
        (detail) => detail.status === 'may_be_queued',
      ),
    );
    const notQueued = refused.filter((answer) => !maybeQueued.includes(answer));
    // Requests were accepted before the outage, and after it without a restart of the stack.
    const ok = answered.filter(({ status }) => status === 200);
    expect(ok.some(({ started }) => started < downAt)).toBe(true);
    expect(ok.some(({ started }) => started > backAt)).toBe(true);

    // Every accepted request is done, its people written once each.
    const finals = await Promise.all(
      ok.map(async ({ body }) => (await settled(String(body.request_id))).status),
    );
    expect(finals.filter((status) => status !== 'done')).toEqual([]);
    const { people, claims } = await peopleOf('safety');
    const holders = new Map<string, number>();
    for (const person of people.values()) {
      const email = emailOf(person);
      if (email?.startsWith(prefix)) holders.set(email, (holders.get(email) ?? 0) + 1);
    }
    const count = (email: string) => ({
      email,
      people: holders.get(email) ?? 0,
      claimed: claims.has(email),
    });
    for (const email of ok.flatMap(({ emails }) => emails)) {
      expect(count(email)).toEqual({ email, people: 1, claimed: true });
    }
    // Refused as not queued: nothing of it was written.
    for (const email of notQueued.flatMap(({ emails }) => emails)) {
      expect(count(email)).toEqual({ email, people: 0, claimed: false });
    }
    // "May be queued": applied once (its record done) or not at all (its record still
    // queued, the message never having reached the queue), never in part.
    for (const { emails, body } of maybeQueued) {
      const requestId = (body.details as { request_id?: string }[])[0]?.request_id ?? '';
      const state = await until(
        `request ${requestId} done, or left queued`,
        async () => {
          const { status, body: request } = await post('/v1/async/get', KEYS.safety, {
            request_id: requestId,
          });
          if (status !== 200) return undefined;
          if (request.status === 'done') return 'done';
          return Date.now() - backAt > 20_000 ? String(request.status) : undefined;
        },
        40_000,
      );
      expect(['done', 'queued']).toContain(state);
      const applied = state === 'done' ? 1 : 0;
      for (const email of emails) {
        expect(count(email)).toEqual({ email, people: applied, claimed: applied === 1 });
      }
    }
  });
});

describe('the worker killed mid-batch', () => {
  it('loses and doubles nothing of the accepted async requests', async () => {
    // A message the dead worker held comes back after 2 s rather than the queue's 6 minutes.
    await setVisibility('ingest', 2);
    const prefix = `w${Date.now().toString(36)}`;
    const accepted: { id: string; kind: 'merge' | 'activities'; emails: string[] }[] = [];
    // Activity requests whose outcome the client cannot know: the API died after queueing one
    // but before answering, or the queue never confirmed the send (503 "may be queued").
    const unanswered = new Set<string>();
    const send = async (n: number) => {
      const emails = Array.from({ length: 5 }, (_, i) => `${prefix}-${n}-${i}@pf.test`);
      const activityKeys = emails.map((_, i) => `${prefix}-${n}-${i}`);
      const merge = post('/v1/person/merge', KEYS.safety, {
        async: true,
        people: emails.map((email) => ({ fields: { 'str::email': email } })),
      });
      const activities = post('/v1/activities/create', KEYS.safety, {
        async: true,
        activities: emails.map((email, i) => ({
          activity_id: 'act:cm:signed-up',
          key: activityKeys[i],
          fields: { 'str::email': email },
        })),
      });
      const answers = await Promise.allSettled([merge, activities]);
      (['merge', 'activities'] as const).forEach((kind, i) => {
        const answer = answers[i];
        if (answer?.status === 'fulfilled' && answer.value.status === 200) {
          accepted.push({ id: String(answer.value.body.request_id), kind, emails });
        } else if (kind === 'activities' && outcomeUnknown(answer)) {
          emails.forEach((email) => unanswered.add(email));
        }
      });
    };
    const sending = Promise.all(Array.from({ length: 30 }, (_, n) => send(n)));
    await until('some accepted requests', () => (accepted.length >= 10 ? true : undefined));
    const killedAt = Date.now();
    process.kill(pidOf('the default API'), 'SIGKILL');
    await sending;
    // The stack stops as one of its processes died; it is started again on the same data.
    await until('the stack to stop', () => (stack?.child.exitCode !== null ? true : undefined));
    await setVisibility('ingest', INGEST_VISIBILITY);
    await startTheStack();

    expect(accepted.length).toBeGreaterThanOrEqual(10);
    const finals = await Promise.all(
      accepted.map(async (request) => {
        const final = await settled(request.id);
        return { id: request.id, status: final.status };
      }),
    );
    expect(finals).toEqual(accepted.map(({ id }) => ({ id, status: 'done' })));
    // The kill met unfinished work: requests accepted before it were finished after it.
    const records = await Promise.all(
      accepted.map(async ({ id }) => {
        const { Item } = await db.send(
          new GetCommand({
            TableName: tableName('default', 'requests'),
            Key: { pk: `safety#REQ#${id}`, sk: 'REQ' },
            ConsistentRead: true,
          }),
        );
        return {
          id,
          attempts: Number(Item?.attempts),
          doneAt: Date.parse(String(Item?.updated_at)),
        };
      }),
    );
    expect(records.some(({ doneAt }) => doneAt > killedAt)).toBe(true);
    const { people, claims } = await peopleOf('safety');
    const holders = new Map<string, number>();
    for (const person of people.values()) {
      const email = emailOf(person);
      if (email?.startsWith(prefix)) holders.set(email, (holders.get(email) ?? 0) + 1);
    }
    const emails = [...new Set(accepted.flatMap((request) => request.emails))];
    for (const email of emails) {
      expect({ email, people: holders.get(email) ?? 0, claimed: claims.has(email) }).toEqual({
        email,
        people: 1,
        claimed: true,
      });
    }
    for (const email of emails) {
      const owner = claims.get(email) ?? '';
      const { status, body } = await post('/v1/person/get/activities', KEYS.safety, {
        person_id: owner,
      });
      expect(status).toBe(200);
      const keyed = (body.activities as { field_id: string }[]).filter(
        (activity) => activity.field_id === 'act:cm:signed-up',
      );
      // An activity request accepted for this person: recorded once, not twice; one whose
      // answer never came: at most once.
      const wanted = accepted.some(
        (request) => request.kind === 'activities' && request.emails.includes(email),
      )
        ? [1]
        : unanswered.has(email)
          ? [0, 1]
          : [0];
      expect({ email, activities: keyed.length }).toEqual({
        email,
        activities: wanted.includes(keyed.length) ? keyed.length : wanted,
      });
    }
  });
});
