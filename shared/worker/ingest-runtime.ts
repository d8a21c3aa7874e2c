import { DynamoMembershipStore } from '../adapters/audience-membership-store.js';
import { DynamoAudienceStore } from '../adapters/audience-store.js';
import {
  AudienceSubscribeRequest,
  subscribeToAudience,
  type SubscribePorts,
} from '../domain/audiences/subscribe.js';
import type { SQSRecord } from 'aws-lambda';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { coalesceReads } from '../adapters/read-coalescer.js';
import { DynamoActivityStore } from '../adapters/activity-store.js';
import { createDocumentClient, createS3Client, createSqsClient } from '../adapters/aws-clients.js';
import { DynamoConfigStore } from '../adapters/config-store.js';
import { SqsIngestQueue } from '../adapters/ingest-queue.js';
import { DynamoOrganizationStore } from '../adapters/organization-store.js';
import { DynamoPeopleStore } from '../adapters/people-store.js';
import { DynamoRequestStore } from '../adapters/request-store.js';
import { IngestWorkerEnv, readEnv } from '../config/env.js';
import {
  ActivitiesCreateRequest,
  recordActivities,
} from '../domain/activities/record-activities.js';
import {
  applyIngest,
  PayloadLostError,
  recordLostPayload,
  type IngestPorts,
} from '../domain/ingest/ingest.js';
import {
  ACCOUNT_NAMES,
  AccountMergeRequest,
  accountResultsOf,
  organizationMergeOf,
} from '../domain/organizations/accounts.js';
import {
  mergeOrganizations,
  OrganizationMergeRequest,
} from '../domain/organizations/organization-merge.js';
import { mergePeople, type SuppressionList } from '../domain/people/merge-people.js';
import { PersonMergeRequest } from '../domain/people/merge-request.js';
import { tenantOf, type TenantDirectory } from '../domain/tenancy.js';
import type { ActivityStore } from '../domain/activities/record-activities.js';
import { isLifecycleKind, type RequestStore } from '../domain/ingest/request-status.js';
import type { GeocodingMeter, LocationServices } from '../domain/location.js';
import type { OrganizationStore } from '../domain/organizations/organization-merge.js';
import type { PeopleStore } from '../domain/people/people-store.js';
import { parseWith } from '../domain/validation.js';
import { createLocationServices } from '../http/api-runtime.js';
import { QUEUES } from '../resources.js';
import { sqsWorker } from './sqs-worker.js';
import { applyLifecycleJob } from '../domain/lifecycle/lifecycle-calls.js';
import type { LifecycleStore } from '../domain/lifecycle/lifecycle.js';
import type { IngestMessage } from '../domain/ingest/ingest.js';
import { DynamoPeopleLifecycleStore } from '../adapters/people-lifecycle-store.js';
import { DynamoOrganizationLifecycleStore } from '../adapters/organization-lifecycle-store.js';
import { S3PayloadEraser } from '../adapters/payload-eraser.js';
import { DynamoEmailStore } from '../adapters/email-store.js';

/** What applying queued requests reads and writes. */
export interface IngestStores {
  requests: RequestStore;
  config: Pick<DynamoConfigStore, 'activityDefinitions'>;
  directory: Pick<TenantDirectory, 'getInstance'>;
  people: PeopleStore & GeocodingMeter;
  organizations: OrganizationStore;
  activities: ActivityStore;
  location: LocationServices;
  /** The suppression list a person merge's `suppression_list_field_id` checks. */
  suppression: SuppressionList;
  /** Archive, restore and delete of each kind of record (background requests). */
  lifecycle: { people: LifecycleStore; organizations: LifecycleStore };
  /** Queues a request again (a background request's next delivery). */
  requeue(message: IngestMessage): Promise<void>;
  /** Audience subscriptions (`PUT /v1/audience/subscribe` with `async: true`). */
  audiences: SubscribePorts;
  /** How long one delivery of a background request works. */
  sliceMs?: number;
}

