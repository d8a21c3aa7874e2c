import { describe, expect, it } from '@jest/globals';
import { ServiceUnavailableError, ValidationError } from '../../../shared/domain/errors.js';
import {
  acceptIngest,
  MaybeQueuedError,
  type IngestMessage,
  type IngestQueue,
} from '../../../shared/domain/ingest/ingest.js';
import {
  getAsyncRequest,
  REQUEST_KINDS,
  type RequestKind,
  type RequestStatus,
  type RequestStore,
} from '../../../shared/domain/ingest/request-status.js';
import { contract } from '../../contract.js';
import { testTenant } from '../fixtures.js';

/** Request states in memory (the ledger is not needed to accept). */
class MemoryRequests implements Pick<RequestStore, 'queued' | 'discard' | 'get'> {
  readonly items = new Map<string, RequestStatus>();
  queued(_instance: string, request: Omit<RequestStatus, 'status'>) {
    this.items.set(request.request_id, { ...request, status: 'queued' });
    return Promise.resolve();
  }
  discard(_instance: string, id: string) {
    if (this.items.get(id)?.status === 'queued') this.items.delete(id);
    return Promise.resolve();
  }
  get(_instance: string, id: string) {
    return Promise.resolve(this.items.get(id));
  }
}

const tenant = testTenant();

function accept(queue: IngestQueue, requests = new MemoryRequests(), check = () => undefined) {
  return acceptIngest(
    {
      kind: 'person-merge',
      body: { async: true, people: [{ fields: { 'str::email': 'a@x.test' } }, { fields: {} }] },
      records: 2,
      check,
    },
    tenant,
    { queue, requests: requests as unknown as RequestStore },
  );
}

