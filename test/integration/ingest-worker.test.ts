import { DynamoMembershipStore } from '../../shared/adapters/audience-membership-store.js';
import { DynamoAudienceStore } from '../../shared/adapters/audience-store.js';
import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { describe, expect, it } from '@jest/globals';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueUrlCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  BatchWriteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { gunzipSync } from 'node:zlib';
import { DynamoActivityStore } from '../../shared/adapters/activity-store.js';
import { createS3Client, createSqsClient } from '../../shared/adapters/aws-clients.js';
import { DynamoConfigStore } from '../../shared/adapters/config-store.js';
import { OfflineGeocoder } from '../../shared/adapters/geocoders.js';
import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { DynamoPeopleStore } from '../../shared/adapters/people-store.js';
import { DynamoRequestStore } from '../../shared/adapters/request-store.js';
import { ServiceUnavailableError } from '../../shared/domain/errors.js';
import {
  acceptIngest,
  applyIngest,
  type IngestMessage,
} from '../../shared/domain/ingest/ingest.js';
import type { LocationServices } from '../../shared/domain/location.js';
import { preparePeopleMerge } from '../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../shared/domain/people/merge-request.js';
import { tenantOf } from '../../shared/domain/tenancy.js';
import type { HttpHandler } from '../../shared/http/api-handler.js';
import { withDeadline } from '../../shared/lib/time-budget.js';
import { localBucketName, queueName, tableName } from '../../shared/resources.js';
import { createIngestWorker, ingestPorts } from '../../shared/worker/ingest-runtime.js';
import { IngestWorkerEnv, readEnv } from '../../shared/config/env.js';
import { DynamoPeopleLifecycleStore } from '../../shared/adapters/people-lifecycle-store.js';
import { DynamoOrganizationLifecycleStore } from '../../shared/adapters/organization-lifecycle-store.js';
import { toSqsEvent } from '../../local/queue-poller.js';
import { adminEnv, run } from './cli.js';
import { activitiesOf, meta } from './people.js';
import {
  KEYS,
  call,
  functionContext,
  functionEnv,
  postEvent,
  stackAwsEnv,
  stackDb,
} from './stack.js';

/**
 * The ingest worker's guarantees, run in-process against the test stack's tables (so a
 * delivery can be repeated, or made to fail part-way, at will), and the dead-letter path
 * through the stack's own queues and the admin CLI.
 */
const { db } = stackDb();
const tables = {
  people: tableName('default', 'people'),
  activities: tableName('default', 'activities'),
  organizations: tableName('default', 'organizations'),
  requests: tableName('default', 'requests'),
};
const requests = new DynamoRequestStore(db, tables.requests);
const config = new DynamoConfigStore(db, tableName('default', 'config'));
const location: LocationServices = {
  ipLocator: { locate: () => Promise.resolve(undefined) },
  geocoder: new OfflineGeocoder(),
  meter: { record: () => Promise.resolve() },
};

function ports(people = new DynamoPeopleStore(db, tables), requestStore = requests) {
  return ingestPorts({
    requests: requestStore,
    config,
    directory: config,
    people,
    organizations: new DynamoOrganizationStore(db, tables.organizations, tables.requests),
    activities: new DynamoActivityStore(db, tables),
    location,
    suppression: new DynamoEmailStore(db, { emails: tableName('default', 'emails') }),
    audiences: {
      audiences: new DynamoAudienceStore(db, {
        config: tableName('default', 'config'),
        audiences: tableName('default', 'audiences'),
      }),
      people,
      memberships: new DynamoMembershipStore(db, { audiences: tableName('default', 'audiences') }),
    },
    lifecycle: {
      people: new DynamoPeopleLifecycleStore(db, {
        ...tables,
        emails: tableName('default', 'emails'),
      }),
      organizations: new DynamoOrganizationLifecycleStore(db, tables),
    },
    requeue: () => Promise.reject(new Error('these requests are never queued again')),
  });
}

let n = 0;
const requestId = () =>
  `${Date.now().toString(16).padStart(12, '0')}${(n += 1).toString(16).padStart(12, '0')}`;
const email = (label: string) => `${label}-${Date.now().toString(36)}-${(n += 1)}@worker.test`;

function message(
  kind: IngestMessage['kind'],
  body: Record<string, unknown>,
  records: number,
): IngestMessage {
  return {
    v: 1,
    request_id: requestId(),
    instance_id: 'worker',
    data_source: 'Web',
    kind,
    accepted_at: new Date().toISOString(),
    records,
    body,
  };
}

