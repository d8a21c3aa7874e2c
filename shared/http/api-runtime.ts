import { CachedTenantDirectory, DynamoConfigStore } from '../adapters/config-store.js';
import { createDocumentClient, createS3Client, createSqsClient } from '../adapters/aws-clients.js';
import { SqsIngestQueue } from '../adapters/ingest-queue.js';
import { DynamoRequestStore } from '../adapters/request-store.js';
import { DynamoPeopleStore } from '../adapters/people-store.js';
import { DynamoIdempotencyStore } from '../adapters/idempotency-store.js';
import { DynamoRateLimitStore } from '../adapters/rate-limit-store.js';
import { LocationClient } from '@aws-sdk/client-location';
import { AwsLocationGeocoder, OfflineGeocoder } from '../adapters/geocoders.js';
import { MaxmindIpLocator } from '../adapters/ip-locator.js';
import { z } from 'zod';
import {
  ApiEnv,
  EmailApiEnv,
  ErasureEnv,
  IngestEnv,
  LocationEnv,
  PeopleEnv,
  readEnv,
  SuppressionEnv,
} from '../config/env.js';
import { DynamoOrganizationLifecycleStore } from '../adapters/organization-lifecycle-store.js';
import { DynamoPeopleLifecycleStore } from '../adapters/people-lifecycle-store.js';
import { S3PayloadEraser } from '../adapters/payload-eraser.js';
import { SqsEmailQueue } from '../adapters/email-queue.js';
import { DynamoActivityStore } from '../adapters/activity-store.js';
import { DynamoEmailStore } from '../adapters/email-store.js';
import { LinkSigner, messageLinks } from '../domain/email/link-tokens.js';
import type { GeocodingMeter, LocationServices } from '../domain/location.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { authenticate } from '../domain/tenancy.js';
import { RateLimiter, rateLimitOf } from '../domain/rate-limit.js';
import { logger } from '../lib/logger.js';
import { cursorCodec, type CursorCodec } from '../domain/cursor.js';
import { TtlCache } from '../lib/ttl-cache.js';
import type { Authenticator } from './api-handler.js';

/**
 * What every API function builds once per container: its checked environment, the DynamoDB
 * client, the key-checking authenticator (with its short-lived cache and the container's
 * rate limiter) and, for functions that answer `POST`/`PUT`, the idempotency store. Handler
 * modules call this at module scope; they are the composition roots. `http` is what
 * `apiHandler` takes.
 */
export function createApiRuntime(env: ApiEnv = readEnv(ApiEnv)) {
  const db = createDocumentClient();
  const config = new DynamoConfigStore(db, env.CONFIG_TABLE);
  const directory = new CachedTenantDirectory(
    config,
    env.CDP_CONFIG_CACHE_MS,
    Math.min(env.CDP_CONFIG_CACHE_MS, 5_000),
  );
  const baseUrls = { default: env.BASE_URL_DEFAULT, au: env.BASE_URL_AU, eu: env.BASE_URL_EU };
  const limiter = env.REQUESTS_TABLE ? createRateLimiter(db, env.REQUESTS_TABLE) : undefined;
  // Every request with a key is admitted by the limiter as soon as the key is known, before
  // its body is parsed (limits are enforced before any work): see docs/api.md, Rate limits.
  const authenticator: Authenticator = async (apiKey) => {
    const tenant = await authenticate(apiKey, { region: env.CDP_REGION, baseUrls, directory });
    if (!limiter) {
      throw new Error('Authenticated routes need REQUESTS_TABLE (rate-limit buckets)');
    }
    const { bucket, limit } = rateLimitOf(tenant);
    await limiter.admit(bucket, limit);
    return tenant;
  };
  const signingSecret = signingSecrets(config);
  const idempotency = env.REQUESTS_TABLE
    ? new DynamoIdempotencyStore(db, env.REQUESTS_TABLE)
    : undefined;
  return {
    env,
    db,
    authenticate: authenticator,
    http: { authenticate: authenticator, ...(idempotency ? { idempotency } : {}) },
    config,
    signingSecret,
    cursors: async (instanceId: string): Promise<CursorCodec> =>
      cursorCodec(await signingSecret(), instanceId),
  };
}

/**
 * The rate limiter of the container: buckets in the requests table. A store that stays
 * throttled or unavailable is logged, and keys are then limited by this container alone.
 */
export function createRateLimiter(db: DynamoDBDocumentClient, table: string): RateLimiter {
  return new RateLimiter(new DynamoRateLimitStore(db, table), {
    onStoreFailure: (error, bucket) => {
      logger.warn('Rate-limit store failed: limiting this key in the container alone for now', {
        instanceId: bucket.instanceId,
        error: error as Error,
      });
    },
  });
}

/**
 * The deployment's signing secret (cursors, email links), read once and kept for five
 * minutes. Applying a configuration creates it; a deployment without one cannot sign (a 500
 * that says what to run, in the log).
 */
export function signingSecrets(config: Pick<DynamoConfigStore, 'getSigningSecret'>) {
  const cache = new TtlCache<string>(1);
  return () =>
    cache.getOrLoad('secret', 300_000, async () => {
      const found = await config.getSigningSecret();
      if (!found) {
        throw new Error(
          'This deployment has no signing secret: run `npm run admin -- apply <file>`',
        );
      }
      return found;
    });
}

