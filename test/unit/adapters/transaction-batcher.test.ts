import { describe, expect, it } from '@jest/globals';
import {
  DynamoDBClient,
  ThrottlingException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../../../shared/adapters/aws-clients.js';
import { cancellationCodes } from '../../../shared/adapters/dynamo-helpers.js';
import { FaultInjector, parseFaults } from '../../../shared/adapters/dynamo-faults.js';
import { mergeWriteError } from '../../../shared/adapters/record-writes.js';
import {
  TransactionBatcher,
  type TransactionPart,
} from '../../../shared/adapters/transaction-batcher.js';
import { ServiceUnavailableError } from '../../../shared/domain/errors.js';
import { WriteConflictError } from '../../../shared/domain/merge/merge-engine.js';
import { withDeadline } from '../../../shared/lib/time-budget.js';

/**
 * The batcher through the project's real DynamoDB client (its retries, `dynamo-resilience.ts`)
 * over a fake transport: each `TransactWriteItems` is answered by `decide`, which sees the
 * items of the call and can cancel it with chosen reasons (what DynamoDB Local never does).
 * Calls that pass are applied to `stored` and `counted`, so outcomes can be checked as state.
 */
interface Call {
  /** `pk|sk` of each item, in order (the counter shards last). */
  keys: string[];
}
type Answer = string[] | Error | undefined;

function fakeStore(decide: (call: Call, n: number) => Answer, faults?: FaultInjector) {
  const calls: Call[] = [];
  const stored = new Set<string>();
  let counted = 0;
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
  const db = createDocumentClient(client, '');
  faults?.install(client);
  client.middlewareStack.add(
    (_next, context) => (args) => {
      if (context.commandName !== 'TransactWriteItemsCommand') {
        return Promise.reject(new Error(`unexpected ${context.commandName}`));
      }
      type Marshalled = { S?: string; N?: string };
      type Op = {
        Item?: Record<string, Marshalled>;
        Key?: Record<string, Marshalled>;
        ExpressionAttributeValues?: Record<string, Marshalled>;
      };
      const entries = (args.input as { TransactItems: Record<string, Op>[] }).TransactItems;
      const ops = entries.map((entry) => Object.values(entry)[0] ?? {});
      const call = {
        keys: ops.map((op) => {
          const key = op.Item ?? op.Key ?? {};
          return `${key.pk?.S}|${key.sk?.S}`;
        }),
      };
      calls.push(call);
      const answer = decide(call, calls.length);
      if (answer instanceof Error) return Promise.reject(answer);
      if (answer) {
        return Promise.reject(
          new TransactionCanceledException({
            message: `Transaction cancelled [${answer.join(', ')}]`,
            $metadata: { httpStatusCode: 400 },
            CancellationReasons: answer.map((Code) => ({ Code })),
          }),
        );
      }
      for (const [i, key] of call.keys.entries()) {
        if (key.startsWith('C|')) counted += Number(ops[i]?.ExpressionAttributeValues?.[':c0']?.N);
        else stored.add(key);
      }
      return Promise.resolve({ output: { $metadata: {} }, response: {} } as never);
    },
    // Below the retries and the injected faults: where the request would go out.
    { step: 'finalizeRequest', priority: 'low', name: 'fakeTransport' },
  );
  return { db, calls, stored, counted: () => counted };
}

/** A person's write: its item, and one to the counter. */
const person = (name: string, extra = ''): TransactionPart => ({
  items: [{ Put: { TableName: 'people', Item: { pk: `P#${name}`, sk: 'P', extra } } }],
  counters: [{ table: 'people', pk: 'C', add: { contacts: 1 } }],
});

/** Reasons for a call: `code` on the item with key `key`, `None` elsewhere. */
const reasonsFor = (call: Call, key: string, code: string) =>
  call.keys.map((k) => (k === key ? code : 'None'));

const outcome = (promise: Promise<void>) =>
  promise.then(
    () => 'written',
    (error: unknown) =>
      error instanceof ServiceUnavailableError
        ? 'unavailable'
        : (cancellationCodes(error) ?? String(error)),
  );

describe('TransactionBatcher over the retrying client', () => {
  it("a conflict on one person's item sends the others again at once, and that one after a backoff", async () => {
    const store = fakeStore((call, n) =>
      n === 1 ? reasonsFor(call, 'P#b|P', 'TransactionConflict') : undefined,
    );
    const batcher = new TransactionBatcher(store.db);
    const names = ['a', 'b', 'c', 'd'];
    const outcomes = await Promise.all(names.map((name) => outcome(batcher.write(person(name)))));
    expect(outcomes).toEqual(['written', 'written', 'written', 'written']);
    const people = (call: Call | undefined) => call?.keys.filter((key) => key.startsWith('P#'));
    // Not the same call again: b left out of the second, then written on its own.
    expect(store.calls).toHaveLength(3);
    expect(people(store.calls[0])).toEqual(['P#a|P', 'P#b|P', 'P#c|P', 'P#d|P']);
    expect(people(store.calls[1])).toEqual(['P#a|P', 'P#c|P', 'P#d|P']);
    expect(people(store.calls[2])).toEqual(['P#b|P']);
    expect([...store.stored].sort()).toEqual(['P#a|P', 'P#b|P', 'P#c|P', 'P#d|P']);
    expect(store.counted()).toBe(4);
  });

  it('one person in conflict through the whole budget answers 503 alone; the others are written', async () => {
    const store = fakeStore((call) =>
      call.keys.includes('P#b|P') ? reasonsFor(call, 'P#b|P', 'TransactionConflict') : undefined,
    );
    const batcher = new TransactionBatcher(store.db);
    const outcomes = await withDeadline(Date.now() + 300, () =>
      Promise.all(['a', 'b', 'c', 'd'].map((name) => outcome(batcher.write(person(name))))),
    );
    expect(outcomes).toEqual(['written', 'unavailable', 'written', 'written']);
    expect([...store.stored].sort()).toEqual(['P#a|P', 'P#c|P', 'P#d|P']);
    expect(store.counted()).toBe(3);
  });

  it('a conflict on the counter shard alone sends the same people again on another shard', async () => {
    const store = fakeStore((call, n) =>
      n === 1
        ? call.keys.map((key) => (key.startsWith('C|') ? 'TransactionConflict' : 'None'))
        : undefined,
    );
    const batcher = new TransactionBatcher(store.db);
    await Promise.all(['a', 'b'].map((name) => batcher.write(person(name))));
    expect(store.calls).toHaveLength(2);
    const [first, second] = store.calls.map((call) => call.keys);
    expect(first?.slice(0, 2)).toEqual(['P#a|P', 'P#b|P']);
    expect(second?.slice(0, 2)).toEqual(['P#a|P', 'P#b|P']);
    const shard = (keys: string[] | undefined) => keys?.find((key) => key.startsWith('C|'));
    expect(shard(first)).toBeDefined();
    expect(shard(second)).toBeDefined();
    expect(shard(second)).not.toBe(shard(first));
    expect(store.counted()).toBe(2);
  });

  it('throttling of the whole call is retried (by the client) and writes everyone once', async () => {
    const store = fakeStore((_call, n) =>
      n <= 2
        ? new ThrottlingException({ message: 'slow down', $metadata: { httpStatusCode: 400 } })
        : undefined,
    );
    const batcher = new TransactionBatcher(store.db);
    const outcomes = await Promise.all(
      ['a', 'b', 'c'].map((name) => outcome(batcher.write(person(name)))),
    );
    expect(outcomes).toEqual(['written', 'written', 'written']);
    expect(store.calls).toHaveLength(3);
    for (const call of store.calls)
      expect(call.keys.filter((k) => k.startsWith('P#'))).toHaveLength(3);
    expect(store.counted()).toBe(3);
  });

  it('a transient cancellation with no time left is a 503, a failed condition stays its own', async () => {
    const store = fakeStore((call) =>
      call.keys.map((key) =>
        key === 'P#a|P' ? 'ConditionalCheckFailed' : key === 'P#b|P' ? 'ThrottlingError' : 'None',
      ),
    );
    const batcher = new TransactionBatcher(store.db);
    // The deadline has passed: no backoff fits.
    const outcomes = await withDeadline(Date.now() - 1, () =>
      Promise.all(['a', 'b'].map((name) => outcome(batcher.write(person(name))))),
    );
    expect(outcomes).toEqual([['ConditionalCheckFailed'], 'unavailable']);
    expect(store.stored.size).toBe(0);
    expect(store.counted()).toBe(0);
  });

  it('conflicts injected as CDP_FAULTS does (a whole call cancelled) still end with everyone written once', async () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    const faults = new FaultInjector(parseFaults('conflict=0.5'), random);
    const store = fakeStore(() => undefined, faults);
    const batcher = new TransactionBatcher(store.db, { maxItems: 10 });
    const names = Array.from({ length: 30 }, (_, i) => `n${i}`);
    const outcomes = await Promise.all(names.map((name) => outcome(batcher.write(person(name)))));
    expect(outcomes.every((o) => o === 'written')).toBe(true);
    expect(faults.counts.conflicts).toBeGreaterThan(0);
    expect(store.stored.size).toBe(30);
    expect(store.counted()).toBe(30);
  });

  it('weighs records in UTF-8 bytes, as DynamoDB does, not in string length', async () => {
    const store = fakeStore(() => undefined);
    // Each about 3,000 bytes of CJK text but 1,000 characters: two do not fit in 4,000 bytes.
    const batcher = new TransactionBatcher(store.db, { maxBytes: 4_000 });
    await Promise.all(['a', 'b'].map((name) => batcher.write(person(name, '日'.repeat(1_000)))));
    expect(store.calls.map((call) => call.keys.filter((k) => k.startsWith('P#')))).toEqual([
      ['P#a|P'],
      ['P#b|P'],
    ]);
  });
});

describe('mergeWriteError', () => {
  const claims = { released: [], added: [] };
  it.each(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded'])(
    'maps a record cancelled by %s to a write conflict (tried again), not a raw error',
    (code) => {
      const cancelled = new TransactionCanceledException({
        message: 'cancelled',
        $metadata: { httpStatusCode: 400 },
        CancellationReasons: [{ Code: code }, { Code: 'None' }],
      });
      expect(mergeWriteError(cancelled, claims)).toBeInstanceOf(WriteConflictError);
    },
  );
});