/** A queued request of sign-up activities, one for each address given (plan-0, plan-1, …). */
function signUps(addresses: readonly string[]): IngestMessage {
  return message(
    'activities-create',
    {
      activities: addresses.map((address, i) => ({
        activity_id: 'act:cm:signed-up',
        fields: { 'str::email': address },
        attributes: { 'str:cm:plan': `plan-${i}` },
      })),
    },
    addresses.length,
  );
}

/** A delivery that applies the request and dies before it can record its answer. */
async function dieBeforeAnswer(
  queued: IngestMessage,
  store = new DynamoRequestStore(db, tables.requests),
) {
  store.finish = () => Promise.reject(new Error('crashed'));
  await expect(applyIngest(queued, ports(undefined, store))).rejects.toThrow('crashed');
}

async function status(id: string) {
  return (await call('/v1/async/get', { key: KEYS.worker, body: { request_id: id } })).body;
}

async function claimOwner(address: string) {
  const { Item } = await db.send(
    new GetCommand({
      TableName: tables.people,
      Key: { pk: `worker#K#str::email#${address}`, sk: 'K' },
      ConsistentRead: true,
    }),
  );
  return Item?.owner_id as string | undefined;
}

describe('the status of an asynchronous request', () => {
  it('is queued, then processing, then done with the answer', async () => {
    const tenant = await tenantOf(config, 'worker', 'Web');
    if (!tenant) throw new Error('no tenant');
    const sent: IngestMessage[] = [];
    const body = PersonMergeRequest.parse({
      async: true,
      people: [{ fields: { 'str::email': email('st') } }],
    });
    const accepted = await acceptIngest(
      { kind: 'person-merge', body, records: 1, check: () => preparePeopleMerge(body, tenant) },
      tenant,
      { queue: { send: (m) => Promise.resolve(void sent.push(m)) }, requests },
    );
    const [queued] = sent;
    if (!queued) throw new Error('nothing queued');
    expect(queued.body).not.toHaveProperty('async');
    expect(await status(accepted.request_id)).toEqual({
      request_id: accepted.request_id,
      status: 'queued',
    });
    await requests.start('worker', { ...queued, request_id: queued.request_id });
    expect((await status(accepted.request_id)).status).toBe('processing');
    await applyIngest(queued, ports());
    const done = await status(accepted.request_id);
    expect(done).toMatchObject({ status: 'done', result: { people: [{ status: 'created' }] } });
  });

  it('is failed, with the reason, when the request cannot be applied', async () => {
    const gone = {
      ...message('person-merge', { people: [{ fields: { 'str::email': email('gone') } }] }, 1),
      data_source: 'Removed',
    };
    await applyIngest(gone, ports());
    expect(await status(gone.request_id)).toEqual({
      request_id: gone.request_id,
      status: 'failed',
      code: 401,
      error: 'the data source "Removed" of instance worker no longer exists',
    });
  });
});

describe('exactly-once effect', () => {
  it('changes nothing when a message is delivered again, even at the same time', async () => {
    const addresses = [email('twice'), email('twice')];
    const queued = message(
      'person-merge',
      {
        people: addresses.map((address) => ({ fields: { 'str::email': address }, tags: ['once'] })),
      },
      2,
    );
    const before = (await meta(KEYS.worker)).total_contacts ?? 0;
    await Promise.all([applyIngest(queued, ports()), applyIngest(queued, ports())]);
    await applyIngest(queued, ports());
    const after = (await meta(KEYS.worker)).total_contacts ?? 0;
    expect(after - before).toBe(2);
    const result = (await status(queued.request_id)).result as {
      people: { person_id: string; status: string }[];
    };
    expect(result.people.map((p) => p.status)).toEqual(['created', 'created']);
    for (const [i, address] of addresses.entries()) {
      expect(await claimOwner(address)).toBe(result.people[i]?.person_id);
    }
  });

  it('leaves one copy of everything when a delivery fails half-way and comes again', async () => {
    const addresses = Array.from({ length: 20 }, () => email('halfway'));
    const queued = message(
      'person-merge',
      { people: addresses.map((address) => ({ fields: { 'str::email': address } })) },
      20,
    );
    const before = (await meta(KEYS.worker)).total_contacts ?? 0;
    const failing = new DynamoPeopleStore(db, tables);
    const createPerson = failing.createPerson.bind(failing);
    let creates = 0;
    failing.createPerson = async (...args) => {
      creates += 1;
      if (creates > 7) throw new ServiceUnavailableError('the store went away');
      await createPerson(...args);
    };
    const first = await withDeadline(Date.now() + 6_000, () =>
      applyIngest(queued, ports(failing)),
    ).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(ServiceUnavailableError);
    expect((await status(queued.request_id)).status).toBe('processing');
    const partial = (await meta(KEYS.worker)).total_contacts ?? 0;
    expect(partial - before).toBe(7);

    await applyIngest(queued, ports());
    const after = (await meta(KEYS.worker)).total_contacts ?? 0;
    expect(after - before).toBe(20);
    const result = (await status(queued.request_id)).result as {
      people: { person_id: string; status: string }[];
    };
    expect(result.people.map((p) => p.status)).toEqual(addresses.map(() => 'created'));
    const owners = await Promise.all(addresses.map(claimOwner));
    expect(owners).toEqual(result.people.map((p) => p.person_id));
  });

  it('records each activity once however often its message is applied', async () => {
    const address = email('acts');
    const queued = signUps([address, address, address]);
    // The first delivery dies before it can record its answer: the next applies it again.
    await dieBeforeAnswer(queued);
    await applyIngest(queued, ports());
    await applyIngest(queued, ports());
    const result = (await status(queued.request_id)).result as {
      activities: { person_id: string; activity_id: string; status: string }[];
    };
    expect(result.activities.map((a) => a.status)).toEqual(['ingested', 'ingested', 'ingested']);
    expect(new Set(result.activities.map((a) => a.activity_id)).size).toBe(3);
    const timeline = await activitiesOf(KEYS.worker, result.activities[0]?.person_id ?? '');
    expect(timeline.filter((a) => a.field_id === 'act:cm:signed-up')).toHaveLength(3);
  });
});

