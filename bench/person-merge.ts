/**
 * Person merge benchmark: 100 people a request, created then updated, against the local
 * stack (`npm start` must be running; ports from the usual variables). Prints the median
 * time of several requests over HTTP, and the DynamoDB round trips one request makes (the
 * domain run in-process with a counting client against the same DynamoDB Local).
 *
 *   npm start            # in another terminal
 *   node --import tsx bench/person-merge.ts [runs]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../shared/adapters/aws-clients.js';
import { DynamoPeopleStore } from '../shared/adapters/people-store.js';
import { mergePeople } from '../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../shared/domain/people/merge-request.js';
import { createLocationServices } from '../shared/http/api-runtime.js';
import { tableName } from '../shared/resources.js';
import { localAwsEnv, readStackSettings } from '../local/settings.js';
import { benchTenant } from './bench-tenant.js';

const runs = Number(process.argv[2] ?? 7);
const settings = readStackSettings();
Object.assign(process.env, localAwsEnv(settings));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

function people(tag: string) {
  return Array.from({ length: 100 }, (_, i) => ({
    fields: {
      'str::email': `${tag}-${i}@bench.test`,
      'str::first': `First ${i}`,
      'str::last': 'Bench',
    },
    tags: ['bench'],
  }));
}

async function overHttp(): Promise<void> {
  const keys = JSON.parse(readFileSync(join(settings.dataDir, 'demo-keys.json'), 'utf8')) as {
    default: string;
  };
  const url = `http://${settings.host}:${settings.port}/v1/person/merge`;
  const post = async (body: unknown) => {
    const started = performance.now();
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'x-api-key': process.env.CDP_API_KEY ?? keys.default,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    return performance.now() - started;
  };
  const creates: number[] = [];
  const updates: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const tag = `http-${Date.now().toString(36)}-${run}`;
    creates.push(await post({ people: people(tag) }));
    updates.push(
      await post({
        people: people(tag).map((p) => ({ ...p, fields: { ...p.fields, 'str::last': 'Updated' } })),
      }),
    );
  }
  console.log(`HTTP, 100 people a request, median of ${runs}:`);
  console.log(
    `  create ${median(creates).toFixed(0)} ms   update ${median(updates).toFixed(0)} ms`,
  );
}

async function roundTrips(): Promise<void> {
  const client = new DynamoDBClient({});
  const calls: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => (args) => {
      const name = context.commandName ?? 'unknown';
      calls[name] = (calls[name] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name: 'countCalls' },
  );
  const store = new DynamoPeopleStore(createDocumentClient(client), {
    people: tableName('default', 'people'),
    activities: tableName('default', 'activities'),
    organizations: tableName('default', 'organizations'),
  });
  const tenant = benchTenant('bench');
  const measure = async (label: string, body: unknown) => {
    for (const key of Object.keys(calls)) calls[key] = 0;
    const started = performance.now();
    await mergePeople(PersonMergeRequest.parse(body), {
      tenant,
      store,
      location: createLocationServices(store),
    });
    const ms = performance.now() - started;
    const total = Object.values(calls).reduce((a, b) => a + b, 0);
    console.log(
      `  ${label}: ${total} DynamoDB calls ${JSON.stringify(calls)} in ${ms.toFixed(0)} ms`,
    );
  };
  const tag = `rt-${Date.now().toString(36)}`;
  console.log('DynamoDB round trips of one 100-person request (in-process):');
  await measure('create', { people: people(tag) });
  await measure('update', {
    people: people(tag).map((p) => ({ ...p, fields: { ...p.fields, 'str::last': 'Updated' } })),
  });
  await measure('no change', {
    people: people(tag).map((p) => ({ ...p, fields: { ...p.fields, 'str::last': 'Updated' } })),
  });
}

await overHttp();
await roundTrips();
