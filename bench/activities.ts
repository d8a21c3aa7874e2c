/**
 * Figure 2, activities: activities per second for existing people through HTTP, sync
 * (requests of 100 activities of 20 people, 5 each, at concurrency 1, 4 and 16), and async
 * (the accept rate, and the drain rate from the first accept until the last request is
 * done); beside the store's ceiling measured in the same run: the same activity items
 * written straight to DynamoDB Local with `BatchWriteItem` (25 a call) at the same
 * concurrency. The same for activities of new people (each request names 20 people nobody
 * has seen), beside a ceiling that also writes each person with its claim (figure 1's
 * ceiling of a new person). Also the API process's CPU per activity.
 *
 *   node --import tsx bench/activities.ts        # a stack of its own (bench/lib/stack.ts)
 */
import { activityItem } from '../shared/adapters/activity-store.js';
import { batchWrite } from '../shared/adapters/dynamo-helpers.js';
import { newId } from '../shared/domain/ids.js';
import { tableName } from '../shared/resources.js';
import { runBounded } from '../shared/lib/bounded.js';
import { createPersonDirectly } from './person-merge.js';
import {
  acceptAndDrain,
  drainAlone,
  drainBesideSync,
  drainRows,
  burst,
  CEILING_IN_FLIGHT,
  fixed,
  gate,
  INGEST_CONCURRENCY,
  latencyText,
  LEVELS,
  median,
  percentile,
  ROUNDS,
  roundsText,
  perSecond,
  post,
  printFigure,
  requestsAt,
  scaled,
  type FigureResult,
  type Row,
} from './lib/report.js';
import {
  BENCH_INSTANCE,
  benchDb,
  isMain,
  isolated,
  settle,
  withBenchStack,
  withStackCpu,
  type BenchStack,
} from './lib/stack.js';

const PER_REQUEST = 100;
const PEOPLE_PER_REQUEST = 20;
/** Sync activities at least at 0.6 of the `BatchWriteItem` ceiling (0.5 before). */
const TARGET = 0.6;
/** Single activities whose last seen is awaited, one after the other. */
const LAG_SAMPLES = 10;
/** Async requests are accepted this many at a time; the sync reference runs at the same. */
const ASYNC_CONCURRENCY = 8;

const email = (run: string, request: number, person: number) =>
  `${run}-${request}-${person}@activities.bench`;

/** The activities of one request; `run` names its people (a new run, new people). */
function activities(run: string, request: number) {
  return Array.from({ length: PER_REQUEST }, (_, i) => ({
    activity_id: 'act:cm:purchased',
    fields: { 'str::email': email(run, request, i % PEOPLE_PER_REQUEST) },
    attributes: { 'str:cm:item': `Item ${i}`, 'int:cm:price': 1000 + i },
  }));
}

/** What a request's answer must say of its people: all found, or each made by its first activity. */
type PeopleExpected = 'existing' | 'new';

function answeredAsExpected(
  entries: { status: string; person_status: string }[],
  people: PeopleExpected,
): boolean {
  return entries.every(
    (entry, i) =>
      entry.status === 'ingested' &&
      entry.person_status === (people === 'new' && i < PEOPLE_PER_REQUEST ? 'created' : 'merged'),
  );
}

/** The people the activities of `count` requests name, created beforehand. */
async function createPeople(stack: BenchStack, run: string, count: number): Promise<void> {
  const emails = Array.from({ length: count }, (_, request) =>
    Array.from({ length: PEOPLE_PER_REQUEST }, (_, person) => email(run, request, person)),
  ).flat();
  await burst(Math.ceil(emails.length / 100), 4, async (n) => {
    const people = emails
      .slice(n * 100, n * 100 + 100)
      .map((e) => ({ fields: { 'str::email': e } }));
    await post(stack.base, stack.key, '/v1/person/merge', { people });
  });
}

/**
 * The ceiling: the same activity items, 25 to a `BatchWriteItem`, for `count` requests. With
 * `newPeople`, each request first writes its 20 people as figure 1's ceiling does (one
 * transaction of the person and its email claim each, 16 at once, at most
 * `CEILING_IN_FLIGHT` in all).
 */