describe('the ledger of a request', () => {
  /** A request store whose ledger reads (queries of a request's outcomes) are counted. */
  function countingRequests() {
    const reads: string[] = [];
    const counting = new Proxy(db, {
      get(target, property, receiver) {
        if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
        // Every command comes through here; only queries of a ledger are counted.
        return (command: QueryCommand) => {
          const values = command.input.ExpressionAttributeValues ?? {};
          if (command instanceof QueryCommand && values[':from'] === 'N#') {
            reads.push(String(values[':pk']));
          }
          return target.send(command);
        };
      },
    });
    return { store: new DynamoRequestStore(counting, tables.requests), reads };
  }

  it("is not read on a request's first delivery, and read once on a later one", async () => {
    // Three new people: each record writes (a record that writes nothing is noted, and the
    // notes are read back for a duplicate delivery running beside this one).
    const queued = signUps([email('ledger'), email('ledger'), email('ledger')]);
    // The first delivery records everything but its answer (it dies before): no earlier
    // delivery can have recorded anything, so it reads no outcomes before writing.
    const first = countingRequests();
    await dieBeforeAnswer(queued, first.store);
    expect(first.reads).toEqual([]);
    // The next delivery finds the outcomes of the first, with one read, and applies nothing
    // again.
    const again = countingRequests();
    await applyIngest(queued, ports(undefined, again.store));
    expect(again.reads).toHaveLength(1);
    const result = (await status(queued.request_id)).result as {
      activities: { person_id: string; status: string }[];
    };
    expect(result.activities.map((a) => a.status)).toEqual(['ingested', 'ingested', 'ingested']);
    for (const entry of result.activities) {
      const timeline = await activitiesOf(KEYS.worker, entry.person_id);
      expect(timeline.filter((a) => a.field_id === 'act:cm:signed-up')).toHaveLength(1);
    }
  });
  it('is not read back after noting records that wrote nothing on the first delivery', async () => {
    const address = email('noted');
    await applyIngest(
      message('person-merge', { people: [{ fields: { 'str::email': address } }] }, 1),
      ports(),
    );
    // Activities of a person who exists: the person's record writes nothing (it is noted).
    const queued = signUps([address, address]);
    const first = countingRequests();
    await applyIngest(queued, ports(undefined, first.store));
    expect(first.reads).toEqual([]);
    const result = (await status(queued.request_id)).result as {
      activities: { person_id: string; person_status: string; status: string }[];
    };
    expect(result.activities.map((a) => [a.person_status, a.status])).toEqual([
      ['merged', 'ingested'],
      ['merged', 'ingested'],
    ]);
  });

  it("keeps a dead first delivery's activities on the person it found, though the address has moved to someone else since", async () => {
    // The first delivery's note (the person each activity went to, written before the
    // activities) is what the next delivery answers with: without it, the next would find the
    // address on its new owner and write each activity a second time, on that person.
    const address = email('moved');
    const merge = (body: Record<string, unknown>) =>
      call('/v1/person/merge', { key: KEYS.worker, body });
    const signedUp = async (id: string) =>
      (await activitiesOf(KEYS.worker, id)).filter((a) => a.field_id === 'act:cm:signed-up');
    const first = await merge({ people: [{ fields: { 'str::email': address } }] });
    const owner = (first.body as { people: { person_id: string }[] }).people[0]?.person_id ?? '';
    const queued = signUps([address, address]);
    await dieBeforeAnswer(queued);
    expect(await signedUp(owner)).toHaveLength(2);
    // The address moves: its owner takes another, and a new person takes it.
    const renamed = await merge({
      people: [{ fields: { 'str::person_id': owner, 'str::email': email('renamed') } }],
      merge_by: ['str::person_id'],
    });
    expect(renamed.status).toBe(200);
    const taken = await merge({ people: [{ fields: { 'str::email': address } }] });
    const newOwner = (taken.body as { people: { person_id: string; status: string }[] }).people[0];
    expect(newOwner?.status).toBe('created');
    expect(await claimOwner(address)).toBe(newOwner?.person_id);

    await applyIngest(queued, ports());
    const answer = (await status(queued.request_id)).result as {
      activities: { person_id: string; status: string }[];
    };
    expect(answer.activities.map((a) => [a.person_id, a.status])).toEqual([
      [owner, 'ingested'],
      [owner, 'ingested'],
    ]);
    expect(await signedUp(owner)).toHaveLength(2);
    expect(await signedUp(newOwner?.person_id ?? '')).toEqual([]);
  });

  it("builds a first delivery's answer again from the whole ledger when another delivery started after it", async () => {
    const address = email('overtaken');
    const queued = message('person-merge', { people: [{ fields: { 'str::email': address } }] }, 1);
    // The first delivery is overtaken before it reads anything: a duplicate of its message
    // starts after it, creates the person, and dies before it can record its answer. The
    // first then finds the person as it is (nothing to write), notes that without reading the
    // ledger back, and must not keep "merged" as the answer, nor leave the request unfinished.
    const overtaken = new DynamoRequestStore(db, tables.requests);
    const ledgerOf = overtaken.ledger.bind(overtaken);
    const crashing = new DynamoRequestStore(db, tables.requests);
    crashing.finish = () => Promise.reject(new Error('crashed'));
    let duplicate: Promise<unknown> | undefined;
    overtaken.ledger = (instanceId, id, firstDelivery) => {
      const ledger = ledgerOf(instanceId, id, firstDelivery);
      if (!firstDelivery) return ledger;
      const recordedBefore = ledger.recordedBefore.bind(ledger);
      ledger.recordedBefore = async () => {
        duplicate ??= applyIngest(queued, ports(undefined, crashing)).catch(
          (error: unknown) => error,
        );
        await duplicate;
        return recordedBefore();
      };
      return ledger;
    };
    await applyIngest(queued, ports(undefined, overtaken));
    expect(await duplicate).toEqual(new Error('crashed'));
    // The answer is what the duplicate did (it created the person): not "merged".
    const answer = await status(queued.request_id);
    const result = answer.result as { people: { person_id: string; status: string }[] };
    expect(answer.status).toBe('done');
    expect(result.people.map((p) => p.status)).toEqual(['created']);
    expect(result.people[0]?.person_id).toBe(await claimOwner(address));
  });

  it("puts a request's new people's markers once its merge is over, and knows the people by their origin when the markers are lost", async () => {
    const addresses = [email('origin'), email('origin'), email('origin')];
    const queued = message(
      'person-merge',
      { people: addresses.map((address) => ({ fields: { 'str::email': address } })) },
      3,
    );
    // The first delivery's transactions carry no marker; its marker puts fail (the store
    // went away right after the people were created), so the delivery fails.
    let transactedMarkers = 0;
    const losing = new Proxy(db, {
      get(target, property, receiver) {
        if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
        return (command: unknown) => {
          if (command instanceof TransactWriteCommand) {
            const items = command.input.TransactItems ?? [];
            transactedMarkers += items.filter(
              (item) => item.Put?.TableName === tables.requests,
            ).length;
          }
          if (
            command instanceof BatchWriteCommand &&
            Object.keys(command.input.RequestItems ?? {}).includes(tables.requests)
          ) {
            return Promise.reject(new ServiceUnavailableError('the store went away'));
          }
          return target.send(command as QueryCommand);
        };
      },
    });
    const before = (await meta(KEYS.worker)).total_contacts ?? 0;
    await expect(
      applyIngest(queued, ports(new DynamoPeopleStore(losing, tables))),
    ).rejects.toThrow();
    expect(transactedMarkers).toBe(0);
    const owners = await Promise.all(addresses.map(claimOwner));
    expect(owners.every((owner) => typeof owner === 'string')).toBe(true);
    expect(await requests.ledger('worker', queued.request_id).recorded()).toEqual(new Map());

    // The next delivery finds each person created by its own record: "created", nothing
    // applied twice, and the outcomes are in the ledger now.
    await applyIngest(queued, ports());
    const result = (await status(queued.request_id)).result as {
      people: { person_id: string; status: string }[];
    };
    expect(result.people).toEqual(owners.map((id) => ({ person_id: id, status: 'created' })));
    expect(((await meta(KEYS.worker)).total_contacts ?? 0) - before).toBe(3);
    const recorded = await requests.ledger('worker', queued.request_id).recorded();
    expect([...recorded.values()]).toEqual(owners.map((id) => ({ id, status: 'created' })));

    // A request whose markers are put: its hundred new people (200 items: several shared
    // transactions) have their outcomes in one item (not an item each, nor one per
    // transaction), which the ledger reads as their markers.
    const hundred = Array.from({ length: 100 }, () => email('origin'));
    const next = message(
      'person-merge',
      { people: hundred.map((a) => ({ fields: { 'str::email': a } })) },
      100,
    );
    let transactions = 0;
    const counting = new Proxy(db, {
      get(target, property, receiver) {
        if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
        return (command: unknown) => {
          if (command instanceof TransactWriteCommand) transactions += 1;
          return target.send(command as QueryCommand);
        };
      },
    });
    await applyIngest(next, ports(new DynamoPeopleStore(counting, tables)));
    expect(transactions).toBeGreaterThan(1);
    const markers = await requests.ledger('worker', next.request_id).recorded();
    expect([...markers.keys()].sort((a, b) => a - b)).toEqual(hundred.map((_, i) => i));
    expect(new Set([...markers.values()].map((outcome) => outcome.status))).toEqual(
      new Set(['created']),
    );
    const { Items: ledgerItems = [] } = await db.send(
      new QueryCommand({
        TableName: tables.requests,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `worker#REQ#${next.request_id}` },
      }),
    );
    const groups = ledgerItems.filter((item) => String(item.sk).startsWith('R#G#'));
    expect(ledgerItems.map((item) => String(item.sk).slice(0, 4)).sort()).toEqual(['R#G#', 'REQ']);
    const packed = groups[0]?.outcomes_gz as Uint8Array;
    expect(Object.keys(JSON.parse(gunzipSync(packed).toString('utf8')) as object)).toHaveLength(
      100,
    );
  });
});

