import {
  ProvisionedThroughputExceededException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { z } from 'zod';

/**
 * Fault injection for DynamoDB: what AWS does and DynamoDB Local never does, at chosen rates,
 * so that tests and the local stack can see how the write paths behave on AWS.
 *
 * - `throttle`: a call is refused with a throttling error (`ProvisionedThroughputExceeded`
 *   or `Throttling`); a `BatchGetItem` sometimes instead leaves part of its keys unprocessed.
 * - `conflict`: a write is refused because of a concurrent transaction: a
 *   `TransactWriteItems` is cancelled with `TransactionConflict` on one of its items, a
 *   single-item write fails with `TransactionConflictException`. Nothing is applied.
 * - `stale`: an eventually consistent `GetItem`/`BatchGetItem` returns the version of an item
 *   from before its latest write (or no item, if the write created it), when that write is
 *   at most `window` milliseconds old. Strongly consistent reads are never stale.
 *
 * It sits in the client's middleware stack below the SDK's retry layer (and ours, above it),
 * so injected faults are retried exactly as real ones. Queries (and so index reads) are not
 * made stale: index lag is not modelled.
 *
 * `CDP_FAULTS` turns it on for every DynamoDB client of the API, the workers and the admin
 * CLI: `conflict=0.2,throttle=0.1,stale=0.3[,window=1000][,only=people]` (rates from 0 to
 * 1; `only` limits the faults to calls on tables whose name contains it).
 */
export interface FaultRates {
  conflict: number;
  throttle: number;
  stale: number;
  /** How long after a write a stale read may still return the version before it. */
  windowMs: number;
  /** Only calls that touch a table whose name contains this meet faults. */
  only?: string;
}

const rate = z.coerce.number().min(0).max(1);
const FaultSpec = z.strictObject({
  conflict: rate.default(0),
  throttle: rate.default(0),
  stale: rate.default(0),
  window: z.coerce.number().int().min(0).max(600_000).default(1000),
  only: z
    .string()
    .regex(/^[a-z0-9-]+$/, 'expected part of a table name')
    .optional(),
});

/** Parses `conflict=0.2,throttle=0.1,stale=0.3[,window=1000]`; throws naming what is wrong. */
export function parseFaults(spec: string): FaultRates {
  const entries: Record<string, string> = {};
  for (const part of spec.split(',')) {
    const trimmed = part.trim();
    if (trimmed === '') continue;
    const [name, value, extra] = trimmed.split('=');
    if (!name || value === undefined || extra !== undefined) {
      throw new Error(`CDP_FAULTS: "${trimmed}" is not name=value`);
    }
    entries[name.trim()] = value.trim();
  }
  const parsed = FaultSpec.safeParse(entries);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `CDP_FAULTS: ${issue?.path.join('.') || 'spec'}: ${issue?.message ?? 'invalid'} (expected conflict=, throttle=, stale= between 0 and 1, window= in ms)`,
    );
  }
  const { conflict, throttle, stale, window, only } = parsed.data;
  return { conflict, throttle, stale, windowMs: window, ...(only ? { only } : {}) };
}

/** What the injector did, for tests and for the log of a faulty run. */
export interface FaultCounts {
  throttled: number;
  unprocessed: number;
  conflicts: number;
  stale: number;
}

type Attribute = Record<string, unknown>;
type Item = Record<string, unknown>;

/** `undefined`: not known; `null`: no item. */
type Version = Item | null | undefined;

interface KeyHistory {
  /** The last version a read returned since the latest write we know of. */
  seen: Version;
  /** A version from before a recent write, and until when a stale read may return it. */
  earlier?: { value: Item | null; until: number };
}

const ATTRIBUTE_TAGS = new Set(['S', 'N', 'B', 'BOOL', 'NULL', 'M', 'L', 'SS', 'NS', 'BS']);

/** The plain value of a key attribute, whether marshalled (`{S: "x"}`) or not. */
function plain(value: unknown): unknown {
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    const [tag, inner] = entries[0] ?? [];
    if (entries.length === 1 && tag !== undefined && ATTRIBUTE_TAGS.has(tag)) return inner;
  }
  return value;
}

/**
 * What the store held before recent writes, per item. Eventual consistency is the store's,
 * not a client's: every client of the process shares one history, so a read through one
 * function's client can be stale after a write through another's (as on AWS).
 */
export class VersionHistory {
  readonly items = new Map<string, KeyHistory>();
  readonly keyNames = new Map<string, string[]>();
}

const processHistory = new VersionHistory();

/** Injectors installed from `CDP_FAULTS` in this process, for a summary of what they did. */
const installed: FaultInjector[] = [];

/** What every injector of the process injected so far. */
export function injectedFaults(): FaultCounts {
  const totals: FaultCounts = { throttled: 0, unprocessed: 0, conflicts: 0, stale: 0 };
  for (const injector of installed) {
    for (const name of Object.keys(totals) as (keyof FaultCounts)[]) {
      totals[name] += injector.counts[name];
    }
  }
  return totals;
}

