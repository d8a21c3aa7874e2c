/**
 * Audiences (docs/audiences.md): three figures, each beside a reference measured in
 * the same run.
 *
 * 1. The lag from a merge to the membership it causes, with 20 audiences on the instance:
 *    a merge over HTTP, then `person/subscriptions` asked every 10 ms until the person is a
 *    member (p50, p99), beside the merge's own round trip and the local stream poller's idle
 *    interval (200 ms), which bound it from below here.
 * 2. The rate of an audience build over `BENCH_AUDIENCE_PEOPLE` people (default 100,000),
 *    written straight to the store beforehand (the items a merge writes): people evaluated
 *    per second from the create to `building: false`, beside the rate the store itself reads
 *    those people (the listing's 16 shards at once, pages of 500 and batched reads) in the
 *    same run.
 * 3. The request units of re-evaluating one changed person against 20 audiences, counted
 *    in-process with the domain and a metering client (no change; one entry; one exit and
 *    one entry), beside the units of the person's own write.
 *
 *   npm run bench:audiences
 *   BENCH_AUDIENCE_PEOPLE=20000 npm run bench:audiences
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoMembershipStore } from '../shared/adapters/audience-membership-store.js';
import { batchGet, batchWrite, type Item } from '../shared/adapters/dynamo-helpers.js';
import { listPk, personItem, personKey } from '../shared/adapters/people-store.js';
import { queryShard } from '../shared/adapters/sharded-index.js';
import { liveAudience, newBuild, type Audience } from '../shared/domain/audiences/audience.js';
import { evaluatePerson } from '../shared/domain/audiences/evaluate.js';
import { FieldCatalog } from '../shared/domain/fields/field-catalog.js';
import { newId } from '../shared/domain/ids.js';
import type { Person } from '../shared/domain/people/person.js';
import { runBounded, slicesOf } from '../shared/lib/bounded.js';
import { tableName } from '../shared/resources.js';
import {
  emptyMeter,
  meteredDocumentClient,
  total,
  totalCalls,
  type Meter,
} from './lib/metered-dynamodb.js';
import {
  fixed,
  median,
  percentile,
  perSecond,
  post,
  printFigure,
  scaled,
  type FigureResult,
  type Row,
} from './lib/report.js';
import { benchDb, isMain, pauseStream, withBenchStack, type BenchStack } from './lib/stack.js';

const AUDIENCES = 20;
const POLL_MS = 10;
/** The stream pollers' wait after an empty read (bench/lib/stack.ts): 200 ms unless set. */
const STREAM_IDLE_MS = 200;
const STREAM_MAX_IDLE_MS = Number(process.env.BENCH_STREAM_MAX_IDLE_MS ?? 1000);
const PEOPLE = Number(process.env.BENCH_AUDIENCE_PEOPLE ?? 100_000);
/** The build figure's instance: no audiences but the one built (bench-config.json). */
const BUILD_KEY = 'bench-audiences-key-32-characters-or-more';
const BUILD_INSTANCE = 'bench-audiences';

const lastName = (k: number) => `Aud${k}`;
const byLastName = (value: string) => ({
  $and: [{ '$str::is': { field_id: 'str::last', value } }],
});

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function createAudiences(stack: BenchStack): Promise<string[]> {
  const ids: string[] = [];
  for (let k = 0; k < AUDIENCES; k += 1) {
    const created = await post(stack.base, stack.key, '/v1/audiences/create', {
      name: `Bench ${k} ${Date.now().toString(36)}`,
      filter: byLastName(lastName(k)),
    });
    ids.push(String(created.id));
  }
  return ids;
}

async function lagRows(stack: BenchStack, audienceIds: string[]): Promise<Row[]> {
  console.error('bench: membership lag…');
  const lags: number[] = [];
  const merges: number[] = [];
  const samples = scaled(60);
  for (let n = 0; n < samples; n += 1) {
    const email = `lag-${n}-${Date.now().toString(36)}@audiences.bench`;
    const k = n % AUDIENCES;
    const started = performance.now();
    await post(stack.base, stack.key, '/v1/person/merge', {
      people: [{ fields: { 'str::email': email, 'str::last': lastName(k) } }],
    });
    merges.push(performance.now() - started);
    await until(
      async () => {
        const answer = await post(stack.base, stack.key, '/v1/person/subscriptions', {
          people: [{ email }],
        });
        const [entry] = answer.people as { subscriptions?: { audience_id: string }[] }[];
        return (entry?.subscriptions ?? []).some((s) => s.audience_id === audienceIds[k]);
      },
      30_000,
      'membership',
    );
    lags.push(performance.now() - started);
  }
  const reference = `merge alone p50 ${fixed(median(merges))} ms; poller idle ${STREAM_IDLE_MS} ms`;
  return [50, 99].map((p) => ({
    figure: 'A1 membership lag',
    measure: `merge → member, p${p} ms (${samples} merges, ${AUDIENCES} audiences)`,
    value: fixed(percentile(lags, p)),
    reference,
    ratio: percentile(lags, p) / (median(merges) + STREAM_IDLE_MS),
  }));
}

