/**
 * Figure 4, listing growth: the time of one page of `POST /v1/person/get` (the first page,
 * a middle page by cursor, a `q` search, a sort by email, a filter) at 1,000, 10,000 and
 * 100,000 people, and the ratio 100,000 / 1,000 of each. The default order and the indexed
 * paths (cursor, search, sort) read the same few keys whatever the size; a filter on a
 * field without an index reads every person.
 *
 * The people are written straight to the store (the items a merge writes, with every index
 * key, `BatchWriteItem`), since how they got there does not change what a page costs; the
 * pages are asked over HTTP. Sizes: `BENCH_LIST_SIZES` (default 1000,10000,100000).
 *
 *   node --import tsx bench/person-get.ts        # a stack of its own
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { signingKeyrings } from '../shared/http/api-runtime.js';
import { LocalKeyWrapper } from '../shared/adapters/key-wrappers.js';
import { DynamoConfigStore } from '../shared/adapters/config-store.js';
import { batchWrite, type Item } from '../shared/adapters/dynamo-helpers.js';
import { counterPk, DynamoPeopleStore, personItem } from '../shared/adapters/people-store.js';
import { DynamoFieldIndex } from '../shared/adapters/field-index-store.js';
import { cursorCodec } from '../shared/domain/cursor.js';
import { newId } from '../shared/domain/ids.js';
import { runBounded } from '../shared/lib/bounded.js';
import { tableName } from '../shared/resources.js';
import { fixed, median, post, printFigure, type FigureResult, type Row } from './lib/report.js';
import { benchDb, isMain, withBenchStack, type BenchStack } from './lib/stack.js';
import {
  emptyMeter,
  meteredDocumentClient,
  total,
  totalCalls,
  type Meter,
} from './lib/metered-dynamodb.js';
import { getPeople, PersonGetRequest } from '../shared/domain/people/person-get.js';
import { tenantOf } from '../shared/domain/tenancy.js';

const INSTANCE = 'bench-list';
const KEY = 'bench-list-key-32-characters-or-more-x';
const FIRSTS = ['Ann', 'Bob', 'Cid', 'Dee', 'Eve', 'Fay', 'Gus', 'Hal'];
const TARGET = 1.2;
const REPEATS = 5;

const sizes = (process.env.BENCH_LIST_SIZES ?? '1000,10000,100000').split(',').map(Number);

/** Adds people until the instance holds `size`; their IDs in creation order. */
async function grow(ids: string[], size: number): Promise<void> {
  const db = benchDb();
  const table = tableName('default', 'people');
  const now = new Date().toISOString();
  const items: Item[] = [];
  for (let n = ids.length; n < size; n += 1) {
    const id = newId();
    ids.push(id);
    items.push(
      personItem(INSTANCE, {
        id,
        fields: {
          'str::email': `p${n}@list.bench`,
          'str::first': FIRSTS[n % FIRSTS.length] ?? 'X',
          'str::last': `L${n}`,
          'bol::p': true,
          'bol::sms': false,
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
  const { failure } = await runBounded(chunks, 4, (chunk) =>
    batchWrite(
      db,
      table,
      chunk.map((Item) => ({ PutRequest: { Item } })),
    ),
  );
  if (failure) throw failure.error;
  // The counters a listing reports, as the merges would have left them.
  await db.send(
    new PutCommand({
      TableName: table,
      Item: { pk: counterPk(INSTANCE), sk: '0', contacts: size, subscribers: size },
    }),
  );
}

/** The median time of a page, over `REPEATS` asks. */
async function pageMs(stack: BenchStack, body: () => unknown): Promise<number> {
  const times: number[] = [];
  for (let n = 0; n < REPEATS; n += 1) {
    const started = performance.now();
    const answer = await post(stack.base, KEY, '/v1/person/get', body());
    times.push(performance.now() - started);
    if (!Array.isArray(answer.contacts)) throw new Error('person get: no contacts');
  }
  return median(times);
}

/** A cursor of the default order that starts after the person in the middle. */
async function middleCursor(stack: BenchStack, ids: string[]): Promise<string> {
  const first = await post(stack.base, KEY, '/v1/person/get', { limit: 100 });
  const payload = String(first.cursor_id).split('.')[1] ?? '';
  const cursor = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<
    string,
    unknown
  >;
  const keyring = await signingKeyrings(
    new DynamoConfigStore(benchDb(), tableName('default', 'config')),
    new LocalKeyWrapper(),
  )();
  const sorted = [...ids].sort();
  return cursorCodec(keyring, INSTANCE).encode({
    ...cursor,
    after: sorted[Math.floor(sorted.length / 2)],
  });
}

const PAGES = [
  'first page',
  'middle page by cursor',
  'q "ann"',
  'q "ann", next page by cursor',
  'sorted by email',
  'filter first = Bob',
] as const;

/** What one page reads, counted in this process with the domain and a metering client. */
async function pageWork(body: unknown): Promise<string> {
  let meter: Meter = emptyMeter();
  const db = meteredDocumentClient(() => meter);
  const store = new DynamoPeopleStore(db, {
    people: tableName('default', 'people'),
    activities: tableName('default', 'activities'),
    organizations: tableName('default', 'organizations'),
  });
  const config = new DynamoConfigStore(db, tableName('default', 'config'));
  const tenant = await tenantOf(config, INSTANCE, 'List');
  const keyring = await signingKeyrings(config, new LocalKeyWrapper())();
  if (!tenant) throw new Error('no listing instance');
  meter = emptyMeter();
  await getPeople(
    PersonGetRequest.parse(body),
    tenant,
    { listing: store, fields: new DynamoFieldIndex(db, tableName('default', 'indexes')) },
    cursorCodec(keyring, INSTANCE),
  );
  return `${totalCalls(meter)} calls, ${fixed(total(meter.rcu))} RRU`;
}

export async function listingFigure(stack: BenchStack): Promise<FigureResult> {
  const ids: string[] = [];
  const times = new Map<string, number[]>();
  const work = new Map<string, string[]>();
  for (const size of sizes) {
    await grow(ids, size);
    const cursor = await middleCursor(stack, ids);
    const searched = await post(stack.base, KEY, '/v1/person/get', { limit: 100, q: 'ann' });
    const bodies: Record<(typeof PAGES)[number], () => unknown> = {
      'first page': () => ({ limit: 100 }),
      'middle page by cursor': () => ({ limit: 100, cursor_id: cursor }),
      'q "ann"': () => ({ limit: 100, q: 'ann' }),
      'q "ann", next page by cursor': () => ({
        limit: 100,
        q: 'ann',
        cursor_id: searched.cursor_id,
      }),
      'sorted by email': () => ({ limit: 100, sort_by_field_id: 'str::email', sort_order: 'asc' }),
      'filter first = Bob': () => ({
        limit: 100,
        filter: { '$str::is': { field_id: 'str::first', value: 'Bob' } },
      }),
    };
    for (const page of PAGES) {
      // Above 20,000 people a filter without an index is refused (docs/api.md): a 400.
      const ms = await pageMs(stack, bodies[page]).catch((error: unknown) => {
        if (page.startsWith('filter') && String(error).includes('HTTP 400')) return Number.NaN;
        throw error;
      });
      times.set(page, [...(times.get(page) ?? []), ms]);
      const counted = Number.isNaN(ms) ? 'refused' : await pageWork(bodies[page]());
      work.set(page, [...(work.get(page) ?? []), counted]);
    }
  }
  const rows: Row[] = PAGES.map((page) => {
    const measured = times.get(page) ?? [];
    const ratio = (measured.at(-1) ?? NaN) / (measured[0] ?? NaN);
    const indexed = !page.startsWith('filter');
    return {
      figure: '4 listing growth',
      measure: `${page}: ms at ${sizes.map((s) => s.toLocaleString('en')).join(' / ')} people (store work: ${(work.get(page) ?? []).join(' / ')})`,
      value: measured.map((ms) => (Number.isNaN(ms) ? 'refused (400)' : fixed(ms))).join(' / '),
      reference: `${sizes.at(-1)?.toLocaleString('en')} / ${sizes[0]?.toLocaleString('en')}`,
      ratio,
      ...(indexed
        ? { target: `≤ ${TARGET}`, met: ratio <= TARGET }
        : { target: 'reads everyone; refused above 20,000' }),
    };
  });
  return {
    rows,
    notes: [
      `Listing growth: pages of 100 over HTTP, median of ${REPEATS}, and the store work of each page (DynamoDB calls and read units, counted in-process with the domain and a metering client); people written straight to the store with the items a merge writes (every index key), 16 listing shards. The first page of a search also counts its matches (\`total_matches\`, up to 10,000, docs/api.md), so it grows until the count reaches that cap; its later pages carry the count in the cursor. A filter on a field without an index reads every person (batched), so it grows with the instance, and is refused above 20,000 people. The others read the same number of keys whatever the size.`,
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Figure 4: listing growth', await withBenchStack(listingFigure));
}
