import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRateLimitStore } from '../../shared/adapters/rate-limit-store.js';
import { hashApiKey } from '../../shared/domain/api-keys.js';
import { RateLimiter } from '../../shared/domain/rate-limit.js';
import { tableName } from '../../shared/resources.js';
import { KEYS, call, stackDb, type ApiResponse } from './stack.js';

/**
 * Rate limits per API key (docs/api.md, Rate limits). The `ratelimited` instance of the seed
 * allows 1 request per second with bursts of 3, for each of its keys; every other instance
 * has the default (100 a second, bursts of 200). Each key is used by one test only, so
 * every test starts from a full bucket.
 */
const LIMIT_MESSAGE =
  /^Rate limit exceeded: this API key may make 1 request per second \(bursts of 3\); retry after 1 second$/;

const listPeople = (key: string) => call('/v1/person/get', { key, body: { limit: 1 } });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function expectRateLimited(response: ApiResponse) {
  expect({ status: response.status, retryAfter: response.headers.get('retry-after') }).toEqual({
    status: 429,
    retryAfter: '1',
  });
  expect(response.body).toEqual({
    request_id: expect.stringMatching(/.+/) as unknown as string,
    code: 429,
    error: expect.stringMatching(LIMIT_MESSAGE) as unknown as string,
  });
  expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
}

/**
 * Sends requests one after another until one is refused; how many were admitted before it,
 * and how long that took. The bucket refills one token a second meanwhile, so a slow run
 * (a stack whose store is throttled) may be admitted more than the burst, never more than
 * the burst plus what refilled.
 */
async function untilRefused(send: () => Promise<ApiResponse>, startedAt: number) {
  const statuses: number[] = [];
  for (let i = 0; i < 10; i += 1) {
    const response = await send();
    if (response.status === 429) {
      return { statuses, refused: response, seconds: (Date.now() - startedAt) / 1000 };
    }
    statuses.push(response.status);
  }
  throw new Error(`never refused: ${statuses.join(', ')}`);
}