async function ceiling(
  count: number,
  concurrency: number,
  run: string,
  newPeople = false,
  /** The request's batches of 25 in flight together (the API's activity store: 4). */
  atOnce = 1,
): Promise<number> {
  const db = benchDb();
  const table = tableName('default', 'activities');
  const at = new Date().toISOString();
  const call = gate(CEILING_IN_FLIGHT);
  const ms = await burst(count, concurrency, async (n) => {
    if (newPeople) {
      const people = Array.from({ length: PEOPLE_PER_REQUEST }, (_, i) => email(`${run}-c`, n, i));
      const { failure } = await runBounded(people, 16, async (address) => {
        await call(() =>
          createPersonDirectly(db, `${BENCH_INSTANCE}-ceiling`, { 'str::email': address }, [], at),
        );
      });
      if (failure) throw failure.error;
    }
    const items = activities(run, n).map((activity, i) =>
      activityItem(`${BENCH_INSTANCE}-ceiling`, {
        id: newId(),
        person_id: newId(),
        person_status: 'merged',
        field_id: activity.activity_id,
        attr: activity.attributes,
        display: `Purchased Item ${i}`,
        value: activity.attributes['int:cm:price'],
        created_at: at,
        source: 'Bench',
      }),
    );
    await batchWrite(
      db,
      table,
      items.map((Item) => ({ PutRequest: { Item } })),
      undefined,
      atOnce,
    );
  });
  return perSecond(count * PER_REQUEST, ms);
}

async function sync(
  stack: BenchStack,
  count: number,
  concurrency: number,
  run: string,
  people: PeopleExpected = 'existing',
) {
  const api = stack.pids['the default API'] ?? 0;
  const cpuBefore = stack.cpuSeconds(api);
  const latencies: number[] = [];
  const ms = await burst(count, concurrency, async (n) => {
    const started = performance.now();
    const answer = await post(stack.base, stack.key, '/v1/activities/create', {
      activities: activities(run, n),
    });
    const entries = answer.activities as { status: string; person_status: string }[];
    if (!answeredAsExpected(entries, people))
      throw new Error(
        `activities: not all ingested for ${people} people: ${JSON.stringify(entries[0])}`,
      );
    latencies.push(performance.now() - started);
  });
  const records = count * PER_REQUEST;
  return {
    rate: perSecond(records, ms),
    latencies,
    cpuUs: ((stack.cpuSeconds(api) - cpuBefore) * 1e6) / records,
  };
}

/**
 * Last seen's lag behind the answer (it moves off the request path, from the activities
 * stream): one activity at a time for an existing person, then their last seen read until it
 * shows the activity's time.
 */