/** The stack's CPU seconds per second over `ms`. */
async function cpuRate(stack: BenchStack, ms = 3000): Promise<number> {
  const pids = Object.values(stack.pids);
  const cpu = () => pids.reduce((sum, pid) => sum + stack.cpuSeconds(pid), 0);
  const before = cpu();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return ((cpu() - before) * 1000) / ms;
}

/** Waits until the stack is back to its idle CPU rate (the stream's backlog handled). */
async function settle(stack: BenchStack, idle: number) {
  for (let round = 0; round < 400; round += 1) {
    if ((await cpuRate(stack)) <= idle * 1.5 + 0.05) return;
  }
  throw new Error('the stack did not settle');
}

/**
 * The store's own read of the build's people, as fast as it goes: the listing index's 16
 * shards at once (the build's segments), each a page of 500 keys and then those people read
 * strongly consistent, 100 a call, the page's five calls at once. People per second.
 */
async function scanRate(db: ReturnType<typeof benchDb>): Promise<number> {
  const people = tableName('default', 'people');
  const started = performance.now();
  let read = 0;
  await Promise.all(
    Array.from({ length: 16 }, async (_, shard) => {
      let after: string | undefined;
      for (;;) {
        const page = await queryShard(
          db,
          {
            table: people,
            index: 'list',
            partitionKey: 'lpk',
            sortKey: 'lsk',
            partition: (n) => listPk(BUILD_INSTANCE, n),
            order: 'asc',
            ...(after === undefined ? {} : { after }),
            count: 500,
          },
          shard,
        );
        const ids = page.map((item) => String(item.lsk));
        if (ids.length === 0) return;
        // 100 keys a call, the page's calls at once (as the build reads a page).
        const chunks = await Promise.all(
          slicesOf(ids, 100).map((chunk) =>
            batchGet(
              db,
              people,
              chunk.map((id) => personKey(BUILD_INSTANCE, id)),
              true,
            ),
          ),
        );
        read += chunks.reduce((sum, items) => sum + items.length, 0);
        after = ids.at(-1);
      }
    }),
  );
  return perSecond(read, performance.now() - started);
}

async function buildRows(stack: BenchStack): Promise<Row[]> {
  console.error(`bench: a build over ${PEOPLE.toLocaleString('en')} people…`);
  const db = benchDb();
  const idle = await cpuRate(stack);
  const now = new Date().toISOString();
  const items: Item[] = [];
  for (let n = 0; n < PEOPLE; n += 1) {
    items.push(
      personItem(BUILD_INSTANCE, {
        id: newId(),
        fields: {
          'str::email': `b${n}@build.bench`,
          'str::last': n % 10 === 0 ? 'Built' : 'Other',
          'bol::p': true,
        },
        tags: [],
        created_at: now,
        updated_at: now,
      }),
    );
  }
  const chunks = Array.from({ length: Math.ceil(items.length / 500) }, (_, i) =>
    items.slice(i * 500, i * 500 + 500),
  );
  const people = tableName('default', 'people');
  // The seeding is set-up, not part of the build: with the people table's stream paused it
  // leaves no stream records for the audience worker to read before the build's own.
  const resumeStream = await pauseStream(people);
  const writeStarted = performance.now();
  const { failure } = await runBounded(chunks, 4, (chunk) =>
    batchWrite(
      db,
      people,
      chunk.map((Item) => ({ PutRequest: { Item } })),
    ),
  );
  const writeRate = perSecond(PEOPLE, performance.now() - writeStarted);
  await resumeStream();
  if (failure) throw failure.error;
  console.error(`bench: ${PEOPLE.toLocaleString('en')} people seeded at ${fixed(writeRate)}/s`);
  await settle(stack, idle);
  const scan = await scanRate(db);
  console.error(`bench: the store read them at ${fixed(scan)}/s (16 segments)`);
  await settle(stack, idle);

  const started = performance.now();
  const created = await post(stack.base, BUILD_KEY, '/v1/audiences/create', {
    name: `Build ${Date.now().toString(36)}`,
    filter: byLastName('Built'),
  });
  let last: Record<string, unknown> = {};
  let reported = started;
  await until(
    async () => {
      // A stand-in that falls behind answers a poll 503 now and then: the poll is asked again.
      const listed = (await post(stack.base, BUILD_KEY, '/v1/audiences/get', {}).catch(
        (error: unknown) => {
          if (!/HTTP 5\d\d/.test(String(error))) throw error;
          console.error(`bench: a poll of the build failed (${String(error).slice(0, 80)}…)`);
          return undefined;
        },
      )) as Record<string, unknown>[] | undefined;
      if (!listed) return false;
      last = listed.find((a) => a.id === created.id) ?? {};
      if (performance.now() - reported > 60_000) {
        reported = performance.now();
        const s = (reported - started) / 1000;
        console.error(`bench: build at ${fixed(s)} s: ${String(last.members)} members so far`);
      }
      return last.building === false;
    },
    4 * 3_600_000,
    'build',
  );
  const seconds = (performance.now() - started) / 1000;
  const rate = PEOPLE / seconds;
  return [
    {
      figure: 'A2 audience build',
      measure: `people evaluated per second (${PEOPLE.toLocaleString('en')} people, ${String(last.members)} members, ${fixed(seconds)} s; the store absorbed their writes at ${fixed(writeRate)}/s)`,
      value: fixed(rate),
      reference: `the store's own read of them, 16 segments at once: ${fixed(scan)} people/s`,
      ratio: rate / scan,
    },
  ];
}