describe('rate limits', () => {
  it('admits a burst, refuses the next request with 429 and Retry-After, admits again after it', async () => {
    const startedAt = Date.now();
    const burst = await Promise.all([1, 2, 3].map(() => listPeople(KEYS.ratelimited)));
    expect(burst.map((response) => response.status)).toEqual([200, 200, 200]);
    expect(burst[0]?.body).toMatchObject({ contacts: [] });

    const { statuses, refused, seconds } = await untilRefused(
      () => listPeople(KEYS.ratelimited),
      startedAt,
    );
    expect(statuses.length).toBeLessThanOrEqual(Math.floor(seconds));
    expect(statuses.every((status) => status === 200)).toBe(true);
    expectRateLimited(refused);

    // Refused requests cost nothing, and admitted ones never pass the bucket: the burst plus
    // one a second since the first (within a second of it, none of these is admitted).
    const more = await Promise.all([1, 2, 3, 4, 5].map(() => listPeople(KEYS.ratelimited)));
    for (const response of more.filter((r) => r.status !== 200)) expectRateLimited(response);
    const admitted = 3 + statuses.length + more.filter((r) => r.status === 200).length;
    expect(admitted).toBeLessThanOrEqual(3 + Math.floor((Date.now() - startedAt) / 1000));

    // Other keys are unaffected: another instance's, and another key of the same instance.
    expect((await listPeople(KEYS.globex)).status).toBe(200);
    expect((await listPeople(KEYS.ratelimitedBackend)).status).toBe(200);

    // Waiting as long as Retry-After says is enough (one token a second: at most 1 s).
    let last = await listPeople(KEYS.ratelimited);
    if (last.status === 429) {
      expectRateLimited(last);
      await sleep(Number(last.headers.get('retry-after')) * 1000);
      last = await listPeople(KEYS.ratelimited);
    }
    expect({ status: last.status, error: last.body.error }).toEqual({
      status: 200,
      error: undefined,
    });
  });

  it('counts a key once across functions: every route draws on the same bucket', async () => {
    // Each route is its own function (its own container, locally as on AWS), sharing the
    // bucket in the requests table. Admitted requests get past the limiter (400 for an
    // empty body where the endpoint needs one); the fourth is refused.
    const startedAt = Date.now();
    const routes = ['/v1/person/get', '/v1/organizations/get', '/v1/async/get'];
    const admitted = await Promise.all(
      routes.map((path) => call(path, { key: KEYS.ratelimitedWorker, body: {} })),
    );
    expect(admitted.map((response) => response.status)).toEqual([200, 200, 400]);
    const { statuses, refused, seconds } = await untilRefused(
      () => call('/v1/person/merge', { key: KEYS.ratelimitedWorker, body: {} }),
      startedAt,
    );
    expect(statuses.length).toBeLessThanOrEqual(Math.floor(seconds));
    expectRateLimited(refused);

    // The bucket is one item keyed by the instance and the key's hash (never the key), and
    // it expires once it would be full again (TTL), so idle buckets vanish.
    const { db } = stackDb();
    const { Item } = await db.send(
      new GetCommand({
        TableName: tableName('default', 'requests'),
        Key: { pk: `ratelimited#RATE#${hashApiKey(KEYS.ratelimitedWorker)}`, sk: 'RATE' },
        ConsistentRead: true,
      }),
    );
    const nowS = Date.now() / 1000;
    expect(Item).toEqual({
      pk: `ratelimited#RATE#${hashApiKey(KEYS.ratelimitedWorker)}`,
      sk: 'RATE',
      tat_us: expect.any(Number) as unknown as number,
      expires_at: expect.any(Number) as unknown as number,
    });
    const tatS = Number(Item?.tat_us) / 1e6;
    expect(tatS).toBeGreaterThan(nowS); // the bucket is not full
    expect(tatS).toBeLessThanOrEqual(nowS + 3); // nor more than empty
    expect(Number(Item?.expires_at)).toBeGreaterThanOrEqual(Math.ceil(tatS));
    expect(Number(Item?.expires_at)).toBeLessThanOrEqual(nowS + 3 + 61);
    expect(JSON.stringify(Item)).not.toContain(KEYS.ratelimitedWorker);
  });

  it('keeps one bucket exact for containers racing on DynamoDB', async () => {
    // Four containers, a hundred requests each at once, on one bucket of 100 (50 a second).
    const { db } = stackDb();
    // Each call may take 30 s (the functions' 1 s would cut a loaded machine's slow call and
    // fall back to a local bucket: a failure here, not a wrong count).
    const store = new DynamoRateLimitStore(db, tableName('default', 'requests'), 30_000);
    const failures: unknown[] = [];
    const fleet = Array.from(
      { length: 4 },
      // Leases that outlive a loaded machine's slow calls: a lease that lapsed before its
      // tokens were used would leave the burst unspent, and the test would measure the machine.
      () =>
        new RateLimiter(store, {
          leaseTtlMs: 30_000,
          onStoreFailure: (error) => failures.push(error),
        }),
    );
    const bucket = { instanceId: 'ratelimited', keyId: `race-${randomUUID()}` };
    const limit = { requests_per_second: 50, burst: 100 };
    const startedAt = Date.now();
    const answers = await Promise.all(
      fleet.flatMap((limiter) => Array.from({ length: 100 }, () => limiter.check(bucket, limit))),
    );
    const seconds = (Date.now() - startedAt) / 1000;
    const admitted = answers.filter((answer) => answer.admitted).length;
    expect(failures).toEqual([]);
    // Every token of the burst is used (demand exceeds it), and none beyond what refilled.
    expect(admitted).toBeGreaterThanOrEqual(100);
    expect(admitted).toBeLessThanOrEqual(100 + Math.floor(50 * seconds));
    for (const answer of answers) {
      if (!answer.admitted) expect(answer.retryAfterSeconds).toBe(1);
    }
  });

  it('does not limit the public routes', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => call('/health', { method: 'GET' })),
    );
    expect(answers.map((response) => response.status)).toEqual(Array(10).fill(200));
  });
});
