/**
 * Figure 4, reads at scale: two instances, one of 1,000 people and one of 100,000, and on each
 * the reads clients make: a person by email, by a custom field, by tag (first page of 50), a
 * range filter (first page), `q`, a sort by a custom field, the 120th page by sequential
 * `offset` (each page asked at the previous answer's `next_offset`) and `tags/get`. For each,
 * the read units of one request (counted in-process with the domain and a metering client:
 * deterministic) and its p50 time over HTTP, at both sizes, and their ratios. Targets: read
 * units at 100,000 within 10 % of those at 1,000 for the indexed lookups, the sort and the
 * offset page; p50 times within 1.2; the range filter examining at most its budget.
 *
 * The people are written straight to the store with everything a merge and the people
 * stream's worker leave (the person, its email claim, its field index entries, the tags and
 * their counts), the stream paused meanwhile: how they got there does not change what a read
 * costs. Sizes: `BENCH_LIST_SIZES` (default 1000,100000; the first is the reference).
 *
 *   node --import tsx bench/person-get.ts        # a stack of its own
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { signingKeyrings } from '../shared/http/api-runtime.js';
import { LocalKeyWrapper } from '../shared/adapters/key-wrappers.js';
import { DynamoConfigStore } from '../shared/adapters/config-store.js';
import { batchWrite, type Item } from '../shared/adapters/dynamo-helpers.js';
import { DynamoFieldIndex, entryPk } from '../shared/adapters/field-index-store.js';
import { DynamoOffsetCheckpoints } from '../shared/adapters/offset-checkpoints.js';
import {
  counterPk,
  DynamoPeopleStore,
  listShard,
  personItem,
} from '../shared/adapters/people-store.js';
import { claimKey } from '../shared/adapters/record-writes.js';
import { DynamoTagStore } from '../shared/adapters/tag-store.js';
import { TransactionBatcher } from '../shared/adapters/transaction-batcher.js';
import { issuedCursors } from '../shared/domain/cursor.js';
import { DynamoCursorStore } from '../shared/adapters/cursor-store.js';
import { entrySortKey, indexEntriesOf } from '../shared/domain/people/field-index.js';
import { newId } from '../shared/domain/ids.js';
import {
  getPeople,
  MAX_CANDIDATES,
  MAX_COUNTED_MATCHES,
  PersonGetRequest,
  type PersonListing,
} from '../shared/domain/people/person-get.js';
import type { Person } from '../shared/domain/people/person.js';
import { getTags, TagsGetRequest } from '../shared/domain/people/tags.js';
import { tenantOf } from '../shared/domain/tenancy.js';
import { runBounded } from '../shared/lib/bounded.js';
import { tableName } from '../shared/resources.js';
import { fixed, median, post, printFigure, type FigureResult, type Row } from './lib/report.js';
import { benchDb, isMain, pauseStream, withBenchStack, type BenchStack } from './lib/stack.js';
import { emptyMeter, meteredDocumentClient, total, type Meter } from './lib/metered-dynamodb.js';

const INSTANCES = [
  { id: 'bench-list-small', key: 'bench-list-small-key-32-characters-or-more' },
  { id: 'bench-list', key: 'bench-list-key-32-characters-or-more-x' },
];
const FIRSTS = ['Ann', 'Bob', 'Cid', 'Dee', 'Eve', 'Fay', 'Gus', 'Hal'];
const TAGS = ['vip', 'newsletter', 'trial'];
const RU_TARGET = 1.1;
const TIME_TARGET = 1.2;
const REPEATS = 15;
/** The page asked by sequential offsets, and its size (small enough for 1,000 people). */
const OFFSET_PAGE = 120;
const OFFSET_LIMIT = 5;

const sizes = (process.env.BENCH_LIST_SIZES ?? '1000,100000').split(',').map(Number);

/** A person of the figure: the n-th of its instance. */
function personOf(n: number, now: string): Person {
  return {
    id: newId(),
    fields: {
      'str::email': `p${n}@list.bench`,
      'str::first': FIRSTS[n % FIRSTS.length] ?? 'X',
      'str::last': `L${n}`,
      'str:cm:user-id': `U${n}`,
      'int:cm:score': n % 100,
    },
    tags: n % 10 === 0 ? ['vip'] : n % 10 === 1 ? ['newsletter'] : n % 10 === 2 ? ['trial'] : [],
    created_at: now,
    updated_at: now,
  };
}

