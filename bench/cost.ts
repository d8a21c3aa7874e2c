/**
 * Figure 7, cost: DynamoDB write and read request units per person created, per unchanged
 * and per changed merge, per activity, per email accepted and per listing page, from
 * `ReturnConsumedCapacity` (indexes included), and what they cost per million at on-demand
 * prices. The domain runs in this process against the bench stack's DynamoDB Local with a
 * client that asks every call for its consumed capacity (bench/lib/metered-dynamodb.ts;
 * transactions are replayed item by item, since DynamoDB Local misreports their capacity).
 *
 *   node --import tsx bench/cost.ts              # a stack of its own
 */
import { readFileSync } from 'node:fs';
import { DynamoActivityStore } from '../shared/adapters/activity-store.js';
import { DynamoConfigStore } from '../shared/adapters/config-store.js';
import { DynamoLastSeenStore } from '../shared/adapters/last-seen-store.js';
import { runBounded } from '../shared/lib/bounded.js';
import { DynamoPeopleStore } from '../shared/adapters/people-store.js';
import { DynamoFieldIndex } from '../shared/adapters/field-index-store.js';
import { entryChanges } from '../shared/domain/people/field-index.js';
import type { Person } from '../shared/domain/people/person.js';
import {
  ActivitiesCreateRequest,
  recordActivities,
} from '../shared/domain/activities/record-activities.js';
import { issuedCursors } from '../shared/domain/cursor.js';
import { DynamoCursorStore } from '../shared/adapters/cursor-store.js';
import { sendTransactional } from '../shared/domain/email/send.js';
import { mergePeople } from '../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../shared/domain/people/merge-request.js';
import { getPeople, PersonGetRequest } from '../shared/domain/people/person-get.js';
import { tenantOf } from '../shared/domain/tenancy.js';
import {
  createEmailPorts,
  createLocationServices,
  emailLinks,
  signingKeyrings,
} from '../shared/http/api-runtime.js';
import { LocalKeyWrapper } from '../shared/adapters/key-wrappers.js';
import { ApiEnv, EmailWorkerEnv, IngestWorkerEnv, readEnv } from '../shared/config/env.js';
import { createS3Client, createSqsClient } from '../shared/adapters/aws-clients.js';
import { newId } from '../shared/domain/ids.js';
import { createIngestWorker } from '../shared/worker/ingest-runtime.js';
import { createEmailWorker } from '../shared/worker/email-runtime.js';
import { SqsEmailQueue } from '../shared/adapters/email-queue.js';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import type { Context, SQSRecord } from 'aws-lambda';
import { tableName } from '../shared/resources.js';
import {
  emptyMeter,
  meteredDocumentClient,
  total,
  totalCalls,
  type Meter,
} from './lib/metered-dynamodb.js';
import { toSqsEvent } from '../local/queue-poller.js';
import { fixed, printFigure, type FigureResult, type Row } from './lib/report.js';
import {
  BENCH_INSTANCE,
  isMain,
  withBenchStack,
  withStreamWorkersHeld,
  type BenchStack,
} from './lib/stack.js';

/** On-demand prices, us-east-1, as AWS lists them since November 2024 (USD). */
const PRICE_PER_MILLION_WRITES = 0.625;
const PRICE_PER_MILLION_READS = 0.125;

/** The environment the stack gave its default-region API (table, queue and bucket names). */
function useFunctionEnv(stack: BenchStack): void {
  const raw = readFileSync(`/proc/${stack.pids['the default API']}/environ`, 'utf8');
  for (const entry of raw.split('\0').filter(Boolean)) {
    const at = entry.indexOf('=');
    const name = entry.slice(0, at);
    if (!(name in process.env)) process.env[name] = entry.slice(at + 1);
  }
}

