import { describe, expect, it } from '@jest/globals';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { stackDb } from './stack.js';
import { DynamoConfigStore } from '../../shared/adapters/config-store.js';
import { tableName } from '../../shared/resources.js';
import { newId } from '../../shared/domain/ids.js';
import type { StoredActivityDefinition } from '../../shared/domain/instance-config.js';

/**
 * Read-modify-writes of an instance's configuration, each interleaved the worst way: a
 * second change is made, whole, between the first one's read and its write. The first must
 * then decide again on what the second left, not write back what it read.
 */
const INSTANCE = 'hooks';
const LIMITS = { fields: 100, tracked: 20 };

/**
 * A document client that runs `meanwhile` once, right before the first schema update it
 * sends: after the read that decided that update.
 */
function interleaved(db: DynamoDBDocumentClient, meanwhile: () => Promise<unknown>) {
  let pending: (() => Promise<unknown>) | undefined = meanwhile;
  const send = db.send.bind(db) as (command: unknown) => Promise<unknown>;
  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return async (command: unknown) => {
        if (command instanceof UpdateCommand && pending) {
          const other = pending;
          pending = undefined;
          await other();
        }
        return send(command);
      };
    },
  });
}

function stores(meanwhile: (plain: DynamoConfigStore) => Promise<unknown>) {
  const { db } = stackDb();
  const table = tableName('default', 'config');
  const plain = new DynamoConfigStore(db, table);
  const racing = new DynamoConfigStore(
    interleaved(db, () => meanwhile(plain)),
    table,
  );
  return { plain, racing };
}

function definitionOf(id: string): StoredActivityDefinition {
  return {
    id,
    name: `Race ${id}`,
    attributes: [],
    conversion_value: false,
    track_as_touch: false,
    source: 'api',
  };
}

async function fieldOf(store: DynamoConfigStore, id: string) {
  const instance = await store.getInstance(INSTANCE);
  return instance?.person_fields.find((field) => field.id === id);
}

describe('configuration changes decided on a read another change overtook', () => {
  it('two option lists added to one select field at once: both options kept', async () => {
    const id = `str:cm:race-${newId().slice(-8)}`;
    const { plain, racing } = stores((store) =>
      store.updateCustomField(
        INSTANCE,
        'person',
        id,
        (field) => ({ ...field, values: [...(field.values ?? []), 'B'] }),
        LIMITS,
      ),
    );
    await plain.addCustomField(
      INSTANCE,
      'person',
      { id, name: `Race ${id}`, display_type: 'single_select', values: ['A'], source: 'api' },
      LIMITS,
    );
    await racing.updateCustomField(
      INSTANCE,
      'person',
      id,
      (field) => ({ ...field, values: [...(field.values ?? []), 'C'] }),
      LIMITS,
    );
    expect((await fieldOf(plain, id))?.values).toEqual(['A', 'B', 'C']);
  });

  it('tracking turned on while an option is added: tracking stays on', async () => {
    const id = `str:cm:track-${newId().slice(-8)}`;
    const { plain, racing } = stores((store) =>
      store.updateCustomField(
        INSTANCE,
        'person',
        id,
        (field) => ({ ...field, track_changes: true }),
        LIMITS,
      ),
    );
    await plain.addCustomField(
      INSTANCE,
      'person',
      { id, name: `Track ${id}`, display_type: 'single_select', values: ['A'], source: 'api' },
      LIMITS,
    );
    await racing.updateCustomField(
      INSTANCE,
      'person',
      id,
      (field) => ({ ...field, values: [...(field.values ?? []), 'B'] }),
      LIMITS,
    );
    const field = await fieldOf(plain, id);
    expect(field).toMatchObject({ values: ['A', 'B'], track_changes: true });
    const instance = await plain.getInstance(INSTANCE);
    expect(instance?.person_fields.filter((f) => f.track_changes).map((f) => f.id)).toContain(id);
  });

  it('an activity definition archived while it is modified stays archived', async () => {
    const id = `act:cm:race-${newId().slice(-8)}`;
    const archivedAt = '2026-12-07T10:00:00.000Z';
    const { plain, racing } = stores((store) =>
      store.changeActivityDefinition(INSTANCE, id, (current) => ({
        ...current,
        archived_at: archivedAt,
      })),
    );
    expect(await plain.addActivityDefinition(INSTANCE, definitionOf(id))).toBe(true);
    const decided: StoredActivityDefinition[] = [];
    await racing.changeActivityDefinition(INSTANCE, id, (current) => {
      decided.push(current);
      return { ...current, icon: 'star' };
    });
    // The first decision was made on the unarchived read, the second on the archived one.
    expect(decided.map((d) => d.archived_at)).toEqual([undefined, archivedAt]);
    const stored = (await plain.activityDefinitions(INSTANCE)).find((d) => d.id === id);
    expect(stored).toMatchObject({ archived_at: archivedAt, icon: 'star' });
  });

  it('two definitions’ changes at once: each keeps the other’s', async () => {
    const first = `act:cm:one-${newId().slice(-8)}`;
    const second = `act:cm:two-${newId().slice(-8)}`;
    const { plain, racing } = stores((store) =>
      store.changeActivityDefinition(INSTANCE, second, (current) => ({
        ...current,
        track_as_touch: true,
      })),
    );
    for (const id of [first, second]) {
      await plain.addActivityDefinition(INSTANCE, definitionOf(id));
    }
    await racing.changeActivityDefinition(INSTANCE, first, (current) => ({
      ...current,
      icon: 'star',
    }));
    const definitions = await plain.activityDefinitions(INSTANCE);
    expect(definitions.find((d) => d.id === first)).toMatchObject({ icon: 'star' });
    expect(definitions.find((d) => d.id === second)).toMatchObject({ track_as_touch: true });
  });
});