/** Fills an instance with `size` people and everything writes of them leave. */
async function fill(instanceId: string, size: number): Promise<void> {
  const db = benchDb();
  const people = tableName('default', 'people');
  const indexes = tableName('default', 'indexes');
  const now = new Date().toISOString();
  const personItems: Item[] = [];
  const entryItems: Item[] = [];
  for (let n = 0; n < size; n += 1) {
    const person = personOf(n, now);
    personItems.push(personItem(instanceId, person));
    const email = `p${n}@list.bench`;
    personItems.push({
      ...claimKey(instanceId, 'str::email', email),
      field: 'str::email',
      value: email,
      owner_id: person.id,
    });
    for (const entry of indexEntriesOf(person)) {
      entryItems.push({
        pk: entryPk(instanceId, entry.field, listShard(person.id)),
        sk: entrySortKey(entry.value, person.id),
      });
    }
  }
  const write = async (table: string, items: Item[]) => {
    const chunks = Array.from({ length: Math.ceil(items.length / 500) }, (_, i) =>
      items.slice(i * 500, i * 500 + 500),
    );
    const { failure } = await runBounded(chunks, 4, (chunk) =>
      batchWrite(
        db,
        table,
        chunk.map((Item) => ({ PutRequest: { Item } })),
      ),
    );
    if (failure) throw failure.error;
  };
  // Set-up, not measured: no stream records for the workers to read meanwhile.
  const resume = await pauseStream(people);
  try {
    await write(people, personItems);
    await write(indexes, entryItems);
  } finally {
    await resume();
  }
  // The tags (their items and IDs), their counts and the instance's counters, as the merges
  // would have left them.
  await new DynamoTagStore(db, people, new TransactionBatcher(db)).ensureTags(instanceId, TAGS);
  for (const [i, tag] of TAGS.entries()) {
    const holders = Math.floor(size / 10) + (i < size % 10 ? 1 : 0);
    await db.send(
      new PutCommand({
        TableName: people,
        Item: { pk: `${instanceId}#TC#0`, sk: tag, count: holders, subscribers: holders },
      }),
    );
  }
  await db.send(
    new PutCommand({
      TableName: people,
      Item: { pk: counterPk(instanceId), sk: '0', contacts: size, subscribers: size },
    }),
  );
}

type Read = 'person/get' | 'tags/get';

interface Page {
  name: string;
  read: Read;
  body: Record<string, unknown>;
  /** What the targets say of it. */
  kind: 'indexed' | 'bounded' | 'search' | 'tags';
}

const PAGES: Page[] = [
  {
    name: 'a person by email',
    read: 'person/get',
    kind: 'indexed',
    body: {
      limit: 1,
      filter: { '$str::is': { field_id: 'str::email', value: 'p777@list.bench' } },
    },
  },
  {
    name: 'a person by a custom field',
    read: 'person/get',
    kind: 'indexed',
    body: { limit: 1, filter: { '$str::is': { field_id: 'str:cm:user-id', value: 'U777' } } },
  },
  {
    name: 'by tag, first page of 50',
    read: 'person/get',
    kind: 'indexed',
    body: { limit: 50, filter: { '$u4s::is': { field_id: 'u4s::t', value: 'vip' } } },
  },
  {
    name: 'a range filter, first page of 50',
    read: 'person/get',
    kind: 'bounded',
    body: { limit: 50, filter: { '$int::between': { field_id: 'int:cm:score', value: [10, 19] } } },
  },
  {
    name: 'q "ann", first page of 50',
    read: 'person/get',
    kind: 'search',
    body: { limit: 50, q: 'ann' },
  },
  {
    name: 'sorted by a custom field, first page of 50',
    read: 'person/get',
    kind: 'indexed',
    body: { limit: 50, sort_by_field_id: 'int:cm:score', sort_order: 'desc' },
  },
  {
    name: `page ${OFFSET_PAGE} by sequential offset (pages of ${OFFSET_LIMIT})`,
    read: 'person/get',
    kind: 'indexed',
    body: { limit: OFFSET_LIMIT, offset: (OFFSET_PAGE - 1) * OFFSET_LIMIT },
  },
  { name: 'tags/get, no body', read: 'tags/get', kind: 'tags', body: {} },
];