/** The people store of functions that work on people (tables from `PeopleEnv`). */
export function createPeopleStore(db: DynamoDBDocumentClient): DynamoPeopleStore {
  const env = readEnv(PeopleEnv);
  return new DynamoPeopleStore(db, {
    people: env.PEOPLE_TABLE,
    activities: env.ACTIVITIES_TABLE,
    organizations: env.ORGANIZATIONS_TABLE,
  });
}

/** What functions that write people and their activities build: stores and location services. */
export function createPeopleWriters(db: DynamoDBDocumentClient) {
  const tables = readEnv(PeopleEnv);
  const people = createPeopleStore(db);
  return {
    people,
    location: createLocationServices(people),
    activities: new DynamoActivityStore(db, {
      activities: tables.ACTIVITIES_TABLE,
      people: tables.PEOPLE_TABLE,
    }),
  };
}

/** IP lookups (offline database), address geocoding (per `GEOCODER`) and the billing meter. */
export function createLocationServices(meter: GeocodingMeter): LocationServices {
  const env = readEnv(LocationEnv);
  const geocoder =
    env.GEOCODER === 'aws' && env.PLACE_INDEX_NAME
      ? new AwsLocationGeocoder(new LocationClient({}), env.PLACE_INDEX_NAME)
      : new OfflineGeocoder();
  return { ipLocator: new MaxmindIpLocator(), geocoder, meter };
}

/**
 * Archive, restore and delete of one kind of record: its store (with what erasing people
 * needs, on person delete) and the ingest queue of its background requests. Those messages
 * are small (at most 1000 exclusion IDs), so no payload bucket is needed to queue them.
 */
export function createLifecyclePorts(
  db: DynamoDBDocumentClient,
  subject: 'people' | 'organizations',
  erase = false,
) {
  const env = readEnv(
    z.object({
      INGEST_QUEUE_URL: z.url(),
      REQUESTS_TABLE: z.string().min(3),
      ORGANIZATIONS_TABLE: z.string().min(3),
      PAYLOADS_BUCKET: z.string().min(3).optional(),
    }),
  );
  const ingest = {
    queue: new SqsIngestQueue(
      createSqsClient(),
      env.INGEST_QUEUE_URL,
      createS3Client(),
      env.PAYLOADS_BUCKET ?? '',
    ),
    requests: new DynamoRequestStore(db, env.REQUESTS_TABLE),
  };
  if (subject === 'organizations') {
    return {
      ingest,
      store: new DynamoOrganizationLifecycleStore(db, {
        organizations: env.ORGANIZATIONS_TABLE,
        requests: env.REQUESTS_TABLE,
      }),
    };
  }
  const { PEOPLE_TABLE } = readEnv(PeopleEnv.pick({ PEOPLE_TABLE: true }));
  const erasure = erase
    ? readEnv(ErasureEnv.extend(PeopleEnv.pick({ ACTIVITIES_TABLE: true }).shape))
    : undefined;
  return {
    ingest,
    store: new DynamoPeopleLifecycleStore(
      db,
      {
        people: PEOPLE_TABLE,
        organizations: env.ORGANIZATIONS_TABLE,
        requests: env.REQUESTS_TABLE,
        ...(erasure ? { activities: erasure.ACTIVITIES_TABLE, emails: erasure.EMAILS_TABLE } : {}),
      },
      erasure ? new S3PayloadEraser(createS3Client(), erasure.PAYLOADS_BUCKET) : undefined,
    ),
  };
}

/** The ingest queue and request states of functions that accept asynchronous requests. */
export function createIngestPorts(db: DynamoDBDocumentClient) {
  const env = readEnv(IngestEnv);
  return {
    queue: new SqsIngestQueue(
      createSqsClient(),
      env.INGEST_QUEUE_URL,
      createS3Client(),
      env.PAYLOADS_BUCKET,
    ),
    requests: new DynamoRequestStore(db, env.REQUESTS_TABLE),
  };
}

/** Email links of the region: signed with the deployment's secret, on its public address. */
export function emailLinks(
  env: ApiEnv,
  signingSecret: () => Promise<string>,
  publicBaseUrl: string | undefined,
) {
  const publicUrl =
    publicBaseUrl ??
    { default: env.BASE_URL_DEFAULT, au: env.BASE_URL_AU, eu: env.BASE_URL_EU }[env.CDP_REGION];
  const signer = linkSigners(signingSecret);
  return async (instanceId: string) => {
    const current = await signer();
    return (messageId: string) => messageLinks(publicUrl, current, instanceId, messageId);
  };
}

/** The link signer of the deployment's current secret. */
export function linkSigners(signingSecret: () => Promise<string>) {
  let signer: { secret: string; signer: LinkSigner } | undefined;
  return async () => {
    const secret = await signingSecret();
    if (signer?.secret !== secret) signer = { secret, signer: new LinkSigner(secret) };
    return signer.signer;
  };
}

/** The instance's suppression list (`suppression_list_field_id` on person merge). */
export function createSuppressionList(db: DynamoDBDocumentClient): DynamoEmailStore {
  return new DynamoEmailStore(db, { emails: readEnv(SuppressionEnv).EMAILS_TABLE });
}

/** What sending email takes: the emails table, the email queue and the links. */
export function createEmailPorts(db: DynamoDBDocumentClient) {
  const env = readEnv(EmailApiEnv);
  return {
    env,
    store: new DynamoEmailStore(db, { emails: env.EMAILS_TABLE }),
    queue: new SqsEmailQueue(
      createSqsClient(),
      env.EMAIL_QUEUE_URL,
      createS3Client(),
      env.PAYLOADS_BUCKET,
    ),
  };
}