/** Each kind of queued request applied with the same domain call as its synchronous endpoint. */
export function ingestPorts(stores: IngestStores): IngestPorts {
  const { requests, config, directory, people, organizations, activities, location, suppression } =
    stores;
  const lifecycle = (subject: 'people' | 'organizations') => ({
    store: stores.lifecycle[subject],
    requests,
    ...(stores.sliceMs !== undefined ? { sliceMs: stores.sliceMs } : {}),
  });
  return {
    requests,
    requeue: (message) => stores.requeue(message),
    tenantOf: (instanceId, dataSource) => tenantOf(directory, instanceId, dataSource),
    apply: {
      'person-merge': async (body, tenant, { ledger }) => ({
        people: await mergePeople(parseWith(PersonMergeRequest, body, 'request body'), {
          tenant,
          store: people,
          location,
          ledger,
          suppression,
        }),
      }),
      'organizations-merge': async (body, tenant, { ledger }) => ({
        organizations: await mergeOrganizations(
          parseWith(OrganizationMergeRequest, body, 'request body'),
          { tenant, store: organizations, ledger },
        ),
      }),
      'accounts-merge': async (body, tenant, { ledger }) => ({
        accounts: accountResultsOf(
          await mergeOrganizations(
            organizationMergeOf(parseWith(AccountMergeRequest, body, 'request body')),
            { tenant, store: organizations, ledger, names: ACCOUNT_NAMES },
          ),
        ),
      }),
      'activities-create': async (body, tenant, queued) => ({
        activities: await recordActivities(
          parseWith(ActivitiesCreateRequest, body, 'request body'),
          {
            tenant,
            people,
            activities,
            location,
            freshDefinitions: () => config.activityDefinitions(tenant.instance.id),
            queued,
          },
        ),
      }),
      'audience-subscribe': (body, tenant) =>
        subscribeToAudience(
          parseWith(AudienceSubscribeRequest, body, 'request body'),
          tenant,
          stores.audiences,
        ),
      'person-archive': (body, tenant, queued) =>
        applyLifecycleJob('person-archive', body, tenant, queued, lifecycle('people')),
      'person-restore': (body, tenant, queued) =>
        applyLifecycleJob('person-restore', body, tenant, queued, lifecycle('people')),
      'person-delete': (body, tenant, queued) =>
        applyLifecycleJob('person-delete', body, tenant, queued, lifecycle('people')),
      'organizations-archive': (body, tenant, queued) =>
        applyLifecycleJob(
          'organizations-archive',
          body,
          tenant,
          queued,
          lifecycle('organizations'),
        ),
      'organizations-restore': (body, tenant, queued) =>
        applyLifecycleJob(
          'organizations-restore',
          body,
          tenant,
          queued,
          lifecycle('organizations'),
        ),
      'organizations-delete': (body, tenant, queued) =>
        applyLifecycleJob('organizations-delete', body, tenant, queued, lifecycle('organizations')),
      'accounts-delete': (body, tenant, queued) =>
        applyLifecycleJob('accounts-delete', body, tenant, queued, lifecycle('organizations')),
    },
  };
}

/**
 * Each instance's configuration read once for a batch (the messages of a batch share it). The
 * batch was received after every one of its messages was accepted, so a data source or field
 * a request was accepted with is there (the configuration of now, as for one message alone).
 */
export function batchDirectory(
  directory: Pick<TenantDirectory, 'getInstance'>,
): Pick<TenantDirectory, 'getInstance'> {
  const read = new Map<string, ReturnType<TenantDirectory['getInstance']>>();
  return {
    getInstance: (instanceId) => {
      let found = read.get(instanceId);
      if (!found) {
        found = directory.getInstance(instanceId);
        // A failed read is not kept: the next message of the batch reads again.
        found.catch(() => read.delete(instanceId));
        read.set(instanceId, found);
      }
      return found;
    },
  };
}

/** The clients the ingest worker calls through; each made from the environment unless given. */
export interface IngestClients {
  db: DynamoDBDocumentClient;
  sqs: SQSClient;
  s3: S3Client;
}

/**
 * The ingest worker's composition root: the stores of every kind of asynchronous request,
 * the same domain calls as the synchronous endpoints (under the request's ledger), and the
 * SQS worker stack around them. The messages of a batch are applied `INGEST_MESSAGES_AT_ONCE`
 * at a time (2 unless set), each under its own ledger and with its own outcome (a partial
 * batch response names the ones that failed); the batched reads of those running at once
 * share calls (`coalesceReads`) and their instance's configuration is read once a batch
 * (`batchDirectory`). docs/api.md (back-pressure and the knob) says what that costs and which
 * knobs set it.
 */