/** Pages 1 to 119 of the offset listing, each at the previous answer's `next_offset`. */
async function pageUpToOffset(stack: BenchStack, key: string): Promise<void> {
  let offset = 0;
  for (let page = 1; page < OFFSET_PAGE; page += 1) {
    const answer = await post(stack.base, key, '/v1/person/get', { limit: OFFSET_LIMIT, offset });
    offset = Number(answer.next_offset);
  }
  if (offset !== (OFFSET_PAGE - 1) * OFFSET_LIMIT)
    throw new Error(`offset walk ended at ${offset}`);
}

/** The time of one read over HTTP. */
async function askMs(stack: BenchStack, key: string, page: Page): Promise<number> {
  const started = performance.now();
  await post(stack.base, key, `/v1/${page.read}`, page.body);
  return performance.now() - started;
}

interface Work {
  rru: number;
  wru: number;
  calls: number;
  /** People read (the candidates a filtered listing examined). */
  people: number;
}

/** What one read costs the store, counted in this process with the domain. */
async function pageWork(instanceId: string, page: Page): Promise<Work> {
  let meter: Meter = emptyMeter();
  const db = meteredDocumentClient(() => meter);
  const store = new DynamoPeopleStore(db, {
    people: tableName('default', 'people'),
    activities: tableName('default', 'activities'),
    organizations: tableName('default', 'organizations'),
  });
  let people = 0;
  // The store, counting the people it reads.
  const listing: PersonListing = {
    indexPage: (...args) => store.indexPage(...args),
    searchPage: (...args) => store.searchPage(...args),
    countSearch: (...args) => store.countSearch(...args),
    tagNames: (...args) => store.tagNames(...args),
    claimOwner: (...args) => store.claimOwner(...args),
    counters: (...args) => store.counters(...args),
    getPeople: (instance, ids) => {
      people += ids.length;
      return store.getPeople(instance, ids);
    },
  };
  const config = new DynamoConfigStore(db, tableName('default', 'config'));
  const tenant = await tenantOf(config, instanceId, 'List');
  const keyring = await signingKeyrings(config, new LocalKeyWrapper())();
  if (!tenant) throw new Error(`no instance ${instanceId}`);
  const batcher = new TransactionBatcher(db);
  const tags = {
    people: new DynamoTagStore(db, tableName('default', 'people'), batcher),
    organizations: new DynamoTagStore(db, tableName('default', 'organizations'), batcher, 'OT'),
  };
  meter = emptyMeter();
  if (page.read === 'tags/get') {
    await getTags(TagsGetRequest.parse(page.body), tenant, tags);
  } else {
    await getPeople(
      PersonGetRequest.parse(page.body),
      tenant,
      {
        listing,
        fields: new DynamoFieldIndex(db, tableName('default', 'indexes')),
        checkpoints: new DynamoOffsetCheckpoints(db, tableName('default', 'requests')),
      },
      issuedCursors(
        keyring,
        instanceId,
        'person/get',
        new DynamoCursorStore(db, tableName('default', 'requests')),
      ),
    );
  }
  const calls = Object.values(meter.calls).reduce((sum, n) => sum + n, 0);
  return { rru: total(meter.rcu), wru: total(meter.wcu), calls, people };
}

