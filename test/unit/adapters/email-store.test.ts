import { describe, expect, it } from '@jest/globals';
import type { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoEmailStore } from '../../../shared/adapters/email-store.js';
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
    // Each email with its place in the instance's log (sharded by the ID's tail) and, when
    // built, its preview: in the same batch.
    expect(stored).toEqual([
      'acme#PREF#person-m1|M#m1',
      'acme#PREF#person-m2|M#0066a1f0c7e4b0a1b2c3d4e5',
      'acme#M#m1|M',
      'acme#ML#0|m1',
      'acme#M#0066a1f0c7e4b0a1b2c3d4e5|M',
      `acme#ML#${0xe5 % 8}|0066a1f0c7e4b0a1b2c3d4e5`,
      'acme#M#0066a1f0c7e4b0a1b2c3d4e5|HTML',
    ]);
  });
});