export class FaultInjector {
  readonly counts: FaultCounts = { throttled: 0, unprocessed: 0, conflicts: 0, stale: 0 };
  private readonly history: Map<string, KeyHistory>;
  private readonly keyNames: Map<string, string[]>;

  constructor(
    readonly rates: FaultRates,
    private readonly random: () => number = Math.random,
    private readonly now: () => number = Date.now,
    versions: VersionHistory = processHistory,
  ) {
    this.history = versions.items;
    this.keyNames = versions.keyNames;
  }

  /** Adds the injector to a client's middleware stack, below the SDK's retries. */
  install(client: DynamoDBClient): this {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const command = (context.commandName ?? '').replace(/Command$/, '');
        const input = args.input as Record<string, unknown>;
        if (!this.targets(input)) return next(args);
        this.maybeRefuse(command, input);
        const result = await next(args);
        // The document client unmarshalls outputs before this middleware sees them.
        const sdk = (context as { __aws_sdk_context?: { features?: Record<string, string> } })
          .__aws_sdk_context;
        const documentShape = sdk?.features?.DDB_MAPPER !== undefined;
        this.observe(
          command,
          input,
          result.output as unknown as Record<string, unknown>,
          documentShape,
        );
        return result;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'cdpFaultInjection', override: true },
    );
    return this;
  }

  /** Whether a call touches a table the faults are for. */
  private targets(input: Record<string, unknown>): boolean {
    const only = this.rates.only;
    if (only === undefined) return true;
    const tables = new Set<string>();
    if (typeof input.TableName === 'string') tables.add(input.TableName);
    for (const table of Object.keys(input.RequestItems ?? {})) tables.add(table);
    for (const entry of (input.TransactItems ?? []) as Record<string, { TableName?: string }>[]) {
      for (const op of Object.values(entry)) if (op.TableName) tables.add(op.TableName);
    }
    return [...tables].some((table) => table.includes(only));
  }

  private chance(probability: number): boolean {
    return probability > 0 && this.random() < probability;
  }

  private maybeRefuse(command: string, input: Record<string, unknown>): void {
    if (command !== 'BatchGetItem' && this.chance(this.rates.throttle)) {
      this.counts.throttled += 1;
      const options = {
        message: 'Injected fault: the request rate is too high',
        $metadata: { httpStatusCode: 400 },
      };
      throw this.random() < 0.5
        ? new ProvisionedThroughputExceededException(options)
        : new ThrottlingException(options);
    }
    const writes = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems']);
    if (!writes.has(command) || !this.chance(this.rates.conflict)) return;
    this.counts.conflicts += 1;
    if (command === 'TransactWriteItems') {
      const items = Array.isArray(input.TransactItems) ? input.TransactItems : [];
      const victim = Math.floor(this.random() * items.length);
      const reasons = items.map((_, i) =>
        i === victim
          ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
          : { Code: 'None' },
      );
      throw new TransactionCanceledException({
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
        $metadata: { httpStatusCode: 400 },
        CancellationReasons: reasons,
      });
    }
    throw new TransactionConflictException({
      message: 'Injected fault: operation was rejected because of an ongoing transaction',
      $metadata: { httpStatusCode: 400 },
    });
  }

  private keyOf(table: string, key: Attribute): string {
    const names = Object.keys(key).sort();
    if (!this.keyNames.has(table)) this.keyNames.set(table, names);
    return `${table}\u0000${JSON.stringify(names.map((name) => plain(key[name])))}`;
  }

  /** The key of a whole item: by the table's key names, learned from reads (else pk/sk or id). */
  private keyOfItem(table: string, item: Item): string {
    const names =
      this.keyNames.get(table) ?? ('pk' in item ? ['pk', ...('sk' in item ? ['sk'] : [])] : ['id']);
    return this.keyOf(table, Object.fromEntries(names.map((name) => [name, item[name]])));
  }

  private entry(key: string): KeyHistory {
    let entry = this.history.get(key);
    if (!entry) {
      entry = { seen: undefined };
      this.history.set(key, entry);
      // Bound the memory of a long run: forget the oldest keys first.
      if (this.history.size > 200_000) {
        const oldest = this.history.keys().next();
        if (!oldest.done) this.history.delete(oldest.value);
      }
    }
    return entry;
  }

  private wrote(key: string, createdIfAbsent: boolean): void {
    const entry = this.entry(key);
    const at = this.now();
    const before: Version =
      entry.seen !== undefined ? entry.seen : createdIfAbsent ? null : undefined;
    if (!(entry.earlier && entry.earlier.until >= at) && before !== undefined) {
      entry.earlier = { value: before, until: at + this.rates.windowMs };
    } else if (entry.earlier) {
      entry.earlier.until = at + this.rates.windowMs;
    }
    entry.seen = undefined;
  }

  /** A stale version to return instead of the current one, if one is due. */
  private staleVersion(key: string): { value: Item | null } | undefined {
    const entry = this.history.get(key);
    if (!entry?.earlier || entry.earlier.until < this.now()) return undefined;
    if (!this.chance(this.rates.stale)) return undefined;
    this.counts.stale += 1;
    return { value: entry.earlier.value === null ? null : structuredClone(entry.earlier.value) };
  }

  private observe(
    command: string,
    input: Record<string, unknown>,
    output: Record<string, unknown>,
    documentShape: boolean,
  ) {
    switch (command) {
      case 'GetItem':
        this.observeGet(input, output);
        return;
      case 'BatchGetItem':
        this.observeBatchGet(input, output, documentShape);
        return;
      case 'PutItem': {
        const table = String(input.TableName);
        const item = input.Item as Item;
        this.wrote(this.keyOfItem(table, item), createsOnly(input.ConditionExpression));
        return;
      }
      case 'UpdateItem':
      case 'DeleteItem':
        this.wrote(this.keyOf(String(input.TableName), input.Key as Attribute), false);
        return;
      case 'TransactWriteItems':
        for (const entry of (input.TransactItems ?? []) as Record<
          string,
          Record<string, unknown>
        >[]) {
          if (entry.Put) {
            const table = String(entry.Put.TableName);
            const item = entry.Put.Item as Item;
            this.wrote(this.keyOfItem(table, item), createsOnly(entry.Put.ConditionExpression));
          }
          for (const op of [entry.Update, entry.Delete]) {
            if (op) this.wrote(this.keyOf(String(op.TableName), op.Key as Attribute), false);
          }
        }
        return;
      case 'BatchWriteItem':
        for (const [table, requests] of Object.entries(
          (input.RequestItems ?? {}) as Record<string, Record<string, Record<string, unknown>>[]>,
        )) {
          for (const request of requests) {
            if (request.PutRequest) {
              this.wrote(this.keyOfItem(table, request.PutRequest.Item as Item), false);
            }
            if (request.DeleteRequest) {
              this.wrote(this.keyOf(table, request.DeleteRequest.Key as Attribute), false);
            }
          }
        }
        return;
      default:
    }
  }

  private observeGet(input: Record<string, unknown>, output: Record<string, unknown>) {
    const key = this.keyOf(String(input.TableName), input.Key as Attribute);
    if (input.ConsistentRead !== true) {
      const stale = this.staleVersion(key);
      if (stale) {
        if (stale.value === null) delete output.Item;
        else output.Item = stale.value;
        return;
      }
    }
    this.entry(key).seen = output.Item ? structuredClone(output.Item as Item) : null;
  }

  private observeBatchGet(
    input: Record<string, unknown>,
    output: Record<string, unknown>,
    documentShape: boolean,
  ) {
    const requests = (input.RequestItems ?? {}) as Record<
      string,
      { Keys?: Attribute[]; ConsistentRead?: boolean }
    >;
    const responses = (output.Responses ?? {}) as Record<string, Item[]>;
    const unprocessed = (output.UnprocessedKeys ?? {}) as Record<string, { Keys?: Item[] }>;
    const holdBack = this.chance(this.rates.throttle);
    for (const [table, request] of Object.entries(requests)) {
      const requested = request.Keys ?? [];
      const keyNames = Object.keys(requested[0] ?? {});
      const items = new Map<string, Item>();
      for (const item of responses[table] ?? []) {
        items.set(this.keyOf(table, Object.fromEntries(keyNames.map((n) => [n, item[n]]))), item);
      }
      const left = new Set((unprocessed[table]?.Keys ?? []).map((key) => this.keyOf(table, key)));
      const kept: Item[] = [];
      const heldBack: Item[] = [];
      requested.forEach((requestedKey, i) => {
        const key = this.keyOf(table, requestedKey);
        if (left.has(key)) return;
        const found = items.get(key);
        // Throttled in part: every other key is left for the caller to ask again, in the
        // shape the caller reads (the document client's keys are plain values).
        if (holdBack && i % 2 === 1) {
          heldBack.push(
            documentShape
              ? unmarshall(requestedKey as Parameters<typeof unmarshall>[0])
              : requestedKey,
          );
          return;
        }
        if (request.ConsistentRead !== true) {
          const stale = this.staleVersion(key);
          if (stale) {
            if (stale.value !== null) kept.push(stale.value);
            return;
          }
        }
        this.entry(key).seen = found ? structuredClone(found) : null;
        if (found) kept.push(found);
      });
      responses[table] = kept;
      if (heldBack.length > 0) {
        this.counts.unprocessed += 1;
        const previous = unprocessed[table]?.Keys ?? [];
        unprocessed[table] = { ...unprocessed[table], Keys: [...previous, ...heldBack] };
        output.UnprocessedKeys = unprocessed;
      }
    }
    output.Responses = responses;
  }
}

/** Whether a put's condition proves the item did not exist before it. */
function createsOnly(condition: unknown): boolean {
  return typeof condition === 'string' && /^\s*attribute_not_exists\s*\(/.test(condition);
}

/** Installs fault injection from a `CDP_FAULTS` value; `undefined` when it is unset or empty. */
export function injectFaultsFromSpec(
  client: DynamoDBClient,
  spec: string | undefined,
): FaultInjector | undefined {
  if (spec === undefined || spec.trim() === '') return undefined;
  const injector = new FaultInjector(parseFaults(spec)).install(client);
  installed.push(injector);
  return injector;
}