export async function costFigure(stack: BenchStack): Promise<FigureResult> {
  useFunctionEnv(stack);
  let meter: Meter = emptyMeter();
  const db = meteredDocumentClient(() => meter, true);
  const tables = {
    people: tableName('default', 'people'),
    activities: tableName('default', 'activities'),
    organizations: tableName('default', 'organizations'),
  };
  const store = new DynamoPeopleStore(db, tables);
  const activities = new DynamoActivityStore(db, tables);
  const config = new DynamoConfigStore(db, tableName('default', 'config'));
  const tenant = await tenantOf(config, BENCH_INSTANCE, 'Bench');
  if (!tenant) throw new Error('no bench instance');
  const location = createLocationServices(store);
  const run = `cost-${Date.now().toString(36)}`;
  const people = (last: string) =>
    Array.from({ length: 100 }, (_, i) => ({
      fields: {
        'str::email': `${run}-${i}@cost.bench`,
        'str::first': `First${i}`,
        'str::last': last,
      },
      tags: ['bench'],
    }));
  const rows: Row[] = [];
  /** What each row measured, said at length, with its writes by table and index. */
  const details: string[] = [];
  /** A row: `what` in a few words, `about` the rest of what it measured (for the note). */
  const measure = async (
    what: string,
    records: number,
    work: () => Promise<unknown>,
    about = '',
  ) => {
    meter = emptyMeter();
    await work();
    const wru = total(meter.wcu) / records;
    const rru = total(meter.rcu) / records;
    const calls = totalCalls(meter);
    const dollars = wru * PRICE_PER_MILLION_WRITES + rru * PRICE_PER_MILLION_READS;
    const byTable = Object.entries(meter.wcu)
      .filter(([, units]) => units > 0)
      .map(([table, units]) => `${table} ${fixed(units / records, 2)}`)
      .join(', ');
    rows.push({
      figure: '7 cost',
      measure: what,
      value: `${fixed(wru, 2)} WRU + ${fixed(rru, 2)} RRU, ${fixed(calls / records, 2)} calls`,
      reference: `$${fixed(dollars, 2)} per million`,
    });
    const callsText = `${calls} call${calls === 1 ? '' : 's'} for ${records}`;
    const said = [about, records > 1 ? callsText : '', byTable].filter(Boolean).join('; ');
    if (said) details.push(`${what.charAt(0).toUpperCase()}${what.slice(1)}: ${said}`);
  };
  // The field index's share of each write: the entries the people stream's worker moves
  // (docs/data-model.md, indexes), from each person as it was before the write to after it.
  const fieldIndex = new DynamoFieldIndex(db, tableName('default', 'indexes'));
  let merged: string[] = [];
  const mergeAll = async (last: string) => {
    const results = await mergePeople(PersonMergeRequest.parse({ people: people(last) }), {
      tenant,
      store,
      location,
    });
    merged = results.flatMap((result) => result.person_id ?? []);
  };
  const states = (ids: string[]) => store.getPeople(tenant.instance.id, ids);
  const indexShare = (
    what: string,
    before: Map<string, Person>,
    after: Map<string, Person>,
    about = '',
  ) =>
    measure(
      what,
      100,
      () =>
        runBounded([...after.keys()], 1, async (id) => {
          const { removed, added } = entryChanges(before.get(id), after.get(id));
          await fieldIndex.apply(tenant.instance.id, id, removed, added);
        }),
      about,
    );
  // The stack's own stream workers held meanwhile: they would write the same index entries
  // (and last seen) first, and the bench's writes would then be overwrites, which DynamoDB
  // Local reports at more units than the worker's own first write costs.
  await withStreamWorkersHeld(stack, async () => {
    await measure('per person created (request of 100)', 100, () => mergeAll('Bench'));
    const created = await states(merged);
    await indexShare(
      "per person created, the field index's share",
      new Map(),
      created,
      'an entry per stored value and tag',
    );
    await measure(
      'per unchanged merge (claim hints)',
      100,
      () => mergeAll('Bench'),
      'people the container has met',
    );
    const unchanged = await states(merged);
    await indexShare("per unchanged merge, the field index's share", created, unchanged);
    await measure(
      'per changed merge (last name)',
      100,
      () => mergeAll('Changed'),
      'two name indexes move',
    );
    await indexShare(
      "per changed merge, the field index's share",
      unchanged,
      await states(merged),
      "the old last name's entry out, the new one's in",
    );
    let touched: string[] = [];
    const recordSome = async (people: DynamoPeopleStore) => {
      const entries = await recordActivities(
        ActivitiesCreateRequest.parse({
          activities: Array.from({ length: 100 }, (_, i) => ({
            activity_id: 'act:cm:purchased',
            fields: { 'str::email': `${run}-${i % 20}@cost.bench` },
            attributes: { 'str:cm:item': `Item ${i}`, 'int:cm:price': 1000 + i },
          })),
        }),
        {
          tenant,
          people,
          activities,
          location,
          freshDefinitions: () => Promise.resolve(tenant.instance.activities),
        },
      );
      touched = [...new Set(entries.flatMap((entry) => entry.person_id ?? []))];
    };
    // A container that has not met these people reads their claims; one that has (the store
    // above merged them) reads only the people (claim hints, docs/data-model.md).
    await measure(
      'per activity (people new to the container)',
      100,
      () => recordSome(new DynamoPeopleStore(db, tables)),
      '100 activities of 20 existing people, tracked as a touch',
    );
    await measure(
      'per activity (claim hints)',
      100,
      () => recordSome(store),
      'the same; people the container has met',
    );
    // What the last-seen worker does for those 100 activities off the request path: one
    // conditional update per person of its stream batch.
    const lastSeen = new DynamoLastSeenStore(db, tables);
    const unseen = await states(touched);
    await measure(
      "per activity, the last-seen worker's share",
      100,
      () =>
        runBounded(touched, 16, async (id) => {
          await lastSeen.touch(tenant.instance.id, id, new Date().toISOString());
        }),
      'its batch of the 100 above',
    );
    await indexShare(
      "per activity, the field index's share of last seen",
      unseen,
      await states(touched),
      'its batch of the 100 above',
    );
  });
  // The ingest worker's share of queued activities: a batch of 10 messages of 100 activities
  // (20 existing people each), applied one after the other (as the worker once applied them)
  // and at once with their reads shared (the worker's default), each batch new requests.
  const sqs = createSqsClient();
  const s3 = createS3Client();
  /** A batch of 10 queued requests of 100 records (`body` gives message m's), as SQS hands it. */
  const ingestBatch = (label: string, kind: string, body: (m: number) => unknown) =>
    toSqsEvent(
      Array.from({ length: 10 }, (_, m) => ({
        MessageId: `cost-${label}-${m}`,
        ReceiptHandle: `cost-${m}`,
        Body: JSON.stringify({
          v: 1,
          request_id: newId(),
          instance_id: tenant.instance.id,
          data_source: 'Bench',
          kind,
          accepted_at: new Date().toISOString(),
          records: 100,
          body: body(m),
        }),
      })),
      'arn:aws:sqs:us-east-1:000000000000:cdp-default-ingest',
      'us-east-1',
    ).Records;
  // The worker as deployed (2 requests of a batch at a time) or one request after the other.
  const ingestWorker = (atOnce: number | false) =>
    createIngestWorker(
      readEnv(IngestWorkerEnv, { ...process.env, INGEST_MESSAGES_AT_ONCE: String(atOnce) }),
      { db, sqs, s3 },
    );
  /** A batch handed to a queue worker (ingest or email) as Lambda would; none may fail. */
  const apply = async (worker: ReturnType<typeof createIngestWorker>, records: SQSRecord[]) => {
    const answer = await worker({ Records: records }, {
      getRemainingTimeInMillis: () => 60_000,
    } as Context);
    if (answer.batchItemFailures.length > 0) throw new Error('a message of the batch failed');
  };
  for (const atOnce of [false, 2] as const) {
    const records = ingestBatch(String(atOnce), 'activities-create', (m) => ({
      activities: Array.from({ length: 100 }, (_, i) => ({
        activity_id: 'act:cm:purchased',
        fields: { 'str::email': `${run}-${m * 5 + (i % 20)}@cost.bench` },
        attributes: { 'str:cm:item': `Item ${i}`, 'int:cm:price': 1000 + i },
      })),
    }));
    const worker = ingestWorker(atOnce);
    await measure(
      `per activity queued, ${atOnce ? `${atOnce} requests at a time (the default)` : 'one request after another'}`,
      1000,
      () => apply(worker, records),
      `the ingest worker's batch of 10 requests of 100 (20 existing people each), ${atOnce ? `applied ${atOnce} at a time, reads shared` : 'applied one after the other'}`,
    );
  }
  // New people queued: their markers go after their transactions, one item for the people
  // of a request that shared one.
  const queuedPeople = ingestBatch('people', 'person-merge', (m) => ({
    people: Array.from({ length: 100 }, (_, i) => ({
      fields: { 'str::email': `${run}-queued-${m}-${i}@cost.bench` },
    })),
  }));
  const peopleWorker = ingestWorker(2);
  await measure(
    'per person created, queued',
    1000,
    () => apply(peopleWorker, queuedPeople),
    "the ingest worker's batch of 10 requests of 100 new people, applied 2 at a time (the default)",
  );
  const env = readEnv(ApiEnv);
  const email = createEmailPorts(db);
  const signingKeys = signingKeyrings(config, new LocalKeyWrapper());
  const links = emailLinks(env, signingKeys, email.env.PUBLIC_BASE_URL);
  /** 100 emails to the people merged above, each with a tracked link, into `queue`. */
  const sendHundred = async (queue: typeof email.queue, name: string) =>
    sendTransactional(
      {
        asset: {
          from_email: 'bench@mail.bench.test',
          subject: 'Hello {{ people.first-name }}',
          html_body: '<p>Hi {{ people.first-name }}, <a href="https://shop.example/">shop</a></p>',
          email_name: name,
        },
        emails: Array.from({ length: 100 }, (_, i) => ({
          fields: { 'str::email': `${run}-${i}@cost.bench` },
        })),
      },
      {
        tenant,
        people: { store, location },
        readPeople: (ids) => store.getPeople(tenant.instance.id, ids, true),
        templates: config,
        emails: email.store,
        queue,
        links: await links(tenant.instance.id),
        fallbackDomain: email.env.EMAIL_FALLBACK_DOMAIN,
        requestId: `${name}-${run}`,
      },
    );
  await measure(
    'per email accepted (existing recipients)',
    100,
    () => sendHundred(email.queue, 'cost'),
    "the worker's sending not included",
  );
  // The email worker's share of a sent email: 100 more emails accepted into a queue of the
  // bench's own (the stack's worker does not read it), handed to the worker in batches of 10
  // as SQS would, with the metered client. SES's events that follow are applied by the
  // stack's email-events worker (not metered: one `UpdateItem` of the email per event).
  const { QueueUrl: ownQueue } = await sqs.send(
    new CreateQueueCommand({ QueueName: `bench-cost-email-${Date.now().toString(36)}` }),
  );
  if (!ownQueue) throw new Error('no queue for the email worker');
  try {
    const sendEnv = { ...process.env, EMAIL_QUEUE_URL: ownQueue, SES_MAX_SEND_RATE: '1000' };
    await sendHundred(new SqsEmailQueue(sqs, ownQueue, s3, email.env.PAYLOADS_BUCKET), 'cost-sent');
    const jobs: Message[] = [];
    while (jobs.length < 100) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: ownQueue,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          VisibilityTimeout: 300,
        }),
      );
      if (Messages.length === 0) throw new Error(`only ${jobs.length} of 100 emails queued`);
      jobs.push(...Messages);
    }
    const emailWorker = createEmailWorker(readEnv(EmailWorkerEnv, sendEnv), { db });
    await measure(
      "per email sent, the email worker's share",
      100,
      async () => {
        for (let start = 0; start < jobs.length; start += 10) {
          const batch = jobs.slice(start, start + 10);
          await apply(
            emailWorker,
            toSqsEvent(batch, 'arn:aws:sqs:us-east-1:0:cost', 'us-east-1').Records,
          );
        }
      },
      "the claim; SES's acceptance and the sent activity in one transaction; the batch's reads shared",
    );
  } finally {
    await sqs.send(new DeleteQueueCommand({ QueueUrl: ownQueue })).catch(() => undefined);
  }
  const cursors = issuedCursors(
    await signingKeys(),
    tenant.instance.id,
    'person/get',
    new DynamoCursorStore(db, tableName('default', 'requests')),
  );
  const ports = {
    listing: store,
    fields: new DynamoFieldIndex(db, tableName('default', 'indexes')),
  };
  await measure('per listing page (first of 100, default order)', 1, () =>
    getPeople(PersonGetRequest.parse({ limit: 100 }), tenant, ports, cursors),
  );
  await measure('per listing page (q search, page of 100)', 1, () =>
    getPeople(PersonGetRequest.parse({ limit: 100, q: 'first1' }), tenant, ports, cursors),
  );
  // Pages of 500 (the real API's largest): enough people for two full pages first.
  for (let batch = 0; batch < 10; batch += 1) {
    await mergePeople(
      PersonMergeRequest.parse({
        people: Array.from({ length: 100 }, (_, i) => ({
          fields: { 'str::email': `${run}-page-${batch}-${i}@cost.bench` },
        })),
      }),
      { tenant, store, location },
    );
  }
  let next: string | undefined;
  await measure('per listing page (first of 500, default order)', 1, async () => {
    next = (await getPeople(PersonGetRequest.parse({ limit: 500 }), tenant, ports, cursors))
      .cursor_id;
  });
  await measure('per listing page (second of 500, its cursor)', 1, () =>
    getPeople(PersonGetRequest.parse({ limit: 500, cursor_id: next }), tenant, ports, cursors),
  );
  return {
    rows,
    notes: [
      `Cost: request units as DynamoDB Local reports them per call (ReturnConsumedCapacity INDEXES), transactions replayed item by item and their table writes counted twice (transactional); dollars at on-demand prices for us-east-1 (USD ${PRICE_PER_MILLION_WRITES} per million write request units, ${PRICE_PER_MILLION_READS} per million read request units). Each request also takes its rate-limit bucket (one small conditional write, 1 WRU) and, once a minute per container, its key and instance (cached reads): not included.`,
      `Cost, what each row measured, its calls and its writes per record by table and index: ${details.join('. ')}.`,
    ],
  };
}

if (isMain(import.meta.url)) {
  printFigure('Figure 7: cost', await withBenchStack(costFigure));
}
