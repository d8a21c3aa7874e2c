import type {
  BucketKey,
  RateLimit,
  RateLimitStore,
  TakeRequest,
  TakeResult,
} from '../../../shared/domain/rate-limit.js';

/** Buckets in memory, with the conditions of the DynamoDB store (one write per call). */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly tats = new Map<string, number>();
  readonly calls: { bucket: BucketKey; request: TakeRequest; result?: TakeResult }[] = [];
  failure: Error | undefined;
  /** Runs before each write is decided: another writer getting in first. */
  before: ((bucket: BucketKey) => void) | undefined;

  take(bucket: BucketKey, request: TakeRequest): Promise<TakeResult> {
    const call: (typeof this.calls)[number] = { bucket, request };
    this.calls.push(call);
    if (this.failure) return Promise.reject(this.failure);
    this.before?.(bucket);
    const id = `${bucket.instanceId}/${bucket.keyId}`;
    const tat = this.tats.get(id);
    const applies =
      request.from === 'full'
        ? tat === undefined || tat <= request.nowUs
        : tat !== undefined && tat > request.nowUs && tat <= request.maxTatUs;
    let result: TakeResult;
    if (applies) {
      const next = (request.from === 'full' ? request.nowUs : (tat ?? 0)) + request.costUs;
      this.tats.set(id, next);
      result = { taken: true, tatUs: next };
    } else {
      result = { taken: false, tatUs: tat };
    }
    call.result = result;
    return Promise.resolve(result);
  }

  /** Tokens left at `nowMs` (the bucket the store holds, without the leases out). */
  tokens(bucket: BucketKey, limit: RateLimit, nowMs: number): number {
    const tat = this.tats.get(`${bucket.instanceId}/${bucket.keyId}`);
    if (tat === undefined || tat <= nowMs * 1000) return limit.burst;
    return limit.burst - ((tat - nowMs * 1000) * limit.requests_per_second) / 1e6;
  }
}
