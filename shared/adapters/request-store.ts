import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { MergeOutcome, RecordLedger } from '../domain/merge/merge-engine.js';
import type { JobProgress } from '../domain/lifecycle/lifecycle.js';
import {
  REQUEST_KINDS,
  type RequestFailure,
  type StartedAs,
  type RequestStatus,
  type FinishOptions,
  type RequestStore,
} from '../domain/ingest/request-status.js';
import { isConditionFailure } from './dynamo-helpers.js';
import { writeReferences } from './person-references.js';
import { personIdsNamedIn } from '../domain/people/person-references.js';

/**
 * Asynchronous requests in the requests table (see docs/data-model.md):
 * - `<inst>#REQ#<request_id>` / `REQ`: the request's state, its answer when done (JSON), or
 *   why it failed;
 * - `<inst>#REQ#<request_id>` / `R#<index>`: the outcome of each record that was applied
 *   (the ledger), written in the record's own transaction, so a record applies once;
 * - `<inst>#REQ#<request_id>` / `R#G#<uuid>`: the outcomes of records whose markers were put
 *   after their transactions (new people with key claims), several records' in one item;
 * - `<inst>#REQ#<request_id>` / `N#<uuid>`: outcomes of records that wrote nothing.
 * A group's and a note's outcomes are one gzipped JSON object by record index (`outcomes_gz`;
 * older records: a map, `outcomes`, still read).
 * Everything expires (DynamoDB TTL on `expires_at`) 21 days after its last change: longer
 * than the dead-letter queues keep a message (14 days), so a redriven message still finds
 * its request's ledger and applies each record once.
 */
export const MARKER_TTL_SECONDS = 21 * 24 * 3600;

export const requestPk = (instanceId: string, requestId: string) =>
  `${instanceId}#REQ#${requestId}`;
export const statusKey = (instanceId: string, requestId: string) => ({
  pk: requestPk(instanceId, requestId),
  sk: 'REQ',
});

export const markerKey = (instanceId: string, requestId: string, index: number) => ({
  pk: requestPk(instanceId, requestId),
  sk: `R#${String(index).padStart(3, '0')}`,
});

/** When a ledger item written now expires (epoch seconds, DynamoDB TTL). */
export const ledgerExpiry = () => Math.floor(Date.now() / 1000) + MARKER_TTL_SECONDS;

const MARKER_GROUP = 'R#G#';

/** The item of several records' markers, put after their transactions (`MarkerGroups`). */
export function markerGroupItem(
  instanceId: string,
  requestId: string,
  outcomes: Map<number, MergeOutcome>,
) {
  return {
    pk: requestPk(instanceId, requestId),
    sk: `${MARKER_GROUP}${randomUUID()}`,
    outcomes_gz: packOutcomes(outcomes),
    expires_at: ledgerExpiry(),
  };
}

const Outcome = z.object({
  id: z.string().optional(),
  status: z.enum(['created', 'merged', 'skipped', 'invalid']),
  error: z.string().optional(),
});

/** Several records' outcomes by index (notes and marker groups). */
const Outcomes = z.record(z.string(), Outcome);

/**
 * A value as the requests table keeps its larger attributes (a request's answer, a note's or
 * group's outcomes): gzipped JSON. A hundred outcomes are 5 KB as a DynamoDB map (5 write
 * units, and hundreds of attribute values for the store to parse) and about 1 KB so.
 */
const packJson = (value: unknown): Uint8Array => gzipSync(JSON.stringify(value));
const unpackJson = (packed: Uint8Array): unknown => JSON.parse(gunzipSync(packed).toString('utf8'));

const packOutcomes = (outcomes: Iterable<readonly [number, MergeOutcome]>) =>
  packJson(Object.fromEntries(outcomes));

const outcomesOf = (item: Record<string, unknown>) =>
  Object.entries(
    Outcomes.parse(
      item.outcomes_gz instanceof Uint8Array ? unpackJson(item.outcomes_gz) : item.outcomes,
    ),
  ).map(([index, outcome]) => [Number(index), outcome] as const);

