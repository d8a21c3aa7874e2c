import { randomInt } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  backoffMs,
  canWait,
  currentBudget,
  DEFAULT_BUDGET_MS,
  withDeadline,
} from '../lib/time-budget.js';
import { ServiceUnavailableError } from '../domain/errors.js';
import { runBounded } from '../lib/bounded.js';
import { cancellationReasons } from './dynamo-helpers.js';
import {
  classifyStoreError,
  leaveCancellationsToCaller,
  storeUnavailable,
  TRANSIENT_REASONS,
} from './dynamo-resilience.js';
import type { TransactItem } from './record-writes.js';

/**
 * Several records' transactions written as one `TransactWriteItems`.
 *
 * Each record still gets exactly what its own transaction gave it: its items are applied
 * together or not at all, and a failure is reported to that record alone, as the
 * cancellation of a transaction made of its items only (so the callers' mapping of
 * cancellation reasons to positions is unchanged). A record whose items met no failure in a
 * transaction cancelled by others is written again with the rest at once, until every record
 * is written or refused; one whose own items met a conflict or throttling is written again
 * after a backoff (the client leaves these cancellations to the batcher: it would re-send the
 * whole call unchanged); a conflict on the counter shard alone sends the call again at once,
 * on the next shard. A record that cannot be tried again within its time budget fails with
 * `ServiceUnavailableError` (503), as the client's retries would have. Throttling of a whole
 * call, and a store unavailable, are retried by the client (`dynamo-resilience.ts`). What a request makes at once (the merge engine writes up to a hundred
 * records in parallel) thus costs a few calls instead of one per record: on DynamoDB Local
 * a call's own cost dominates, and on AWS every call costs the function CPU and a round trip,
 * while the capacity is the same (two write units per item and KB in a transaction either way).
 *
 * Rules of a batch, kept here so that callers need not know them:
 * - at most `maxItems` items (DynamoDB's 100) and about `maxBytes` of UTF-8 (its limit is
 *   4 MB, counted in bytes);
 * - no item twice (DynamoDB refuses a transaction naming one item twice): a record naming
 *   an item of the batch being filled waits for the next one;
 * - counters (`ADD` of numbers without condition) are summed over the batch into one update
 *   of one shard, chosen round-robin so that transactions in flight at once do not meet on
 *   a shard;
 * - only records of one request (the same time budget) share a transaction, so a request's
 *   retries and deadline are its own.
 * A failure that is not a cancellation (a refused shape, or the store unavailable through
 * the retry budget) fails each record of the batch: alone again when it was one of several
 * (so that a record whose item is too large does not fail the others), or with that error.
 */
export interface CounterAdd {
  table: string;
  /**
   * The counter's partition (`<inst>#C`); the shard (`sk`) is chosen by the batcher. With
   * `shardKey`, the counter's name only (additions to one name are summed).
   */
  pk: string;
  add: Record<string, number>;
  /** Where the shard of this counter is, when not `{pk, sk: <shard>}` (tag counts). */
  shardKey?: (shard: number) => { pk: string; sk: string };
  /** Attributes set with the addition; over a batch, the greatest value is set (times). */
  latest?: Record<string, string>;
}

export interface TransactionPart {
  items: TransactItem[];
  counters?: CounterAdd[];
}