describe('the ledger’s notes and groups', () => {
  it('are stored as gzipped JSON, and a note or group kept as a map before is still read', async () => {
    // A request of records that wrote nothing (existing people, unchanged): their note.
    const known = Array.from({ length: 40 }, () => email('note'));
    await applyIngest(
      message('person-merge', { people: known.map((a) => ({ fields: { 'str::email': a } })) }, 40),
      ports(),
    );
    const again = message(
      'person-merge',
      { people: known.map((a) => ({ fields: { 'str::email': a } })) },
      40,
    );
    await applyIngest(again, ports());
    const pk = `worker#REQ#${again.request_id}`;
    const { Items = [] } = await db.send(
      new QueryCommand({
        TableName: tables.requests,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :note)',
        ExpressionAttributeValues: { ':pk': pk, ':note': 'N#' },
      }),
    );
    expect(Items).toHaveLength(1);
    expect(Items[0]?.outcomes).toBeUndefined();
    const packed = Items[0]?.outcomes_gz as Uint8Array;
    const noted = JSON.parse(gunzipSync(packed).toString('utf8')) as Record<string, unknown>;
    expect(Object.keys(noted)).toHaveLength(40);
    expect(packed.byteLength).toBeLessThan(JSON.stringify(noted).length / 2);
    const answer = (await status(again.request_id)).result as {
      people: { person_id: string; status: string }[];
    };
    const ledger = await requests.ledger('worker', again.request_id).recorded();
    expect([...ledger].sort(([a], [b]) => a - b)).toEqual(
      answer.people.map((person, index) => [index, { id: person.person_id, status: 'merged' }]),
    );

    // Items of the form before (maps) are read as they were.
    const before = `${again.request_id}x`;
    const put = (sk: string, outcomes: Record<string, unknown>) =>
      db.send(
        new PutCommand({
          TableName: tables.requests,
          Item: {
            pk: `worker#REQ#${before}`,
            sk,
            outcomes,
            expires_at: Math.floor(Date.now() / 1000) + 3600,
          },
        }),
      );
    await put('N#2026-11-01T00:00:00.000Z#a', { 0: { id: 'p0', status: 'skipped' } });
    await put('R#G#b', { 1: { id: 'p1', status: 'created' } });
    expect([...(await requests.ledger('worker', before).recorded())]).toEqual([
      [0, { id: 'p0', status: 'skipped' }],
      [1, { id: 'p1', status: 'created' }],
    ]);
  });
});

