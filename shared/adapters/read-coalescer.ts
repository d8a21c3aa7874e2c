import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

type Key = Record<string, unknown>;
type Item = Record<string, unknown>;

/** The most keys one `BatchGetItem` takes. */
const MAX_KEYS = 100;

/**
 * Batched reads that callers running side by side make at about the same time, merged into
 * shared `BatchGetItem` calls: the ingest worker applies the messages of an SQS batch at once,
 * and each request reads its people's claims, then its people, with one batched read each
 * (`batchGet`); ten requests of a batch then make two or three such calls in all instead of
 * ten. A read waits at most `windowMs` for others to join it (or until 100 keys are waiting).
 *
 * Only plain reads are merged: one table, `Keys` and `ConsistentRead` alone, and only with
 * reads of the same table and the same consistency (a strongly consistent read is never
 * served by an eventually consistent one). Each caller gets exactly its own keys' items and
 * its own unprocessed keys, as if it had called alone; a key two callers ask for is read
 * once. A call that fails fails every caller in it (each retries as it would have: the
 * store's retries sit below, in the client). Anything else goes straight to the client.
 */
export function coalesceReads(db: DynamoDBDocumentClient, windowMs = 2): DynamoDBDocumentClient {
  const waiting = new Map<string, Waiting>();
  const send = db.send.bind(db) as (command: unknown) => Promise<unknown>;

  const flush = (group: string) => {
    const entry = waiting.get(group);
    if (!entry) return;
    waiting.delete(group);
    clearTimeout(entry.timer);
    void readTogether(send, entry.table, entry.consistent, entry.callers);
  };

  const read = (table: string, keys: Key[], consistent: boolean): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const group = `${consistent ? 'C' : 'E'}:${table}`;
      let entry = waiting.get(group);
      // One call takes 100 keys: a read that would not fit starts the next call.
      if (entry && entry.size + keys.length > MAX_KEYS) {
        flush(group);
        entry = undefined;
      }
      if (!entry) {
        entry = {
          table,
          consistent,
          callers: [],
          size: 0,
          timer: setTimeout(() => {
            flush(group);
          }, windowMs),
        };
        waiting.set(group, entry);
      }
      entry.callers.push({ keys, resolve, reject });
      entry.size += keys.length;
      if (entry.size >= MAX_KEYS) flush(group);
    });

  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return (command: unknown, ...rest: unknown[]) => {
        const plain = rest.length === 0 ? plainRead(command) : undefined;
        if (!plain) return (target.send as (...args: unknown[]) => unknown)(command, ...rest);
        return read(plain.table, plain.keys, plain.consistent);
      };
    },
  });
}

interface Caller {
  keys: Key[];
  resolve(answer: unknown): void;
  reject(error: unknown): void;
}

interface Waiting {
  table: string;
  consistent: boolean;
  callers: Caller[];
  size: number;
  timer: ReturnType<typeof setTimeout>;
}

/** The table, keys and consistency of a read that can share a call; otherwise undefined. */
function plainRead(command: unknown) {
  if (!(command instanceof BatchGetCommand)) return undefined;
  const { RequestItems, ...others } = command.input;
  if (Object.keys(others).length > 0 || !RequestItems) return undefined;
  const tables = Object.entries(RequestItems);
  if (tables.length !== 1) return undefined;
  const [table, request] = tables[0] as [string, NonNullable<(typeof RequestItems)[string]>];
  const { Keys, ConsistentRead, ...options } = request;
  if (Object.keys(options).length > 0 || !Keys || Keys.length === 0 || Keys.length > MAX_KEYS) {
    return undefined;
  }
  return { table, keys: Keys as Key[], consistent: ConsistentRead === true };
}

/** A key's identity: its attributes and values, in the order of its attribute names. */
function keyId(key: Key, names: string[] = Object.keys(key).sort()): string {
  return JSON.stringify(names.map((name) => [name, key[name]]));
}

/** One `BatchGetItem` for the callers' keys (each key once); each caller gets its own share. */
async function readTogether(
  send: (command: unknown) => Promise<unknown>,
  table: string,
  consistent: boolean,
  callers: Caller[],
): Promise<void> {
  const unique = new Map<string, Key>();
  for (const caller of callers) for (const key of caller.keys) unique.set(keyId(key), key);
  let answer: {
    Responses?: Record<string, Item[]>;
    UnprocessedKeys?: Record<string, { Keys?: Key[] }>;
    $metadata?: unknown;
  };
  try {
    answer = (await send(
      new BatchGetCommand({
        RequestItems: { [table]: { Keys: [...unique.values()], ConsistentRead: consistent } },
      }),
    )) as typeof answer;
  } catch (error) {
    for (const caller of callers) caller.reject(error);
    return;
  }
  const names = Object.keys([...unique.values()][0] ?? {}).sort();
  const found = new Map<string, Item>();
  for (const item of answer.Responses?.[table] ?? []) found.set(keyId(item, names), item);
  const unprocessed = new Set(
    (answer.UnprocessedKeys?.[table]?.Keys ?? []).map((key) => keyId(key, names)),
  );
  for (const caller of callers) {
    const ids = caller.keys.map((key) => keyId(key, names));
    const items = [...new Set(ids)].flatMap((id) => {
      const item = found.get(id);
      return item ? [item] : [];
    });
    const left = caller.keys.filter((_, index) => unprocessed.has(ids[index] ?? ''));
    caller.resolve({
      $metadata: answer.$metadata,
      Responses: { [table]: items },
      UnprocessedKeys:
        left.length > 0 ? { [table]: { Keys: left, ConsistentRead: consistent } } : {},
    });
  }
}