function person(id: string, last: string): Person {
  const at = new Date().toISOString();
  return {
    id,
    fields: { 'str::email': `${id}@eval.bench`, 'str::last': last, 'bol::p': true },
    tags: [],
    created_at: at,
    updated_at: at,
  };
}

async function costRows(): Promise<Row[]> {
  console.error('bench: re-evaluation cost…');
  const instanceId = `bench-eval-${Date.now().toString(36)}`;
  let meter: Meter = emptyMeter();
  const db = meteredDocumentClient(() => meter);
  const tables = {
    people: tableName('default', 'people'),
    audiences: tableName('default', 'audiences'),
    activities: tableName('default', 'activities'),
  };
  const store = new DynamoMembershipStore(db, tables);
  // The audiences exist only here: the stack's worker finds none for this instance.
  const context = { fields: FieldCatalog.forPerson([]) };
  const at = new Date().toISOString();
  const live = Array.from({ length: AUDIENCES }, (_, k) => {
    const audience: Audience = {
      id: newId(),
      name: `Cost ${k}`,
      filter: byLastName(lastName(k)),
      is_public: false,
      public_name: '',
      public_description: '',
      sms_is_public: false,
      sms_public_name: '',
      sms_public_description: '',
      created: at,
      edited_at: at,
      version: 1,
      build: { ...newBuild(1, at), finished_at: at },
    };
    return liveAudience(audience, context);
  });
  const id = newId();
  const write = async (last: string) => {
    meter = emptyMeter();
    await db.send(
      new PutCommand({
        TableName: tables.people,
        Item: personItem(instanceId, person(id, last)),
      }),
    );
    return total(meter.wcu);
  };
  const evaluate = async () => {
    meter = emptyMeter();
    await evaluatePerson(instanceId, id, live, [], store);
    return `${totalCalls(meter)} calls, ${fixed(total(meter.rcu), 1)} RRU + ${fixed(total(meter.wcu), 1)} WRU`;
  };
  const personWrite = await write(lastName(3));
  const entering = await evaluate();
  const unchanged = await evaluate();
  await write(lastName(4));
  const moving = await evaluate();
  const reference = `the person's own write: ${fixed(personWrite, 1)} WRU`;
  return [
    ['one entry (membership, counters, activity)', entering],
    ['no change (the common case)', unchanged],
    ['one exit and one entry', moving],
  ].map(([what, value]) => ({
    figure: 'A3 re-evaluation cost',
    measure: `one person vs ${AUDIENCES} audiences: ${what}`,
    value: value ?? '',
    reference,
  }));
}

export async function audiencesFigure(stack: BenchStack): Promise<FigureResult> {
  const audienceIds = await createAudiences(stack);
  const rows = [...(await lagRows(stack, audienceIds)), ...(await costRows())];
  rows.push(...(await buildRows(stack)));
  return {
    rows,
    notes: [
      `Local stack: DynamoDB Local streams read by the local stream poller (idle ${STREAM_IDLE_MS} ms between empty reads${STREAM_MAX_IDLE_MS > STREAM_IDLE_MS ? `, doubling up to ${STREAM_MAX_IDLE_MS} ms while a shard stays idle, BENCH_STREAM_MAX_IDLE_MS; a merge after a pause may wait that long` : ''}), so the lag includes up to that interval; on AWS the event source mapping polls each shard about 4 times a second with no batching window.`,
      "The build figure's people are written with the people table's stream paused (turned off, then on again before the build): set-up leaves the audience worker no backlog, so the figure is the build's own.",
      "The build: 16 listing shards walked in parallel, 500 people per job message. A first build reads each page's people and their memberships of the audience (strongly consistent, 100 keys a call) and settles those the filter leaves as they are; the others (here the members) are asked for through their `E` item, evaluated by the audience worker from the stream and acknowledged once per build; the build ends when every person asked for is acknowledged.",
      'Costs are counted by DynamoDB Local (`ReturnConsumedCapacity: INDEXES`): strongly consistent reads, transactions at twice the units of their items.',
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Audiences', await withBenchStack(audiencesFigure));
}