describe('the kept answer', () => {
  it('is stored gzipped, and an answer kept as JSON text before is still read', async () => {
    const queued = message(
      'person-merge',
      {
        people: Array.from({ length: 50 }, () => ({ fields: { 'str::email': email('gz') } })),
      },
      50,
    );
    await applyIngest(queued, ports());
    const key = { pk: `worker#REQ#${queued.request_id}`, sk: 'REQ' };
    const { Item } = await db.send(
      new GetCommand({ TableName: tables.requests, Key: key, ConsistentRead: true }),
    );
    const answer = (await status(queued.request_id)).result as {
      people: { person_id: string; status: string }[];
    };
    expect(answer.people).toHaveLength(50);
    expect(Item?.result_json).toBeUndefined();
    const stored = Item?.result_gz as Uint8Array;
    expect(JSON.parse(gunzipSync(stored).toString('utf8'))).toEqual(answer);
    expect(stored.byteLength).toBeLessThan(JSON.stringify(answer).length / 2);

    const before = { people: [{ person_id: answer.people[0]?.person_id, status: 'merged' }] };
    await db.send(
      new PutCommand({
        TableName: tables.requests,
        Item: {
          pk: `worker#REQ#${queued.request_id}x`,
          sk: 'REQ',
          request_id: `${queued.request_id}x`,
          kind: 'person-merge',
          status: 'done',
          records: 1,
          accepted_at: queued.accepted_at,
          result_json: JSON.stringify(before),
          expires_at: Math.floor(Date.now() / 1000) + 3600,
        },
      }),
    );
    const old = await status(`${queued.request_id}x`);
    expect(old).toEqual({ request_id: `${queued.request_id}x`, status: 'done', result: before });
  });
});

