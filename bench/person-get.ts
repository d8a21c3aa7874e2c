/**
 * Person listing benchmark: what one page of `POST /v1/person/get` costs (DynamoDB calls and
 * time) in creation order, with `q`, sorted by email, and with a filter, for instances of
 * growing size. Runs the domain in-process against the local stack's DynamoDB Local.
 *
 *   npm start            # in another terminal
 *   node --import tsx bench/person-get.ts [sizes, e.g. 500,2000]
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../shared/adapters/aws-clients.js';
import { DynamoPeopleStore } from '../shared/adapters/people-store.js';
import { mergePeople } from '../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../shared/domain/people/merge-request.js';
import { cursorCodec } from '../shared/domain/cursor.js';
import { getPeople, PersonGetRequest } from '../shared/domain/people/person-get.js';
import { createLocationServices } from '../shared/http/api-runtime.js';
import { tableName } from '../shared/resources.js';
import { localAwsEnv, readStackSettings } from '../local/settings.js';
import { benchTenant } from './bench-tenant.js';

const sizes = (process.argv[2] ?? '500,2000').split(',').map(Number);
Object.assign(process.env, localAwsEnv(readStackSettings()));

const client = new DynamoDBClient({});
let calls = 0;
client.middlewareStack.add(
  (next) => (args) => {
    calls += 1;
    return next(args);
  },
  { step: 'initialize', name: 'countCalls' },
);
const store = new DynamoPeopleStore(createDocumentClient(client), {
  people: tableName('default', 'people'),
  activities: tableName('default', 'activities'),
  organizations: tableName('default', 'organizations'),
});

const firsts = ['Ann', 'Bob', 'Cid', 'Dee', 'Eve', 'Fay', 'Gus', 'Hal'];
for (const size of sizes) {
  const tenant = benchTenant(`bench-list-${size}-${Date.now().toString(36)}`);
  const location = createLocationServices(store);
  const cursors = cursorCodec('bench-signing-secret-of-32-characters', tenant.instance.id);
  for (let start = 0; start < size; start += 100) {
    const people = Array.from({ length: Math.min(100, size - start) }, (_, i) => ({
      fields: {
        'str::email': `p${start + i}@list.bench`,
        'str::first': firsts[(start + i) % firsts.length] ?? 'X',
        'str::last': `L${start + i}`,
      },
    }));
    await mergePeople(PersonMergeRequest.parse({ people }), { tenant, store, location });
  }
  console.log(`\n${size} people:`);
  for (const [label, body] of [
    ['creation order, first page', { limit: 50 }],
    ['q "ann", first page', { limit: 50, q: 'ann' }],
    ['sorted by email', { limit: 50, sort_by_field_id: 'str::email', sort_order: 'asc' }],
    [
      'filter (full read)',
      { limit: 50, filter: { '$str::is': { field_id: 'str::first', value: 'Bob' } } },
    ],
  ] as const) {
    const request = PersonGetRequest.parse(body);
    calls = 0;
    const started = performance.now();
    const page = await getPeople(request, tenant, store, cursors);
    const ms = performance.now() - started;
    const first = calls;
    calls = 0;
    const startedNext = performance.now();
    await getPeople(
      PersonGetRequest.parse({ ...body, cursor_id: page.cursor_id, offset: page.next_offset }),
      tenant,
      store,
      cursors,
    );
    const nextMs = performance.now() - startedNext;
    console.log(
      `  ${label.padEnd(28)} ${String(first).padStart(4)} calls ${ms.toFixed(0).padStart(5)} ms; next page ${String(calls).padStart(4)} calls ${nextMs.toFixed(0).padStart(5)} ms`,
    );
  }
}
