import type {
  BeginResult,
  IdempotencyStore,
  KeptRecord,
  KeptResponse,
} from '../../../shared/http/idempotency.js';

/** Idempotency records in memory, with the conditions of the DynamoDB store. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly records = new Map<
    string,
    {
      fingerprint: string;
      token?: string;
      leaseUntil?: number;
      response?: KeptResponse;
    }
  >();

  constructor(private readonly now: () => number = Date.now) {}

  begin(
    instanceId: string,
    keyHash: string,
    fingerprint: string,
    token: string,
    leaseUntil: number,
  ): Promise<BeginResult> {
    const id = `${instanceId}#${keyHash}`;
    const existing = this.records.get(id);
    const free = !existing || (!existing.response && (existing.leaseUntil ?? 0) < this.now());
    if (free) {
      this.records.set(id, { fingerprint, token, leaseUntil });
      return Promise.resolve({ kind: 'started', token });
    }
    if (existing.fingerprint !== fingerprint) return Promise.resolve({ kind: 'mismatch' });
    if (!existing.response) return Promise.resolve({ kind: 'in_progress' });
    return Promise.resolve({ kind: 'replay', response: existing.response });
  }

  complete(instanceId: string, keyHash: string, token: string, response: KeptResponse) {
    const record = this.records.get(`${instanceId}#${keyHash}`);
    if (record?.token === token) {
      record.response = response;
      delete record.token;
      delete record.leaseUntil;
    }
    return Promise.resolve();
  }

  peek(instanceId: string, keyHash: string): Promise<KeptRecord | undefined> {
    const record = this.records.get(`${instanceId}#${keyHash}`);
    if (!record) return Promise.resolve(undefined);
    return Promise.resolve({
      fingerprint: record.fingerprint,
      ...(record.response ? { response: record.response } : {}),
    });
  }

  release(instanceId: string, keyHash: string, token: string) {
    const id = `${instanceId}#${keyHash}`;
    if (this.records.get(id)?.token === token) this.records.delete(id);
    return Promise.resolve();
  }
}