/**
 * The stack's client with `around` called for each request-state update (the `REQ` item): its
 * update expression, and the call to make it.
 */
function aroundRequestUpdates(
  around: (expression: string, send: () => Promise<unknown>) => Promise<unknown>,
) {
  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return (command: unknown) => {
        const input = (command as { input?: { Key?: { sk?: unknown }; UpdateExpression?: string } })
          .input;
        const send = () => target.send(command as Parameters<typeof target.send>[0]);
        return input?.Key?.sk === 'REQ' && input.UpdateExpression
          ? around(input.UpdateExpression, send)
          : send();
      };
    },
  });
}

/**
 * A client whose request starts (`ADD attempts`) each wait until `starting` requests have
 * started (or 20 s): `together()` says whether they were all under way at the same time.
 */
function startBarrier(starting: number) {
  let started = 0;
  let together = false;
  let release: () => void = () => undefined;
  const allStarted = new Promise<void>((resolve) => {
    release = resolve;
  });
  let waitedOut = false;
  const timeout = setTimeout(() => {
    waitedOut = true;
    release();
  }, 20_000); // only a failing run waits it out: a loaded machine's slow start must not
  const client = aroundRequestUpdates(async (expression, send) => {
    if (expression.includes('ADD attempts')) {
      started += 1;
      if (started === starting) {
        together = !waitedOut;
        release();
      }
      await allStarted;
    }
    return send();
  });
  return {
    client,
    together: () => {
      clearTimeout(timeout);
      return together;
    },
  };
}

/** Hands the worker one batch of the ingest queue's messages (IDs `<prefix>-<n>`), with a minute. */
function deliverBatch(
  worker: ReturnType<typeof createIngestWorker>,
  prefix: string,
  bodies: string[],
) {
  return worker(
    toSqsEvent(
      bodies.map((Body, i) => ({
        MessageId: `${prefix}-${i}`,
        ReceiptHandle: `${prefix}-${i}`,
        Body,
      })),
      'arn:aws:sqs:us-east-1:000000000000:cdp-default-ingest',
      'us-east-1',
    ),
    { ...functionContext, getRemainingTimeInMillis: () => 60_000 },
  );
}

