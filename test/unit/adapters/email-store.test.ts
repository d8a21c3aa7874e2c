import { describe, expect, it } from '@jest/globals';
import type { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  DynamoEmailStore,
  LOG_SHARDS,
  messageLogKey,
} from '../../../shared/adapters/email-store.js';
import type { EmailRecord } from '../../../shared/domain/email/messages.js';
import { ServiceUnavailableError } from '../../../shared/domain/errors.js';
import { withDeadline } from '../../../shared/lib/time-budget.js';

type Request = { PutRequest: { Item: Record<string, unknown> } };

/**
 * A store that keeps every person reference (`<inst>#PREF#…`) unprocessed, as DynamoDB may
 * under throttling, and processes everything else: what was stored is kept in `stored`.
 */
function throttlingReferences() {
  const stored: string[] = [];
  const db = {
    send: (command: BatchWriteCommand) => {
      const [table, requests = []] = Object.entries(command.input.RequestItems ?? {})[0] ?? [];
      const left: Request[] = [];
      for (const request of requests as Request[]) {
        const { pk, sk } = request.PutRequest.Item;
        if (String(pk).includes('#PREF#')) left.push(request);
        else stored.push(`${String(pk)}|${String(sk)}`);
      }
      return Promise.resolve(
        left.length > 0 ? { UnprocessedItems: { [table ?? '']: left } } : { UnprocessedItems: {} },
      );
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, stored };
}

const email = (id: string): EmailRecord => ({
  instance_id: 'acme',
  message_id: id,
  request_id: 'r1',
  person_id: `person-${id}`,
  email_name: 'Welcome',
  to: `${id}@example.com`,
  status: 'queued',
  links: [],
  events: [{ type: 'queued', at: '2026-01-01T00:00:00.000Z' }],
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
});

describe('DynamoEmailStore.create', () => {
  it('stores no email whose person reference could not be written (erasure finds emails by it)', async () => {
    const { db, stored } = throttlingReferences();
    const store = new DynamoEmailStore(db, { emails: 'emails' });
    const written: string[] = [];
    // The budget is spent: the references left unprocessed are not asked again.
    const result = await withDeadline(Date.now() - 1, () =>
      store
        .create([email('m1'), email('m2')], (id) => written.push(id))
        .then(
          () => 'created',
          (error: unknown) => error,
        ),
    );
    expect(result).toBeInstanceOf(ServiceUnavailableError);
    expect(written).toEqual([]);
    expect(stored).toEqual([]);
  });

  it('writes the references, then the emails, and reports each email written', async () => {
    const stored: string[] = [];
    const db = {
      send: (command: BatchWriteCommand) => {
        for (const request of Object.values(command.input.RequestItems ?? {}).flat()) {
          const { pk, sk } = (request as Request).PutRequest.Item;
          stored.push(`${String(pk)}|${String(sk)}`);
        }
        return Promise.resolve({ UnprocessedItems: {} });
      },
    } as unknown as DynamoDBDocumentClient;
    const written: string[] = [];
    await new DynamoEmailStore(db, { emails: 'emails' }).create(
      [
        email('m1'),
        { ...email('m2'), message_id: '0066a1f0c7e4b0a1b2c3d4e5', preview_html: '<p>Hi</p>' },
      ],
      (id) => written.push(id),
    );
    expect(written).toEqual(['m1', '0066a1f0c7e4b0a1b2c3d4e5']);
    // Each email after its place in the instance's log (sharded by the ID's tail) and, when
    // built, its preview: in the same batches.
    expect(stored).toEqual([
      'acme#PREF#person-m1|M#m1',
      'acme#PREF#person-m2|M#0066a1f0c7e4b0a1b2c3d4e5',
      'acme#ML#0|m1',
      'acme#M#m1|M',
      `acme#ML#${0xe5 % 8}|0066a1f0c7e4b0a1b2c3d4e5`,
      'acme#M#0066a1f0c7e4b0a1b2c3d4e5|HTML',
      'acme#M#0066a1f0c7e4b0a1b2c3d4e5|M',
    ]);
  });
});

/**
 * A table in memory that answers the log's queries (key conditions as the store writes them)
 * and batch reads, counting the queries.
 */
function inMemoryTable(items: Record<string, unknown>[]) {
  const queries: string[] = [];
  const db = {
    send: (command: { input: Record<string, unknown> }) => {
      const input = command.input;
      if ('KeyConditionExpression' in input) {
        const values = input.ExpressionAttributeValues as Record<string, string>;
        queries.push(values[':pk'] ?? '');
        const prefix = values[':prefix'] ?? '';
        const matching = items
          .filter((item) => item.pk === values[':pk'] && String(item.sk).startsWith(prefix))
          .filter((item) => values[':before'] === undefined || String(item.sk) <= values[':before'])
          .sort((a, b) => String(b.sk).localeCompare(String(a.sk)))
          .slice(0, Number(input.Limit));
        return Promise.resolve({ Items: matching.map((item) => ({ sk: item.sk })) });
      }
      const [table, request] = Object.entries(
        input.RequestItems as Record<string, { Keys: { pk: string; sk: string }[] }>,
      )[0] ?? ['', { Keys: [] }];
      const found = request.Keys.flatMap((key) =>
        items.filter((item) => item.pk === key.pk && item.sk === key.sk),
      );
      return Promise.resolve({ Responses: { [table]: found } });
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, queries };
}

describe('DynamoEmailStore: the log of emails', () => {
  // Twelve emails a millisecond apart: their IDs' last bytes spread them over the shards.
  const ids = Array.from(
    { length: 12 },
    (_, i) =>
      `${(0x19000000000 + i).toString(16).padStart(12, '0')}00000000${i.toString(16).padStart(4, '0')}`,
  );
  const stored = ids.flatMap((id) => [
    { ...messageLogKey('acme', id) },
    { pk: `acme#M#${id}`, sk: 'M', ...email(id), person_id: 'p1' },
    { pk: 'acme#PREF#p1', sk: `M#${id}` },
  ]);

  it('pages the instance’s emails newest first over every shard, one query each', async () => {
    // An email of another instance, and one whose record was erased, in the log.
    const { db, queries } = inMemoryTable([
      ...stored.filter((item) => item.pk !== `acme#M#${ids[9] ?? ''}`),
      { ...messageLogKey('globex', ids[11] ?? '') },
    ]);
    const store = new DynamoEmailStore(db, { emails: 'emails' });
    const first = await store.recent('acme', { limit: 5 });
    expect(queries).toHaveLength(LOG_SHARDS);
    expect(queries.every((pk) => pk.startsWith('acme#ML#'))).toBe(true);
    // The erased one (ids[9]) is left out, and the page still ends where it was cut.
    expect(first.records.map((record) => record.message_id)).toEqual([
      ids[11],
      ids[10],
      ids[8],
      ids[7],
    ]);
    expect(first.next).toBe(ids[7]);
    const second = await store.recent('acme', {
      limit: 5,
      ...(first.next ? { before: first.next } : {}),
    });
    expect(second.records.map((record) => record.message_id)).toEqual(ids.slice(2, 7).reverse());
    expect(second.next).toBe(ids[2]);
    const last = await store.recent('acme', { limit: 5, before: ids[2] ?? '' });
    expect(last.records.map((record) => record.message_id)).toEqual([ids[1], ids[0]]);
    expect(last.next).toBeUndefined();
  });

  it('pages one person’s emails from their references', async () => {
    const { db, queries } = inMemoryTable(stored);
    const store = new DynamoEmailStore(db, { emails: 'emails' });
    const page = await store.ofPerson('acme', 'p1', { limit: 3, before: ids[5] ?? '' });
    expect(queries).toEqual(['acme#PREF#p1']);
    expect(page.records.map((record) => record.message_id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(page.next).toBe(ids[2]);
  });
});