async function lastSeenLag(stack: BenchStack, run: string, samples: number): Promise<number[]> {
  const lags: number[] = [];
  for (let n = 0; n < samples; n += 1) {
    const created = new Date().toISOString();
    const answer = await post(stack.base, stack.key, '/v1/activities/create', {
      activities: [{ ...activities(run, n)[0], created }],
    });
    const answered = performance.now();
    const [entry] = answer.activities as { person_id: string }[];
    const id = entry?.person_id ?? '';
    for (;;) {
      const found = await post(stack.base, stack.key, '/v1/person/get-by-ids', {
        contact_ids: [id],
        fields: ['tme::last-seen'],
      });
      const contact = (found.contacts as Record<string, { fields?: Record<string, unknown> }>)[id];
      if (contact?.fields?.['tme::last-seen'] === created) break;
      // Right after the sync runs the worker may still be reading their touches (one local
      // poller reads a shard's batches one after the other): the first samples wait for it.
      if (performance.now() - answered > 180_000)
        throw new Error(`last seen of ${id} did not move within 180 s`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    lags.push(performance.now() - answered);
  }
  return lags;
}

export async function activitiesFigure(stack: BenchStack): Promise<FigureResult> {
  const rows: Row[] = [];
  const run = `a-${Date.now().toString(36)}`;
  const asyncCount = scaled(24);
  // The drain alone and its reference: runs of a second or two at 24 requests moved 0.6-1.5
  // between rounds; four times as many.
  const besideCount = scaled(96);
  const most = Math.max(...LEVELS.map(requestsAt), asyncCount, besideCount);
  // The people exist before any activity is measured (activities for existing people).
  await createPeople(stack, run, most);
  const cpu: number[] = [];
  // DynamoDB Local is a JVM: its compiler warms to each kind of call over the first seconds of
  // load, and the first run measured paid for it (one run of each, unmeasured, first).
  if (LEVELS.length > 0) {
    const warm = Math.min(8, requestsAt(4));
    await sync(stack, warm, 4, run);
    await sync(stack, warm, 4, `${run}-warm`, 'new');
    await ceiling(warm, 4, `${run}-warm`);
    await ceiling(warm, 4, `${run}-warm`, true);
    await ceiling(warm, 4, `${run}-warm`, false, 4);
  }
  for (const concurrency of LEVELS) {
    const count = requestsAt(concurrency);
    // Rounds of the API and its ceiling one after the other, each ratio of its own round: a
    // run of a second or two either met the workers' stream reads and last-seen writes of the
    // one before it or did not (a second apart), and one ratio moved 0.3-1.1 on that alone.
    const existing: { rate: number; top: number; latencies: number[] }[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const measured = await isolated(stack, () => sync(stack, count, concurrency, run));
      const top = await isolated(stack, () => ceiling(count, concurrency, `${run}-${round}`));
      cpu.push(measured.cpuUs);
      existing.push({ rate: measured.rate, top, latencies: measured.latencies });
    }
    // Once each (every stream record they write slows DynamoDB Local's later stream reads):
    // the same items with each request's four batches at once, as the API writes them; and
    // people nobody has seen: the API creates each (its first activity), the ceiling writes
    // each with its claim before the activities.
    const atOnce = await isolated(stack, () => ceiling(count, concurrency, `${run}-x`, false, 4));
    const people = `${run}-new${concurrency}`;
    const created = await isolated(stack, () => sync(stack, count, concurrency, people, 'new'));
    const createdTop = await isolated(stack, () => ceiling(count, concurrency, people, true));
    const ratio = median(existing.map((r) => r.rate / r.top));
    // One note for the level's two rows.
    const level = `Activities at c=${concurrency} (${count} requests of ${PER_REQUEST}): existing people ${latencyText(existing.flatMap((r) => r.latencies))} a request, median of ${ROUNDS} rounds, ${roundsText(existing.map((r) => r.rate / r.top))}; against the ceiling with a request's 4 batches at once (${fixed(atOnce)}/s), ${fixed(median(existing.map((r) => r.rate)) / atOnce, 2)}; new people ${latencyText(created.latencies)}, one round.`;
    rows.push({
      figure: '2 activities',
      measure: `activities/s, existing people, c=${concurrency}`,
      value: `${fixed(median(existing.map((r) => r.rate)))}/s`,
      reference: `${fixed(median(existing.map((r) => r.top)))}/s`,
      ratio,
      target: `≥ ${TARGET}`,
      met: ratio >= TARGET,
      notes: [level],
    });
    const createdRatio = created.rate / createdTop;
    rows.push({
      figure: '2 activities',
      measure: `activities/s, new people (20 a request), c=${concurrency}`,
      value: `${fixed(created.rate)}/s`,
      reference: `${fixed(createdTop)}/s`,
      ratio: createdRatio,
      target: `≥ ${TARGET}`,
      met: createdRatio >= TARGET,
      notes: [level],
    });
  }
  await settle(stack);
  const lags = await lastSeenLag(stack, run, LAG_SAMPLES);
  // A few first, unmeasured, as figure 1 does: the worker's code paths warm.
  await acceptAndDrain(
    stack.base,
    stack.key,
    '/v1/activities/create',
    ASYNC_CONCURRENCY,
    ASYNC_CONCURRENCY,
    PER_REQUEST,
    (n) => ({ activities: activities(run, n) }),
  );
  await settle(stack);
  const drained = await withStackCpu(stack, () =>
    acceptAndDrain(
      stack.base,
      stack.key,
      '/v1/activities/create',
      asyncCount,
      ASYNC_CONCURRENCY,
      PER_REQUEST,
      (n) => ({ activities: activities(run, n) }),
    ),
  );
  const queued = drained.result;
  // Said at once: a run that fails later (the sync reference on a loaded machine) keeps it.
  console.error(
    `bench: async accept ${fixed(queued.accept)}/s, drain ${fixed(queued.drain)}/s (${asyncCount} requests)`,
  );
  await settle(stack);
  const top = await ceiling(asyncCount, ASYNC_CONCURRENCY, run);
  // The same activities sent synchronously at the worker's concurrency, and again with the
  // workers held while the API accepts: the drain alone. Last: it leaves the stream workers'
  // backlog of its runs (`drainBesideSync`).
  const {
    sync: synced,
    alone,
    cycles,
  } = await drainBesideSync(stack, {
    sync: () => withStackCpu(stack, () => sync(stack, besideCount, INGEST_CONCURRENCY, run)),
    alone: () =>
      drainAlone(
        stack,
        '/v1/activities/create',
        besideCount,
        ASYNC_CONCURRENCY,
        PER_REQUEST,
        (n) => ({ activities: activities(run, n) }),
      ),
  });
  rows.push(
    {
      figure: '2 activities',
      measure: `async activities/s accepted, c=${ASYNC_CONCURRENCY}`,
      value: `${fixed(queued.accept)}/s`,
      reference: `${fixed(top)}/s ceiling, c=${ASYNC_CONCURRENCY}`,
      ratio: queued.accept / top,
    },
    ...drainRows({
      figure: '2 activities',
      what: 'activities',
      record: 'activity',
      records: besideCount * PER_REQUEST,
      endToEndRecords: asyncCount * PER_REQUEST,
      concurrency: INGEST_CONCURRENCY,
      detail: `${asyncCount} requests of ${PER_REQUEST} accepted ${ASYNC_CONCURRENCY} at a time; against the ceiling at c=${ASYNC_CONCURRENCY} (${fixed(top)}/s), ${fixed(queued.drain / top, 2)}; the reference, ${besideCount} requests sent synchronously at the worker's concurrency`,
      endToEnd: drained,
      alone,
      sync: synced,
      cycles,
    }),
    {
      figure: '2 activities',
      measure: 'last seen behind the answer, p50 / max',
      value: `${fixed(percentile(lags, 50))} / ${fixed(Math.max(...lags))} ms`,
    },
  );
  if (cpu.length > 0) {
    rows.push({
      figure: '2 activities',
      measure: 'API process CPU per activity, min–max of runs',
      value: `${fixed(Math.min(...cpu))}–${fixed(Math.max(...cpu))} µs`,
    });
  }
  return {
    rows,
    notes: [
      `Activities: requests of ${PER_REQUEST} activities (act:cm:purchased, tracked as a touch) of ${PEOPLE_PER_REQUEST} people, 5 each; ${LEVELS.map((c) => `${requestsAt(c)} requests at c=${c}`).join(', ')}, after one unmeasured run of each side. Existing people: ${ROUNDS} rounds of the API then its ceiling at each concurrency (the stack idle before each run), the rows the medians; new people and the 4-at-once ceiling run once. Ceiling: the same activity items with BatchWriteItem, 25 a call, a request's batches one after the other, at the same concurrency; for new people, each request's 20 people first written as figure 1's ceiling writes them. The API also finds each person (one batched read of the claims, one of the people). Async: ${asyncCount} requests accepted ${ASYNC_CONCURRENCY} at a time and drained by the ingest worker (${INGEST_CONCURRENCY} batches at once), after ${ASYNC_CONCURRENCY} unmeasured; the drain alone and its reference ${besideCount} requests a run; this comes last. Last seen: ${LAG_SAMPLES} single activities of existing people, one after the other, each person's last seen read until it shows the activity (it moves after the answer, from the activities stream). The API process's CPU per activity is read from /proc over each sync run of existing people: the row gives the lowest and the highest.`,
    ],
  };
}

if (isMain(import.meta.url)) {
  const result = await withBenchStack(activitiesFigure);
  printFigure('Figure 2: activities', result);
}