describe('a batch of messages', () => {
  it('applies its messages at once with INGEST_MESSAGES_AT_ONCE=true, each once, and names only the failing one in its partial batch response', async () => {
    functionEnv({ AUDIENCES_TABLE: tableName('default', 'audiences') });
    // Every message that gets as far as starting its request waits here for the others: the
    // batch goes on only once all of them are under way at the same time (or after 20 s).
    const barrier = startBarrier(4);
    const worker = createIngestWorker(
      readEnv(IngestWorkerEnv, { ...process.env, INGEST_MESSAGES_AT_ONCE: 'true' }),
      {
        db: barrier.client,
        sqs: createSqsClient(),
        s3: createS3Client(),
      },
    );

    const address = email('batch-acts');
    const acts = signUps([address, address, address]);
    const addresses = [email('batch-merge'), email('batch-merge')];
    const merge = message(
      'person-merge',
      { people: addresses.map((a) => ({ fields: { 'str::email': a } })) },
      2,
    );
    const invalid = message('person-merge', { people: [{ fields: { 'str::email': 7 } }] }, 1);
    const bodies = [
      JSON.stringify(acts),
      'not a message', // fails (not JSON): retried alone
      JSON.stringify(merge),
      JSON.stringify(acts), // the same message delivered twice, in the same batch
      JSON.stringify(invalid),
    ];
    const before = (await meta(KEYS.worker)).total_contacts ?? 0;
    const answer = await deliverBatch(worker, 'batch', bodies);
    expect(barrier.together()).toBe(true);
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: 'batch-1' }]);

    const acted = await status(acts.request_id);
    expect(acted.status).toBe('done');
    const entries = (acted.result as { activities: { person_id: string; status: string }[] })
      .activities;
    expect(entries.map((entry) => entry.status)).toEqual(['ingested', 'ingested', 'ingested']);
    const timeline = await activitiesOf(KEYS.worker, entries[0]?.person_id ?? '');
    expect(timeline.filter((a) => a.field_id === 'act:cm:signed-up')).toHaveLength(3);
    expect(await claimOwner(address)).toBe(entries[0]?.person_id);

    const merged = await status(merge.request_id);
    expect(merged.status).toBe('done');
    const people = (merged.result as { people: { person_id: string; status: string }[] }).people;
    expect(people.map((p) => p.status)).toEqual(['created', 'created']);
    for (const [i, a] of addresses.entries())
      expect(await claimOwner(a)).toBe(people[i]?.person_id);
    // Three people in all: the activities' one (twice delivered) and the merge's two.
    expect(((await meta(KEYS.worker)).total_contacts ?? 0) - before).toBe(3);

    expect(await status(invalid.request_id)).toMatchObject({ status: 'failed', code: 400 });
  });

  it('applies two of its requests at a time by default, the next as one ends', async () => {
    functionEnv({ AUDIENCES_TABLE: tableName('default', 'audiences') });
    let running = 0;
    let mostRunning = 0;
    const gauge = aroundRequestUpdates(async (expression, send) => {
      if (expression.includes('ADD attempts')) {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
      }
      const answer = await send();
      if (expression.includes('result_gz')) running -= 1;
      return answer;
    });
    const worker = createIngestWorker(readEnv(IngestWorkerEnv), {
      db: gauge,
      sqs: createSqsClient(),
      s3: createS3Client(),
    });
    const merges = Array.from({ length: 5 }, () =>
      message('person-merge', { people: [{ fields: { 'str::email': email('two') } }] }, 1),
    );
    const answer = await deliverBatch(
      worker,
      'two',
      merges.map((m) => JSON.stringify(m)),
    );
    expect(answer.batchItemFailures).toEqual([]);
    expect(mostRunning).toBe(2);
    for (const m of merges) expect((await status(m.request_id)).status).toBe('done');
  });

  it('starts its background archives, restores and deletes at once by default', async () => {
    functionEnv({ AUDIENCES_TABLE: tableName('default', 'audiences') });
    // Each start waits until all three have started (or 20 s): two at a time, the third would
    // only start once one of the others ended.
    const barrier = startBarrier(3);
    const worker = createIngestWorker(readEnv(IngestWorkerEnv), {
      db: barrier.client,
      sqs: createSqsClient(),
      s3: createS3Client(),
    });
    const jobs = (
      ['organizations-archive', 'organizations-restore', 'person-archive'] as const
    ).map((kind) => message(kind, { all_rows_selected: true, exclusion_ids: [] }, 0));
    const answer = await deliverBatch(
      worker,
      'job',
      jobs.map((m) => JSON.stringify(m)),
    );
    expect(barrier.together()).toBe(true);
    expect(answer.batchItemFailures).toEqual([]);
  });
});

