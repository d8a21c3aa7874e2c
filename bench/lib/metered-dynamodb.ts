import {
  DynamoDBClient,
  TransactionCanceledException,
  type ConsumedCapacity,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  UpdateCommand,
  type DeleteCommandInput,
  type PutCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../shared/adapters/aws-clients.js';
import { isConditionFailure } from '../../shared/adapters/dynamo-helpers.js';

/**
 * A DynamoDB client that counts what the code it serves asks of the store: calls by
 * operation, items written and read, and the capacity units DynamoDB reports for them
 * (`ReturnConsumedCapacity: INDEXES`, so index writes are included). The benchmarks run the
 * domain in-process with it against the bench stack's DynamoDB Local, to count the work a
 * request causes (deterministic, unlike times on a shared machine).
 */
export interface Meter {
  calls: Record<string, number>;
  itemsWritten: number;
  itemsRead: number;
  /** Capacity units by table or index (`people`, `people/list`, …). */
  wcu: Record<string, number>;
  rcu: Record<string, number>;
}

export function emptyMeter(): Meter {
  return { calls: {}, itemsWritten: 0, itemsRead: 0, wcu: {}, rcu: {} };
}

export const totalCalls = (meter: Meter) =>
  Object.values(meter.calls).reduce((sum, n) => sum + n, 0);
export const total = (units: Record<string, number>) =>
  Object.values(units).reduce((sum, n) => sum + n, 0);

type Input = Record<string, unknown> & {
  TransactItems?: unknown[];
  RequestItems?: Record<string, unknown[] | { Keys?: unknown[] }>;
  ReturnConsumedCapacity?: string;
};

const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

/** Table names lose their `cdp-<region>-` prefix in the figures. */
const shortName = (table: string) => table.replace(/^cdp-[a-z]+-/, '');

function addCapacity(meter: Meter, kind: 'read' | 'write', capacity: ConsumedCapacity) {
  const units = kind === 'read' ? meter.rcu : meter.wcu;
  const table = shortName(capacity.TableName ?? '?');
  const tableUnits =
    (kind === 'read' ? capacity.Table?.ReadCapacityUnits : capacity.Table?.WriteCapacityUnits) ??
    capacity.Table?.CapacityUnits;
  const indexes = {
    ...(capacity.GlobalSecondaryIndexes ?? {}),
    ...(capacity.LocalSecondaryIndexes ?? {}),
  };
  const indexTotal = Object.values(indexes).reduce(
    (sum, index) =>
      sum +
      ((kind === 'read' ? index.ReadCapacityUnits : index.WriteCapacityUnits) ??
        index.CapacityUnits ??
        0),
    0,
  );
  // Where DynamoDB gives only the total, the table's share is what the indexes leave.
  const tableShare = tableUnits ?? (capacity.CapacityUnits ?? 0) - indexTotal;
  units[table] = (units[table] ?? 0) + tableShare;
  for (const [name, index] of Object.entries(indexes)) {
    const value =
      (kind === 'read' ? index.ReadCapacityUnits : index.WriteCapacityUnits) ??
      index.CapacityUnits ??
      0;
    units[`${table}/${name}`] = (units[`${table}/${name}`] ?? 0) + value;
  }
}

/**
 * DynamoDB Local reports the capacity of a transaction wrongly (one item's worth per table,
 * whatever the transaction holds). With `replayTransactions`, the meter writes each item of
 * a transaction as the single-item call it amounts to, which DynamoDB Local does account
 * per item, and bills its table share twice, as DynamoDB bills transactional writes (index
 * writes, propagated after the transaction, at the standard rate). For cost runs only: the
 * items are not written atomically then (a benchmark's requests do not race), and an item
 * whose condition fails is reported as the transaction's cancellation (`cancelledAt`).
 */
async function replayTransaction(
  client: DynamoDBDocumentClient,
  input: Input,
  m: Meter,
): Promise<void> {
  const entries = (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[];
  for (const [index, entry] of entries.entries()) {
    const [kind, op] = Object.entries(entry)[0] ?? [];
    if (!kind || !op) continue;
    if (kind === 'ConditionCheck') {
      // A condition check costs a write unit per KB in a transaction (twice for the transaction).
      m.wcu[shortName(String(op.TableName))] = (m.wcu[shortName(String(op.TableName))] ?? 0) + 2;
      continue;
    }
    // The items are still in their document form here: the document client marshals them.
    const command =
      kind === 'Put'
        ? new PutCommand({
            ...(op as unknown as PutCommandInput),
            ReturnConsumedCapacity: 'INDEXES',
          })
        : kind === 'Update'
          ? new UpdateCommand({
              ...(op as unknown as UpdateCommandInput),
              ReturnConsumedCapacity: 'INDEXES',
            })
          : new DeleteCommand({
              ...(op as unknown as DeleteCommandInput),
              ReturnConsumedCapacity: 'INDEXES',
            });
    const { ConsumedCapacity } = await client
      .send(command as PutCommand)
      .catch((error: unknown) => {
        throw cancelledAt(error, index, entries.length);
      });
    if (!ConsumedCapacity) continue;
    const table = shortName(ConsumedCapacity.TableName ?? '?');
    const indexes = ConsumedCapacity.GlobalSecondaryIndexes ?? {};
    const indexUnits = Object.values(indexes).reduce(
      (sum, index) => sum + (index.CapacityUnits ?? 0),
      0,
    );
    const tableUnits =
      ConsumedCapacity.Table?.CapacityUnits ?? (ConsumedCapacity.CapacityUnits ?? 0) - indexUnits;
    m.wcu[table] = (m.wcu[table] ?? 0) + 2 * tableUnits;
    for (const [name, index] of Object.entries(indexes)) {
      m.wcu[`${table}/${name}`] = (m.wcu[`${table}/${name}`] ?? 0) + (index.CapacityUnits ?? 0);
    }
  }
}

/**
 * A replayed item whose condition failed, reported as DynamoDB reports the transaction: a
 * `TransactionCanceledException` whose reasons name `ConditionalCheckFailed` at the item's
 * position (the code that made the transaction reads that, not the single write's error; the
 * cost figure's email worker met it when SES's event had marked an email sent first).
 */
function cancelledAt(error: unknown, index: number, items: number): unknown {
  if (!isConditionFailure(error)) return error;
  return new TransactionCanceledException({
    message: `Transaction cancelled: the condition of item ${index} failed (replayed)`,
    $metadata: {},
    CancellationReasons: Array.from({ length: items }, (_, i) =>
      i === index ? { Code: 'ConditionalCheckFailed' } : { Code: 'None' },
    ),
  });
}

/** Adds the counting middleware to a low-level client. */
export function meter(
  client: DynamoDBClient,
  into: () => Meter,
  options: { replayTransactions?: DynamoDBDocumentClient } = {},
): DynamoDBClient {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      const m = into();
      m.calls[name] = (m.calls[name] ?? 0) + 1;
      const input = args.input as Input;
      input.ReturnConsumedCapacity = 'INDEXES';
      if (name === 'TransactWriteItemsCommand') m.itemsWritten += input.TransactItems?.length ?? 0;
      if (WRITES.has(name)) m.itemsWritten += 1;
      if (name === 'BatchWriteItemCommand') {
        for (const writes of Object.values(input.RequestItems ?? {})) {
          m.itemsWritten += Array.isArray(writes) ? writes.length : 0;
        }
      }
      if (options.replayTransactions && name === 'TransactWriteItemsCommand') {
        await replayTransaction(options.replayTransactions, input, m);
        const replayed: Awaited<ReturnType<typeof next>> = {
          output: { $metadata: {} },
          response: {},
        };
        return replayed;
      }
      const result = await next(args);
      const output = result.output as {
        ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[];
        Responses?: Record<string, unknown[]> | unknown[];
        Item?: unknown;
        Items?: unknown[];
        Count?: number;
      };
      if (name === 'BatchGetItemCommand' && output.Responses && !Array.isArray(output.Responses)) {
        for (const items of Object.values(output.Responses)) m.itemsRead += items.length;
      } else if (name === 'GetItemCommand') m.itemsRead += output.Item ? 1 : 0;
      else if (name === 'QueryCommand' || name === 'ScanCommand') m.itemsRead += output.Count ?? 0;
      const kind = /Get|Query|Scan/.test(name) ? 'read' : 'write';
      const capacities = output.ConsumedCapacity;
      const list = Array.isArray(capacities) ? capacities : capacities ? [capacities] : [];
      for (const entry of list) addCapacity(m, kind, entry);
      return result;
    },
    { step: 'serialize', priority: 'high', name: 'benchMeter' },
  );
  return client;
}

/** A document client (with the service's own retries, no faults) that counts into `into()`. */
export function meteredDocumentClient(into: () => Meter, replayTransactions = false) {
  const client = () =>
    new DynamoDBClient({ maxAttempts: 1, requestHandler: { requestTimeout: 10_000 } });
  return createDocumentClient(
    meter(
      client(),
      into,
      replayTransactions
        ? {
            replayTransactions: DynamoDBDocumentClient.from(client(), {
              marshallOptions: { removeUndefinedValues: true },
            }),
          }
        : {},
    ),
    '',
  );
}