const StatusItem = z.object({
  request_id: z.string(),
  kind: z.enum(REQUEST_KINDS),
  status: z.enum(['queued', 'processing', 'done', 'failed']),
  records: z.number(),
  accepted_at: z.string(),
  // The answer as gzipped JSON (older records: as JSON text, still read).
  result_gz: z.instanceof(Uint8Array).optional(),
  result_json: z.string().optional(),
  failure: z
    .object({
      error: z.string(),
      code: z.number(),
      details: z.array(z.record(z.string(), z.unknown())).optional(),
    })
    .optional(),
  progress: z
    .object({ shard: z.number(), after: z.string().optional(), changed: z.number() })
    .optional(),
});

export class DynamoRequestStore implements RequestStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async queued(instanceId: string, request: Omit<RequestStatus, 'status'>) {
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            ...statusKey(instanceId, request.request_id),
            ...request,
            status: 'queued',
            updated_at: new Date().toISOString(),
            expires_at: ledgerExpiry(),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error; // a worker was quicker
    }
  }

  async start(instanceId: string, request: Omit<RequestStatus, 'status'>): Promise<StartedAs> {
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: statusKey(instanceId, request.request_id),
          UpdateExpression:
            'SET #status = :processing, request_id = :id, kind = :kind, records = :records, accepted_at = :at, updated_at = :now, expires_at = :expires ADD attempts :one',
          ConditionExpression: 'attribute_not_exists(pk) OR #status <> :done',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':processing': 'processing',
            ':done': 'done',
            ':id': request.request_id,
            ':kind': request.kind,
            ':records': request.records,
            ':at': request.accepted_at,
            ':now': new Date().toISOString(),
            ':expires': ledgerExpiry(),
            ':one': 1,
          },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      // `attempts` counts the starts: 1 is this one alone.
      return Attributes?.attempts === 1 ? 'first' : 'processing';
    } catch (error) {
      if (isConditionFailure(error)) return 'done';
      throw error;
    }
  }

  async discard(instanceId: string, requestId: string) {
    try {
      await this.db.send(
        new DeleteCommand({
          TableName: this.table,
          Key: statusKey(instanceId, requestId),
          ConditionExpression: '#status = :queued',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':queued': 'queued' },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  /**
   * People a request's kept answer names get references, so that erasing them finds it: the
   * answer's, and (a failure's answer may not list them) the records its ledger applied.
   */
  private async reference(
    instanceId: string,
    requestId: string,
    answer: unknown,
    { ledger = false, carried }: { ledger?: boolean; carried?: ReadonlySet<string> } = {},
  ) {
    const named = personIdsNamedIn(answer);
    if (ledger) {
      const recorded = await this.ledger(instanceId, requestId).recorded();
      for (const outcome of recorded.values()) if (outcome.id) named.push(outcome.id);
    }
    const unnamed = carried ? named.filter((id) => !carried.has(id)) : named;
    await writeReferences(
      this.db,
      this.table,
      instanceId,
      unnamed,
      `REQ#${requestId}`,
      ledgerExpiry(),
    );
  }

  async finish(
    instanceId: string,
    requestId: string,
    result: unknown,
    { alone = false, carried }: FinishOptions = {},
  ) {
    await this.reference(instanceId, requestId, result, carried ? { carried } : {});
    return this.settle(instanceId, requestId, {
      set: '#status = :done, result_gz = :result',
      remove: 'failure, result_json',
      // `attempts` counts the starts: 1 is the first delivery's alone.
      ...(alone ? { condition: 'attempts = :one' } : {}),
      values: {
        ':done': 'done',
        // Gzipped: a request of 100 activities answers in 12 KB of JSON, 3 KB of gzip (the
        // write's units are per KB).
        ':result': packJson(result),
        ...(alone ? { ':one': 1 } : {}),
      },
    });
  }

  async fail(instanceId: string, requestId: string, failure: RequestFailure) {
    await this.reference(instanceId, requestId, failure, { ledger: true });
    // Done meanwhile: done stands.
    await this.settle(instanceId, requestId, {
      set: '#status = :failed, failure = :failure',
      condition: 'attribute_not_exists(pk) OR #status <> :done',
      values: { ':failed': 'failed', ':done': 'done', ':failure': failure },
    });
  }

  /** Writes a request's final state (and its times); false when its condition did not hold. */
  private async settle(
    instanceId: string,
    requestId: string,
    change: { set: string; remove?: string; condition?: string; values: Record<string, unknown> },
  ): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: statusKey(instanceId, requestId),
          UpdateExpression: `SET ${change.set}, updated_at = :now, expires_at = :expires${change.remove ? ` REMOVE ${change.remove}` : ''}`,
          ...(change.condition ? { ConditionExpression: change.condition } : {}),
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ...change.values,
            ':now': new Date().toISOString(),
            ':expires': ledgerExpiry(),
          },
        }),
      );
      return true;
    } catch (error) {
      if (change.condition && isConditionFailure(error)) return false;
      throw error;
    }
  }

  async get(instanceId: string, requestId: string): Promise<RequestStatus | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: statusKey(instanceId, requestId),
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    const item = StatusItem.parse(Item);
    return {
      request_id: item.request_id,
      kind: item.kind,
      status: item.status,
      records: item.records,
      accepted_at: item.accepted_at,
      ...(item.result_gz !== undefined
        ? { result: unpackJson(item.result_gz) }
        : item.result_json !== undefined
          ? { result: JSON.parse(item.result_json) as unknown }
          : {}),
      ...(item.failure ? { failure: item.failure } : {}),
      ...(item.progress ? { progress: item.progress } : {}),
    };
  }

  async saveProgress(instanceId: string, requestId: string, progress: JobProgress) {
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: statusKey(instanceId, requestId),
        UpdateExpression: 'SET progress = :progress, updated_at = :now, expires_at = :expires',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: {
          ':progress': progress,
          ':now': new Date().toISOString(),
          ':expires': ledgerExpiry(),
        },
      }),
    );
  }

  ledger(instanceId: string, requestId: string, firstDelivery = false): RecordLedger {
    return new DynamoLedger(this.db, this.table, instanceId, requestId, firstDelivery);
  }
}