describe('dead letters', () => {
  it('sends a poisoned message to the dead-letter queue after 5 receives while the rest of its batch lands, and redrive applies it once it can be', async () => {
    Object.assign(process.env, stackAwsEnv());
    const sqs = createSqsClient();
    const s3 = createS3Client();
    const { QueueUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: queueName('default', 'ingest') }),
    );
    const good = [0, 1].map(() =>
      message('person-merge', { people: [{ fields: { 'str::email': email('good') } }] }, 1),
    );
    // Its payload is in the bucket, but not JSON: every delivery fails until someone fixes it.
    const poisoned = message('person-merge', {}, 1);
    const payloadKey = `ingest/worker/${poisoned.request_id}.json`;
    await s3.send(
      new PutObjectCommand({
        Bucket: localBucketName('default', 'payloads'),
        Key: payloadKey,
        Body: '{"people": [',
      }),
    );
    const { body: _body, ...envelope } = poisoned;
    for (const body of [good[0], { ...envelope, payload: { key: payloadKey } }, good[1]]) {
      await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify(body) }));
    }
    for (const m of good) {
      const deadline = Date.now() + 30_000;
      while ((await status(m.request_id)).status !== 'done' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect((await status(m.request_id)).status).toBe('done');
    }
    const admin = (...args: string[]) => run(['local/admin.ts', ...args], adminEnv());
    let listed = '';
    const deadline = Date.now() + 60_000;
    while (!listed.includes(poisoned.request_id) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      listed = (await admin('dlq', 'list')).stdout;
    }
    expect(listed).toContain(`request ${poisoned.request_id} (person-merge, instance worker`);
    expect(listed).toContain('could not be applied after 5 attempts (SyntaxError)');
    expect(await status(poisoned.request_id)).toMatchObject({ status: 'failed', code: 503 });

    // Once its payload is right, a redrive applies it, once.
    const address = email('redriven');
    await s3.send(
      new PutObjectCommand({
        Bucket: localBucketName('default', 'payloads'),
        Key: payloadKey,
        Body: JSON.stringify({ people: [{ fields: { 'str::email': address } }] }),
      }),
    );
    const redriven = await admin('dlq', 'redrive', '--message', poisoned.request_id);
    expect(redriven.stdout).toContain(`Moved back to cdp-default-ingest: 1`);
    const done = Date.now() + 30_000;
    while ((await status(poisoned.request_id)).status !== 'done' && Date.now() < done) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const result = (await status(poisoned.request_id)).result as {
      people: { person_id: string; status: string }[];
    };
    expect(result.people).toEqual([
      { person_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown, status: 'created' },
    ]);
    expect(await claimOwner(address)).toBe(result.people[0]?.person_id);
    expect((await admin('dlq', 'list')).stdout).toContain('Dead letters of cdp-default-ingest: 0');
  });

  it('records a request whose payload is gone from the bucket as failed at once, saying what was lost, and does not retry it', async () => {
    Object.assign(process.env, stackAwsEnv());
    const sqs = createSqsClient();
    const { QueueUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: queueName('default', 'ingest') }),
    );
    const lost = message('person-merge', {}, 2);
    const payloadKey = `ingest/worker/${lost.request_id}.json`;
    const { body: _body, ...envelope } = lost;
    await sqs.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: JSON.stringify({ ...envelope, payload: { key: payloadKey } }),
      }),
    );
    const deadline = Date.now() + 30_000;
    while ((await status(lost.request_id)).status !== 'failed' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const failed = await status(lost.request_id);
    expect(failed).toMatchObject({ status: 'failed', code: 410 });
    expect(failed.error).toContain(`its body (${payloadKey}) is no longer in the payloads bucket`);
    expect(failed.error).toContain('nothing of it was applied');
    // Recorded at the first receive (within the wait above, shorter than the first backoff
    // and the retries after it), and not as a request that a redrive would apply.
    expect(failed.error).not.toContain('redriven');
    expect(failed.error).not.toContain('attempts');
  });
});

describe('a queue that cannot be reached', () => {
  it('answers 503 with Retry-After, and nothing is queued', async () => {
    functionEnv({
      // Nothing listens there.
      AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:9',
      INGEST_QUEUE_URL: 'http://127.0.0.1:9/000000000000/cdp-default-ingest',
      CDP_REQUEST_BUDGET_MS: '1000',
    });
    const { handler } = (await import('../../functions/person-merge/handler.js')) as {
      handler: HttpHandler;
    };
    const address = email('down');
    const response = await handler(
      postEvent(
        '/v1/person/merge',
        { async: true, people: [{ fields: { 'str::email': address } }] },
        KEYS.worker,
        'queue-down',
      ),
      functionContext,
    );
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.parse(response.body)).toMatchObject({
      code: 503,
      error: 'The ingest queue is unavailable: nothing was queued; try again shortly',
    });
    expect(await claimOwner(address)).toBeUndefined();
  });
});
