import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Who hears of this process's DynamoDB writes, by table name: the local stack's stream
 * pollers, which run in the process that writes (a region's API and workers) and read a
 * table's stream as soon as it was written to, instead of at the end of an idle wait. On AWS
 * nobody listens (Lambda's event source polls the streams) and a write costs one check more.
 */
export type TableWritesListener = (tables: ReadonlySet<string>) => void;

const listeners = new Set<TableWritesListener>();

/** Hears every successful write of this process's DynamoDB clients; the answer stops it. */
export function onTableWrites(listener: TableWritesListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

interface TransactItem {
  Put?: { TableName?: string };
  Update?: { TableName?: string };
  Delete?: { TableName?: string };
}

/** The tables a write command's input changes (none for a read; a condition check writes nothing). */
export function tablesWritten(command: string, input: Record<string, unknown>): Set<string> {
  const tables = new Set<string>();
  const add = (name: unknown) => {
    if (typeof name === 'string') tables.add(name);
  };
  switch (command.replace(/Command$/, '')) {
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem':
      add(input.TableName);
      break;
    case 'BatchWriteItem':
      for (const name of Object.keys((input.RequestItems as object | undefined) ?? {})) add(name);
      break;
    case 'TransactWriteItems':
      for (const item of (input.TransactItems as TransactItem[] | undefined) ?? []) {
        add((item.Put ?? item.Update ?? item.Delete)?.TableName);
      }
      break;
    default:
  }
  return tables;
}

/** Tells the listeners, after each successful write of this client, which tables it changed. */
export function reportTableWrites(client: DynamoDBClient): DynamoDBClient {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (listeners.size > 0) {
        const tables = tablesWritten(
          context.commandName ?? '',
          args.input as Record<string, unknown>,
        );
        if (tables.size > 0) for (const listener of listeners) listener(tables);
      }
      return result;
    },
    { step: 'initialize', name: 'cdpTableWrites', override: true },
  );
  return client;
}