export function createIngestWorker(
  env = readEnv(IngestWorkerEnv),
  clients: Partial<IngestClients> = {},
) {
  const {
    db: dbClient = createDocumentClient(),
    sqs = createSqsClient(),
    s3 = createS3Client(),
  } = clients;
  const db = coalesceReads(dbClient, env.INGEST_READ_WINDOW_MS);
  const queue = new SqsIngestQueue(sqs, env.INGEST_QUEUE_URL, s3, env.PAYLOADS_BUCKET);
  const requests = new DynamoRequestStore(db, env.REQUESTS_TABLE);
  const config = new DynamoConfigStore(db, env.CONFIG_TABLE);
  const people = new DynamoPeopleStore(db, {
    people: env.PEOPLE_TABLE,
    activities: env.ACTIVITIES_TABLE,
    organizations: env.ORGANIZATIONS_TABLE,
    requests: env.REQUESTS_TABLE,
  });
  const stores: IngestStores = {
    requests,
    config,
    // Read for each batch (below): a request is applied with the configuration of now.
    directory: config,
    people,
    organizations: new DynamoOrganizationStore(db, env.ORGANIZATIONS_TABLE, env.REQUESTS_TABLE),
    activities: new DynamoActivityStore(db, {
      activities: env.ACTIVITIES_TABLE,
      people: env.PEOPLE_TABLE,
    }),
    location: createLocationServices(people),
    suppression: new DynamoEmailStore(db, { emails: env.EMAILS_TABLE }),
    lifecycle: {
      people: new DynamoPeopleLifecycleStore(
        db,
        {
          people: env.PEOPLE_TABLE,
          organizations: env.ORGANIZATIONS_TABLE,
          activities: env.ACTIVITIES_TABLE,
          requests: env.REQUESTS_TABLE,
          emails: env.EMAILS_TABLE,
        },
        new S3PayloadEraser(s3, env.PAYLOADS_BUCKET),
      ),
      organizations: new DynamoOrganizationLifecycleStore(db, {
        organizations: env.ORGANIZATIONS_TABLE,
        requests: env.REQUESTS_TABLE,
        activities: env.ACTIVITIES_TABLE,
      }),
    },
    requeue: (message) => queue.send(message),
    audiences: {
      audiences: new DynamoAudienceStore(db, {
        config: env.CONFIG_TABLE,
        audiences: env.AUDIENCES_TABLE,
      }),
      people,
      memberships: new DynamoMembershipStore(db, {
        audiences: env.AUDIENCES_TABLE,
        people: env.PEOPLE_TABLE,
      }),
    },
    sliceMs: env.LIFECYCLE_SLICE_MS,
  };
  const maxReceiveCount = QUEUES.find((q) => q.name === 'ingest')?.maxReceiveCount ?? 5;
  return sqsWorker({
    sqs,
    queueUrl: env.INGEST_QUEUE_URL,
    maxReceiveCount,
    backoffBaseSeconds: env.INGEST_RETRY_BASE_SECONDS,
    parallel: env.INGEST_MESSAGES_AT_ONCE,
    // A background archive, restore or delete works a slice of LIFECYCLE_SLICE_MS (20 s): two
    // at a time, the later ones of a batch of them would find too little of the minute left.
    unbounded: (record) => {
      try {
        // The API names every message's kind in an attribute: the body (up to 240 KB) is
        // parsed once, when the message is applied.
        return isLifecycleKind(
          record.messageAttributes.kind?.stringValue ?? queue.envelope(record.body).kind,
        );
      } catch {
        return false;
      }
    },
    batch: () => ingestPorts({ ...stores, directory: batchDirectory(config) }),
    process: async (record: SQSRecord, ports: IngestPorts) => {
      const message = await queue.open(record.body).catch(async (error: unknown) => {
        if (!(error instanceof PayloadLostError)) throw error;
        await recordLostPayload(queue.envelope(record.body), error.key, requests);
        return undefined;
      });
      if (message) await applyIngest(message, ports);
    },
    onLastFailure: async (record: SQSRecord, error: unknown) => {
      const message = queue.envelope(record.body);
      const state = await requests.start(message.instance_id, {
        request_id: message.request_id,
        kind: message.kind,
        records: message.records,
        accepted_at: message.accepted_at,
      });
      if (state === 'done') return 'dead-letter';
      await requests.fail(message.instance_id, message.request_id, {
        error: `could not be applied after ${maxReceiveCount} attempts (${
          error instanceof Error ? error.name : 'error'
        }); it is in the dead-letter queue, and is applied when redriven`,
        code: 503,
      });
      return 'dead-letter';
    },
  });
}
