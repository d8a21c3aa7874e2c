import { describe, expect, it } from '@jest/globals';
import { BatchedAttemptLog, attemptItem } from '../../../shared/adapters/delivery-store.js';
import { issuedCursors, memoryCursorStore } from '../../../shared/domain/cursor.js';
import { NotFoundError, ValidationError } from '../../../shared/domain/errors.js';
import { singleKeyring } from '../../../shared/domain/signing-keys.js';
import { parseWith } from '../../../shared/domain/validation.js';
import {
  DeliveriesGetRequest,
  getDeliveries,
  responseExcerpt,
  type AttemptPageQuery,
  type DeliveryAttempt,
} from '../../../shared/domain/webhooks/attempts.js';
import type { Webhook } from '../../../shared/domain/webhooks/webhook.js';
import { testTenant } from '../fixtures.js';

const store = memoryCursorStore();

const tenant = testTenant();
const WEBHOOK = '0123456789abcdef01234567';

const attempt = (n: number, extra: Partial<DeliveryAttempt> = {}): DeliveryAttempt => ({
  webhook_id: WEBHOOK,
  event_id: `msg_${n.toString(16).padStart(32, '0')}`,
  event_type: 'person.created',
  replay_id: null,
  attempt: 1,
  status: 'succeeded',
  status_code: 200,
  latency_ms: 12,
  response_body: 'ok',
  response_truncated: false,
  error: null,
  attempted_at: new Date(Date.parse('2026-11-24T12:00:00Z') + n * 1000).toISOString(),
  ...extra,
});

function portsFor() {
  const queries: AttemptPageQuery[] = [];
  const ports = {
    webhooks: {
      get: (_instance: string, id: string) =>
        Promise.resolve(id === WEBHOOK ? ({ id } as Pick<Webhook, 'id'> as Webhook) : undefined),
    },
    attempts: {
      attempts: (_instance: string, _webhook: string, query: AttemptPageQuery) => {
        queries.push(query);
        return Promise.resolve({ attempts: [attempt(2), attempt(1)], next: 'position-1' });
      },
    },
    cursors: issuedCursors(singleKeyring('secret'), tenant.instance.id, 'deliveries', store),
  };
  return { ports, queries };
}

const request = (body: Record<string, unknown>) =>
  parseWith(DeliveriesGetRequest, { webhook_id: WEBHOOK, ...body }, 'request body');

describe('webhooks/deliveries/get', () => {
  it('reads a page of the outcome and range asked for, and a cursor for the same listing', async () => {
    const { ports, queries } = portsFor();
    const first = await getDeliveries(
      request({ status: 'failed', from: '2026-11-24T00:00:00+01:00', limit: 2 }),
      tenant,
      ports,
    );
    expect(queries[0]).toEqual({
      outcomes: ['failed'],
      from: '2026-11-23T23:00:00.000Z',
      limit: 2,
    });
    expect(first).toMatchObject({ has_more: true, deliveries: [attempt(2), attempt(1)] });
    const cursor = first.cursor_id ?? '';
    await getDeliveries(
      request({ status: 'failed', from: '2026-11-24T00:00:00+01:00', limit: 2, cursor_id: cursor }),
      tenant,
      ports,
    );
    expect(queries[1]).toMatchObject({ outcomes: ['failed'], before: 'position-1' });
    // The same cursor with other filters belongs to another listing.
    await expect(
      getDeliveries(request({ status: 'succeeded', cursor_id: cursor }), tenant, ports),
    ).rejects.toThrow(/^cursor_id: it was issued for another listing/);
    // Another instance cannot use it either.
    const theirs = {
      ...ports,
      cursors: issuedCursors(singleKeyring('secret'), 'other', 'deliveries', store),
    };
    await expect(
      getDeliveries(
        request({ status: 'failed', from: '2026-11-24T00:00:00+01:00', cursor_id: cursor }),
        tenant,
        theirs,
      ),
    ).rejects.toThrow(ValidationError);
  });

  it('lists both outcomes without a status, and answers an unknown webhook as not found', async () => {
    const { ports, queries } = portsFor();
    await getDeliveries(request({}), tenant, ports);
    expect(queries[0]?.outcomes).toEqual(['succeeded', 'failed']);
    await expect(
      getDeliveries(request({ webhook_id: 'ffffffffffffffffffffffff' }), tenant, ports),
    ).rejects.toThrow(NotFoundError);
  });

  it('refuses a range that ends before it starts, and a bad status, naming the member', () => {
    expect(() => request({ from: '2026-11-24T12:00:00Z', to: '2026-11-24T11:00:00Z' })).toThrow(
      /to: expected a time after from/,
    );
    expect(() => request({ status: 'ok' })).toThrow(/status: expected succeeded or failed/);
    expect(() => request({ from: '2026-02-30T00:00:00Z' })).toThrow(/from: not a valid time/);
    expect(() => request({ to: '2026-11-24T10:00:00' })).toThrow(/to: expected an ISO 8601 time/);
    expect(() => request({ limit: 101 })).toThrow(/limit/);
  });
});

describe('the attempt records', () => {
  it('keeps the first KB of an answer, without a character cut in two', () => {
    expect(responseExcerpt(Buffer.from('short'))).toBe('short');
    const long = Buffer.from(`${'a'.repeat(1023)}é and more`);
    expect(responseExcerpt(long)).toBe('a'.repeat(1023));
    expect(Buffer.byteLength(responseExcerpt(Buffer.from('€'.repeat(400))))).toBeLessThanOrEqual(
      1024,
    );
  });

  it('keys an attempt by its event, replay and number: written again, it is the same item', () => {
    const once = attemptItem('acme', attempt(1));
    const again = attemptItem('acme', attempt(1, { attempted_at: '2026-11-24T13:00:00.000Z' }));
    expect([again.pk, again.sk]).toEqual([once.pk, once.sk]);
    expect(attemptItem('acme', attempt(1, { attempt: 2 })).sk).not.toBe(once.sk);
    expect(attemptItem('acme', attempt(1, { replay_id: 'r1' })).sk).not.toBe(once.sk);
    // Listed by outcome and time: a failed attempt sits in another partition of the index.
    expect(attemptItem('acme', attempt(1, { status: 'failed' })).apk).not.toBe(once.apk);
    expect(String(once.ask).startsWith(attempt(1).attempted_at)).toBe(true);
    expect(once.expires_at).toBe(
      Math.floor((Date.parse(attempt(1).attempted_at) + 30 * 86_400_000) / 1000),
    );
  });

  it('writes the attempts of a batch together when it ends, and reports a write that failed', async () => {
    const writes: number[] = [];
    const log = new BatchedAttemptLog({
      recordAttempts: (entries) => {
        writes.push(entries.length);
        return Promise.resolve();
      },
    });
    await Promise.all(Array.from({ length: 7 }, (_, n) => log.record('acme', attempt(n))));
    expect(writes).toEqual([]);
    await log.flush();
    expect(writes).toEqual([7]);
    await log.flush();
    expect(writes).toEqual([7]);
    const lost: number[] = [];
    const failing = new BatchedAttemptLog(
      { recordAttempts: () => Promise.reject(new Error('throttled')) },
      (_error, count) => lost.push(count),
    );
    await failing.record('acme', attempt(1));
    await failing.record('acme', attempt(2));
    await expect(failing.flush()).resolves.toBeUndefined();
    expect(lost).toEqual([2]);
  });
});