interface Pending {
  part: TransactionPart;
  bytes: number;
  keys: string[];
  alone: boolean;
  /** Transactions this part met conflicts in (another part's failure made them visible). */
  conflicts: number;
  /** Epoch ms after which it is not tried again (its request's deadline). */
  deadline: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface BatcherLimits {
  maxItems: number;
  maxBytes: number;
  shards: number;
  /** Transactions of one flush in flight at once. */
  maxInFlight: number;
}

type Budget = { readonly deadline: number };
/** Work outside any request's budget (the admin CLI, a benchmark) is batched together. */
const NO_BUDGET: Budget = { deadline: Number.NaN };

const DEFAULT_LIMITS: BatcherLimits = {
  maxItems: 100,
  maxBytes: 3_000_000,
  shards: 16,
  maxInFlight: 4,
};

/** The key of the item an entry of a transaction writes or checks (table, pk, sk). */
function itemKey(entry: TransactItem): string {
  const op = entry.Put ?? entry.Update ?? entry.Delete ?? entry.ConditionCheck;
  const key: Record<string, unknown> =
    (entry.Put ? entry.Put.Item : (op as { Key?: Record<string, unknown> } | undefined)?.Key) ?? {};
  return JSON.stringify([op?.TableName, key.pk, key.sk]);
}

const counterId = (counter: CounterAdd) => `${counter.table}\u0000${counter.pk}`;

/**
 * What a part weighs against the 4 MB limit, in bytes as DynamoDB counts them (UTF-8): JSON is
 * a fair upper estimate of item size, but a string's length counts UTF-16 units, which
 * understates non-Latin text up to three times.
 */
export function weigh(part: TransactionPart): number {
  return part.items.reduce((sum, item) => sum + Buffer.byteLength(JSON.stringify(item), 'utf8'), 0);
}

/** A cancellation as a transaction of the part's items alone would have had it. */
function partCancellation(reasons: { Code?: string; Message?: string }[]) {
  return new TransactionCanceledException({
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code ?? 'None').join(', ')}]`,
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: reasons,
  });
}

export class TransactionBatcher {
  /** Parts waiting for the next flush, by the time budget (request) that made them. */
  private readonly waiting = new Map<Budget, Pending[]>();
  private nextShard = randomInt(1 << 16);
  private readonly limits: BatcherLimits;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    limits: Partial<BatcherLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** Writes the part's items (and counters) atomically, sharing a call with parts made meanwhile. */
  write(part: TransactionPart): Promise<void> {
    const budget = currentBudget() ?? NO_BUDGET;
    return new Promise((resolve, reject) => {
      this.enqueue(
        {
          part,
          bytes: weigh(part),
          keys: part.items.map(itemKey),
          alone: false,
          conflicts: 0,
          deadline: budget === NO_BUDGET ? Date.now() + DEFAULT_BUDGET_MS : budget.deadline,
          resolve,
          reject,
        },
        budget,
      );
    });
  }

  private enqueue(pending: Pending, budget: Budget) {
    const queue = this.waiting.get(budget);
    if (queue) {
      queue.push(pending);
      return;
    }
    this.waiting.set(budget, [pending]);
    // Everything the request starts in this turn of the event loop goes in the same flush.
    setImmediate(() => {
      const parts = this.waiting.get(budget) ?? [];
      this.waiting.delete(budget);
      void (budget === NO_BUDGET
        ? this.flush(parts, budget)
        : withDeadline(budget.deadline, () => this.flush(parts, budget)));
    });
  }

  /** Splits the parts into transactions and sends them all at once. */
  private async flush(parts: Pending[], budget: Budget): Promise<void> {
    const batches: Pending[][] = [];
    let batch: Pending[] = [];
    let items = 0;
    let bytes = 0;
    let keys = new Set<string>();
    let counters = new Set<string>();
    const close = () => {
      if (batch.length > 0) batches.push(batch);
      batch = [];
      items = 0;
      bytes = 0;
      keys = new Set();
      counters = new Set();
    };
    const deferred: Pending[] = [];
    for (const pending of parts) {
      if (pending.alone) {
        batches.push([pending]);
        continue;
      }
      // One counter item per batch and counter (the sum of the parts' additions).
      const newCounters = (pending.part.counters ?? [])
        .map(counterId)
        .filter((id) => !counters.has(id));
      if (
        batch.length > 0 &&
        (items + pending.part.items.length + new Set(newCounters).size > this.limits.maxItems ||
          bytes + pending.bytes > this.limits.maxBytes)
      ) {
        close();
      }
      if (pending.keys.some((key) => keys.has(key))) {
        deferred.push(pending);
        continue;
      }
      batch.push(pending);
      bytes += pending.bytes;
      for (const key of pending.keys) keys.add(key);
      items += pending.part.items.length;
      for (const id of (pending.part.counters ?? []).map(counterId)) {
        if (!counters.has(id)) items += 1;
        counters.add(id);
      }
    }
    close();
    // A part naming an item another part of this flush writes goes after it.
    for (const pending of deferred) this.enqueue(pending, budget);
    // Once a transaction fails for the store (unavailable through the retry budget), no new
    // one starts: the records not sent fail with the same error, as if each had been tried.
    let stopped: { error: unknown } | undefined;
    await runBounded(batches, this.limits.maxInFlight, async (members) => {
      if (stopped) {
        for (const member of members) member.reject(stopped.error);
        return;
      }
      const failure = await this.send(members, budget);
      if (failure) stopped ??= failure;
    });
  }

  private counterItems(members: Pending[]): TransactItem[] {
    const sums = new Map<string, CounterAdd>();
    for (const { part } of members) {
      for (const counter of part.counters ?? []) {
        const id = counterId(counter);
        const sum = sums.get(id) ?? { ...counter, add: {}, latest: {} };
        for (const [name, n] of Object.entries(counter.add))
          sum.add[name] = (sum.add[name] ?? 0) + n;
        for (const [name, value] of Object.entries(counter.latest ?? {})) {
          const seen = sum.latest?.[name];
          if (sum.latest && (seen === undefined || value > seen)) sum.latest[name] = value;
        }
        sums.set(id, sum);
      }
    }
    const updates: TransactItem[] = [];
    for (const { table, pk, add, shardKey, latest = {} } of sums.values()) {
      const changes = Object.entries(add).filter(([, n]) => n !== 0);
      const sets = Object.entries(latest);
      if (changes.length === 0 && sets.length === 0) continue;
      const shard = this.nextShard % this.limits.shards;
      this.nextShard += 1;
      const clauses = [
        ...(sets.length > 0 ? [`SET ${sets.map((_, i) => `#s${i} = :s${i}`).join(', ')}`] : []),
        ...(changes.length > 0 ? [`ADD ${changes.map((_, i) => `#c${i} :c${i}`).join(', ')}`] : []),
      ];
      updates.push({
        Update: {
          TableName: table,
          Key: shardKey ? shardKey(shard) : { pk, sk: String(shard) },
          UpdateExpression: clauses.join(' '),
          ExpressionAttributeNames: Object.fromEntries<string>([
            ...changes.map(([name], i): [string, string] => [`#c${i}`, name]),
            ...sets.map(([name], i): [string, string] => [`#s${i}`, name]),
          ]),
          ExpressionAttributeValues: Object.fromEntries<string | number>([
            ...changes.map(([, n], i): [string, number] => [`:c${i}`, n]),
            ...sets.map(([, value], i): [string, string] => [`:s${i}`, value]),
          ]),
        },
      });
    }
    return updates;
  }

  /** Sends one transaction; the store's failure, when it failed for the store. */
  private async send(members: Pending[], budget: Budget): Promise<{ error: unknown } | undefined> {
    const items = members.flatMap((member) => member.part.items);
    // The counter shards are chosen again for every call, so a call sent again after a
    // conflict on its shard goes to another one.
    const counters = this.counterItems(members);
    try {
      await this.db.send(
        leaveCancellationsToCaller(
          new TransactWriteCommand({ TransactItems: [...items, ...counters] }),
        ),
      );
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) {
        // The client retried what can be retried (throttling, the store unavailable).
        if (classifyStoreError(error) !== undefined || error instanceof ServiceUnavailableError) {
          for (const member of members) member.reject(error);
          return { error };
        }
        this.refusedShape(members, error, budget);
        return undefined;
      }
      const codeOf = (reason: { Code?: string } | undefined) => reason?.Code ?? 'None';
      const own = (index: number) => {
        const start = members
          .slice(0, index)
          .reduce((sum, member) => sum + member.part.items.length, 0);
        return (members[index]?.part.items ?? []).map(
          (_, i) => reasons[start + i] ?? { Code: 'None' },
        );
      };
      const failed = members.map((_, index) =>
        own(index).some((reason) => codeOf(reason) !== 'None'),
      );
      const counterCodes = counters.map((_, i) => codeOf(reasons[items.length + i]));
      const counterFailed = counterCodes.some((code) => code !== 'None');
      if (!failed.includes(true) && !counterFailed) {
        // A cancellation that names no item: which record it was is unknown.
        this.refusedShape(members, error, budget);
        return undefined;
      }
      if (counterFailed && !counterCodes.every((code) => TRANSIENT_REASONS.has(code))) {
        // Counters are additions without condition: nothing a record did can fail them.
        for (const member of members) member.reject(error);
        return undefined;
      }
      // The counter shard met another transaction: the next call takes another shard, at
      // once; throttled, the partition (every shard) needs time.
      const counterWait = (member: Pending) =>
        counterCodes.every((code) => code === 'None' || code === 'TransactionConflict')
          ? 0
          : backoffMs(member.conflicts);
      let unavailable: ServiceUnavailableError | undefined;
      const again = (member: Pending, wait: number, counted: boolean) => {
        if (!canWait(wait, member.deadline)) {
          unavailable ??= storeUnavailable('TransactWriteItemsCommand', error);
          member.reject(unavailable);
          return;
        }
        const next = counted ? { ...member, conflicts: member.conflicts + 1 } : member;
        if (wait === 0) this.enqueue(next, budget);
        else {
          setTimeout(() => {
            this.enqueue(next, budget);
          }, wait);
        }
      };
      members.forEach((member, index) => {
        const codes = own(index).map(codeOf);
        if (!failed[index]) {
          // Cancelled by another record, or by the counter shard: written again with the rest.
          again(member, counterFailed ? counterWait(member) : 0, counterFailed);
        } else if (codes.every((code) => TRANSIENT_REASONS.has(code))) {
          // Its own items met conflicts or throttling: written again after a while, as the
          // store's retries would have done had it been alone.
          again(member, backoffMs(member.conflicts), true);
        } else member.reject(partCancellation(own(index)));
      });
      return undefined;
    }
    for (const member of members) member.resolve();
    return undefined;
  }

  /** The store refused the call, not a record's condition: each record is tried alone. */
  private refusedShape(members: Pending[], error: unknown, budget: Budget) {
    if (members.length === 1) members[0]?.reject(error);
    else for (const member of members) this.enqueue({ ...member, alone: true }, budget);
  }
}
