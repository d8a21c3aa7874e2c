import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoConfigStore } from '../../../shared/adapters/config-store.js';
import { tableName } from '../../../shared/resources.js';
import { adminEnv, run } from '../cli.js';
import { stackDb } from '../stack.js';
import { consoleCall, consoleUser, signIn } from './sign-in.js';

/**
 * A platform admin's list of instances comes from the region's list of instances, one Query
 * (never a scan of the config table): `apply` puts an instance in it in the same transaction
 * as the instance, and `npm run admin -- repair instances` puts there those written before
 * the list existed.
 */
const admin = (...args: string[]) => run(['local/admin.ts', ...args], adminEnv());
const table = tableName('default', 'config');
let adminToken = '';
let acmeToken = '';

beforeAll(async () => {
  [adminToken, acmeToken] = await Promise.all([
    signIn(consoleUser('admin@platform.test')),
    signIn(consoleUser('ops@acme.test')),
  ]);
});

async function listed(token: string): Promise<{ id: string; name: string; plan: string }[]> {
  const answer = await consoleCall('POST', '/console/v1/instances/get', token, {});
  expect(answer.status).toBe(200);
  return answer.body.instances as { id: string; name: string; plan: string }[];
}

/** A document client that records the name of every command it sends. */
function recording(db: DynamoDBDocumentClient, sent: string[]): DynamoDBDocumentClient {
  const send = db.send.bind(db) as (command: { constructor: { name: string } }) => unknown;
  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return (command: { constructor: { name: string } }) => {
        sent.push(command.constructor.name);
        return send(command);
      };
    },
  });
}

describe("a platform admin's list of instances", () => {
  it('shows an instance applied a moment ago, with its name and plan, to the admin only', async () => {
    const id = `listed-${randomUUID().slice(0, 8)}`;
    const file = join(mkdtempSync(join(tmpdir(), 'cdp-list-')), 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        instances: [
          {
            id,
            name: 'Listed Co',
            region: 'default',
            plan: 'business',
            data_sources: [{ name: 'App', api_key: `${id}-key-32-characters-or-more-x` }],
          },
        ],
      }),
    );
    const applied = await admin('apply', file);
    expect(applied.code).toBe(0);
    expect(await listed(adminToken)).toContainEqual({
      id,
      name: 'Listed Co',
      plan: 'business',
      region: 'default',
    });
    expect((await listed(acmeToken)).map((instance) => instance.id)).toEqual(['acme']);
    // The list's entry was written with the instance: it names the same plan.
    const { db } = stackDb();
    const { Item } = await db.send(
      new GetCommand({ TableName: table, Key: { pk: 'INSTANCES', sk: `INST#${id}` } }),
    );
    expect(Item).toMatchObject({ id, name: 'Listed Co', plan: 'business', region: 'default' });
  });

  it('is read with Queries only, never a scan', async () => {
    const { db } = stackDb();
    const sent: string[] = [];
    const store = new DynamoConfigStore(recording(db, sent), table);
    const instances = await store.listInstances();
    expect(instances.map((instance) => instance.id)).toEqual(
      expect.arrayContaining(['acme', 'globex']),
    );
    expect(sent.length).toBeGreaterThan(0);
    expect(new Set(sent)).toEqual(new Set(['QueryCommand']));
    // Sorted by ID, as the console shows them.
    const ids = instances.map((instance) => instance.id);
    expect(ids).toEqual([...ids].sort());
  });

  it('gets an instance written before the list existed back with `repair instances`', async () => {
    const { db } = stackDb();
    const id = `older-${randomUUID().slice(0, 8)}`;
    // An instance as `apply` wrote it before the list: its schema item alone.
    const { Item: acme } = await db.send(
      new GetCommand({ TableName: table, Key: { pk: 'INST#acme', sk: 'SCHEMA' } }),
    );
    if (!acme) throw new Error('the stack has instance acme');
    const schema = { ...(acme.schema as Record<string, unknown>), id, name: 'Older Co' };
    await db.send(
      new PutCommand({ TableName: table, Item: { ...acme, pk: `INST#${id}`, schema } }),
    );
    expect((await listed(adminToken)).map((instance) => instance.id)).not.toContain(id);

    const repaired = await admin('repair', 'instances');
    expect(repaired.code).toBe(0);
    expect(repaired.stdout).toMatch(new RegExp(`Added to the list of instances: .*${id}`));
    expect(await listed(adminToken)).toContainEqual(
      expect.objectContaining({ id, name: 'Older Co' }),
    );
    // Run again, it has nothing to add for it.
    const again = await admin('repair', 'instances');
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain(id);
  });
});