export async function listingFigure(stack: BenchStack): Promise<FigureResult> {
  const times = new Map<string, number[]>();
  const work = new Map<string, Work[]>();
  const filled = sizes.map((size, i) => {
    const instance = INSTANCES[Math.min(i, INSTANCES.length - 1)];
    if (!instance) throw new Error('no instance for the size');
    return { size, ...instance };
  });
  for (const { size, id, key } of filled) {
    console.error(`bench: ${size.toLocaleString('en')} people in ${id}…`);
    await fill(id, size);
    await pageUpToOffset(stack, key);
  }
  // Every read once on each instance first (the functions warm), then each read asked of the
  // sizes in turn, ask after ask, so that what the machine does meanwhile falls on both.
  for (const { key } of filled) for (const page of PAGES) await askMs(stack, key, page);
  for (const page of PAGES) {
    const asked = filled.map(() => [] as number[]);
    for (let n = 0; n < REPEATS; n += 1) {
      for (const [i, { key }] of filled.entries()) asked[i]?.push(await askMs(stack, key, page));
    }
    times.set(page.name, asked.map(median));
    for (const { id } of filled) {
      work.set(page.name, [...(work.get(page.name) ?? []), await pageWork(id, page)]);
    }
  }
  const at = sizes.map((s) => s.toLocaleString('en')).join(' / ');
  // Each row: the read at the largest size (its value) beside the same read at the smallest
  // (its reference), and their ratio.
  const units = (w: Work | undefined) =>
    w
      ? `${fixed(w.rru, 1)} RRU${w.wru > 0 ? ` + ${fixed(w.wru, 1)} WRU` : ''}, ${w.calls} calls`
      : '–';
  const rows: Row[] = PAGES.flatMap((page) => {
    const measured = work.get(page.name) ?? [];
    const [small, large] = [measured[0], measured.at(-1)];
    const ms = times.get(page.name) ?? [];
    const timeRatio = (ms.at(-1) ?? NaN) / (ms[0] ?? NaN);
    const ruRatio = (large?.rru ?? NaN) / (small?.rru ?? NaN);
    // Sizes between the first and the last, when asked for (`BENCH_LIST_SIZES`).
    const between =
      sizes.length > 2
        ? [
            `${page.name.charAt(0).toUpperCase()}${page.name.slice(1)} at ${at} people: ${measured.map(units).join(' / ')}; p50 ${ms.map((t) => fixed(t, 1)).join(' / ')} ms.`,
          ]
        : [];
    const unitsRow: Row =
      page.kind === 'bounded'
        ? {
            figure: '4 reads at scale',
            measure: `${page.name}: people examined`,
            value: measured.map((w) => String(w.people)).join(' / '),
            reference: `budget ${MAX_CANDIDATES.toLocaleString('en')}`,
            ratio: Math.max(...measured.map((w) => w.people)) / MAX_CANDIDATES,
            target: '≤ 1',
            met: measured.every((w) => w.people <= MAX_CANDIDATES),
            notes: [
              `${page.name.charAt(0).toUpperCase()}${page.name.slice(1)}: people examined at ${at} people; read units ${measured.map(units).join(' / ')}.`,
              ...between,
            ],
          }
        : {
            figure: '4 reads at scale',
            measure: `${page.name}: read units`,
            value: units(large),
            reference: units(small),
            ratio: ruRatio,
            ...(page.kind === 'indexed'
              ? { target: `≤ ${RU_TARGET}`, met: ruRatio <= RU_TARGET }
              : {}),
            notes: between,
          };
    return [
      unitsRow,
      {
        figure: '4 reads at scale',
        measure: `${page.name}: p50 ms`,
        value: `${fixed(ms.at(-1) ?? NaN, 1)} ms`,
        reference: `${fixed(ms[0] ?? NaN, 1)} ms`,
        ratio: timeRatio,
        target: `≤ ${TIME_TARGET}`,
        met: timeRatio <= TIME_TARGET,
        notes: between,
      },
    ];
  });
  return {
    rows,
    notes: [
      `Reads at scale: each row the read at ${sizes.at(-1)?.toLocaleString('en')} people (its value) beside the same read at ${sizes[0]?.toLocaleString('en')} (its reference). Instances of ${at} people written straight to the store with what merges and the people stream's worker leave (person, email claim, field index entries, tags and counts). Read units of one request counted in-process with the domain and a metering client (ReturnConsumedCapacity), times over HTTP (median of ${REPEATS} asks, the two sizes asked in turn). The offset page is asked after pages 1 to ${OFFSET_PAGE - 1}, each at the previous answer's next_offset: its position was saved by the page before (its WRU is the position it saves for the next). The range filter is answered from the listing index with the filter checked on each candidate, at most ${MAX_CANDIDATES.toLocaleString('en')} a request (docs/api.md, Listing). q counts its matches on its first page up to ${MAX_COUNTED_MATCHES} (125 at 1,000 people), so its units grow until the count reaches that cap. Targets: read units within ${RU_TARGET} of the smaller instance's for the indexed reads, the sort and the offset page (q's and tags/get's reported); p50 times within ${TIME_TARGET}; the range filter examining at most its budget.`,
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Figure 4: reads at scale', await withBenchStack(listingFigure));
}