describe('accepting an asynchronous request', () => {
  it('queues it without the async flag and answers queued entries and its request ID', async () => {
    const sent: IngestMessage[] = [];
    const requests = new MemoryRequests();
    const answer = await accept({ send: (m) => Promise.resolve(void sent.push(m)) }, requests);
    expect(answer).toEqual({
      people: [{ status: 'queued' }, { status: 'queued' }],
      request_id: expect.stringMatching(/^[0-9a-f]{24}$/) as unknown,
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      request_id: answer.request_id,
      instance_id: 'acme',
      data_source: 'Web',
      kind: 'person-merge',
      records: 2,
    });
    expect(sent[0]?.body).not.toHaveProperty('async');
    expect((await requests.get('acme', answer.request_id))?.status).toBe('queued');
  });

  it('queues nothing when the check refuses the request', async () => {
    const sent: IngestMessage[] = [];
    const requests = new MemoryRequests();
    await expect(
      accept({ send: (m) => Promise.resolve(void sent.push(m)) }, requests, () => {
        throw new ValidationError('people: bad');
      }),
    ).rejects.toThrow(ValidationError);
    expect(sent).toEqual([]);
    expect(requests.items.size).toBe(0);
  });

  it('answers 503 and forgets the request when the queue refused it', async () => {
    const requests = new MemoryRequests();
    await expect(
      accept({ send: () => Promise.reject(new ServiceUnavailableError('down')) }, requests),
    ).rejects.toThrow('down');
    expect(requests.items.size).toBe(0);
  });

  it('names the request ID when the queue never confirmed a send that may have got through', async () => {
    const requests = new MemoryRequests();
    const error = await accept(
      { send: () => Promise.reject(new MaybeQueuedError('no answer')) },
      requests,
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    const [detail] = (error as ServiceUnavailableError).details ?? [];
    expect(detail).toMatchObject({ field: 'request_id', status: 'may_be_queued' });
    expect((error as Error).message).toContain(detail?.request_id ?? '?');
    // It stays recorded as queued: if it got through, the worker applies it.
    expect((await requests.get('acme', detail?.request_id ?? ''))?.status).toBe('queued');
  });
});

/** The answer each kind's route documents (docs/openapi.json), and what it holds when queued. */
const QUEUED: Record<RequestKind, { schema: string; answer: object }> = {
  'person-merge': { schema: 'PersonMergeResponse', answer: { people: [{ status: 'queued' }] } },
  'organizations-merge': {
    schema: 'OrganizationMergeResponse',
    answer: { organizations: [{ status: 'queued' }] },
  },
  'accounts-merge': {
    schema: 'AccountMergeResponse',
    answer: { accounts: [{ status: 'queued' }] },
  },
  'activities-create': {
    schema: 'ActivitiesCreateResponse',
    answer: { activities: [{ person_status: 'queued', status: 'queued' }] },
  },
  'audience-subscribe': {
    schema: 'AudienceSubscribeResponse',
    answer: { audience_id: '', people: [{ person_status: 'queued', status: 'queued' }] },
  },
  'person-archive': {
    schema: 'PersonArchiveResponse',
    answer: { scheduled_contacts: 1, archived_contacts: 0 },
  },
  'person-restore': {
    schema: 'PersonRestoreResponse',
    answer: { scheduled_contacts: 1, restored_contacts: 0 },
  },
  'person-delete': {
    schema: 'PersonDeleteResponse',
    answer: { scheduled_contacts: 1, deleted_contacts: 0 },
  },
  'organizations-archive': {
    schema: 'OrganizationArchiveResponse',
    answer: { scheduled_organizations: 1, archived_organizations: 0 },
  },
  'organizations-restore': {
    schema: 'OrganizationRestoreResponse',
    answer: { scheduled_organizations: 1, restored_organizations: 0 },
  },
  'organizations-delete': {
    schema: 'OrganizationDeleteResponse',
    answer: { scheduled_organizations: 1, deleted_organizations: 0 },
  },
  'accounts-delete': {
    schema: 'AccountDeleteResponse',
    answer: { scheduled_accounts: 1, deleted_accounts: 0 },
  },
};

describe('the answers of accepted requests', () => {
  const queue: IngestQueue = { send: () => Promise.resolve() };

  it.each([...REQUEST_KINDS])('%s: the synchronous shape, queued, as documented', async (kind) => {
    const requests = new MemoryRequests();
    const answer = await acceptIngest(
      { kind, body: {}, records: 1, check: () => undefined },
      tenant,
      { queue, requests: requests as unknown as RequestStore },
    );
    const { schema, answer: expected } = QUEUED[kind];
    expect(answer).toEqual({ ...expected, request_id: expect.stringMatching(/^[0-9a-f]{24}$/) });
    expect(contract().problems(`/components/schemas/${schema}`, answer)).toEqual([]);
  });

  it('shows the progress of a background request while it runs, as documented', async () => {
    const requests = new MemoryRequests();
    const { request_id } = await acceptIngest(
      { kind: 'organizations-delete', body: {}, records: 40, check: () => undefined },
      tenant,
      { queue, requests: requests as unknown as RequestStore },
    );
    const queued = await getAsyncRequest({ request_id }, 'acme', requests);
    expect(queued).toEqual({
      request_id,
      status: 'queued',
      progress: { scheduled_organizations: 40, deleted_organizations: 0 },
    });
    const stored = requests.items.get(request_id);
    if (!stored) throw new Error('not recorded');
    requests.items.set(request_id, {
      ...stored,
      status: 'processing',
      progress: { shard: 3, changed: 17 },
    });
    const running = await getAsyncRequest({ request_id }, 'acme', requests);
    expect(running).toEqual({
      request_id,
      status: 'processing',
      progress: { scheduled_organizations: 40, deleted_organizations: 17 },
    });
    requests.items.set(request_id, {
      ...stored,
      status: 'done',
      result: { scheduled_organizations: 40, deleted_organizations: 39 },
    });
    const done = await getAsyncRequest({ request_id }, 'acme', requests);
    expect(done).toEqual({
      request_id,
      status: 'done',
      result: { scheduled_organizations: 40, deleted_organizations: 39 },
    });
    for (const answer of [queued, running, done]) {
      expect(contract().problems('/components/schemas/AsyncGetResponse', answer)).toEqual([]);
    }
    // A progress of another shape is not what the document describes.
    expect(
      contract().problems('/components/schemas/AsyncGetResponse', {
        ...running,
        progress: { scheduled_organizations: 40, archived_contacts: 17 },
      }),
    ).not.toEqual([]);
  });
});