/** The outcomes of a request's records: one item each, beside the request's state. */
class DynamoLedger implements RecordLedger {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly instanceId: string,
    readonly requestId: string,
    private readonly firstDelivery = false,
  ) {}

  private before: Promise<Map<number, MergeOutcome>> | undefined;
  /** `RecordLedger.unconfirmed`: set by a first delivery's note. */
  unconfirmed = false;
  readonly carried = new Set<string>();

  recordedBefore(): Promise<Map<number, MergeOutcome>> {
    this.before ??= this.firstDelivery ? Promise.resolve(new Map()) : this.recorded();
    return this.before;
  }

  async recorded(): Promise<Map<number, MergeOutcome>> {
    const written = new Map<number, MergeOutcome>();
    const noted = new Map<number, MergeOutcome>();
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          // Notes (`N#…`), markers and their groups (`R#…`), not the request's item (`REQ`).
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: {
            ':pk': requestPk(this.instanceId, this.requestId),
            ':from': 'N#',
            ':to': 'R#~',
          },
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const sk = String(item.sk);
        if (sk.startsWith(MARKER_GROUP)) {
          // The records' own markers, as any other (a record's groups name the same outcome:
          // only the person its record created can be found by its origin again).
          for (const [index, outcome] of outcomesOf(item)) written.set(index, outcome);
        } else if (sk.startsWith('R#')) {
          written.set(Number(sk.slice(2)), Outcome.parse(item.outcome));
        } else if (sk.startsWith('N#')) {
          for (const [index, outcome] of outcomesOf(item)) {
            if (!noted.has(index)) noted.set(index, outcome);
          }
        }
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    // A record's own marker (written with its effect) wins over a note of no effect.
    return new Map([...noted, ...written]);
  }

  /**
   * Outcomes of records that wrote nothing, in one item per call (a note): cheaper than an
   * item per record, and as safe: a record noted twice (a duplicate delivery) had no effect
   * either time, and a record's own marker wins over any note. Read back (what stands) except
   * on the first delivery, whose answer is kept only if no delivery started after it.
   */
  async note(outcomes: [number, MergeOutcome][]) {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: requestPk(this.instanceId, this.requestId),
          // Ordered by time: the first note of a record wins.
          sk: `N#${new Date().toISOString()}#${randomUUID()}`,
          outcomes_gz: packOutcomes(outcomes),
          expires_at: ledgerExpiry(),
        },
      }),
    );
    if (this.firstDelivery) {
      this.unconfirmed = true;
      return new Map(outcomes);
    }
    const recorded = await this.recorded();
    return new Map(outcomes.map(([index, outcome]) => [index, recorded.get(index) ?? outcome]));
  }

  async outcomeOf(index: number) {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: markerKey(this.instanceId, this.requestId, index),
        ConsistentRead: true,
      }),
    );
    return Item ? Outcome.parse(Item.outcome) : undefined;
  }
}
