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
import { authenticate, type AuthenticationSettings, type Tenant } from '../domain/tenancy.js';
import { TooManyUnknownKeysError, UnknownApiKeyError } from '../domain/errors.js';
import { hashApiKey } from '../domain/api-keys.js';
import { createHash } from 'node:crypto';
import { RateLimiter, rateLimitOf, type RateLimit } from '../domain/rate-limit.js';
import { logger } from '../lib/logger.js';
import {
  issuedCursors,
  memoryCursorStore,
  type CursorCodec,
  type CursorStore,
} from '../domain/cursor.js';
import { DynamoCursorStore } from '../adapters/cursor-store.js';
import { TtlCache } from '../lib/ttl-cache.js';
import { VersionWatch } from '../lib/version-watch.js';
import { createKeyWrapper } from '../adapters/key-wrappers.js';
import {
  KEYRING_CACHE_MS,
  openKeyring,
  singleKeyring,
  type KeyWrapper,
  type Keyring,
} from '../domain/signing-keys.js';
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
  // Key and signing-key changes reach this container within seconds (docs/api.md).
  const versions = new VersionWatch(() => config.keysVersion(), env.CDP_KEYS_CHECK_MS);
  const directory = new CachedTenantDirectory(
    config,
    env.CDP_CONFIG_CACHE_MS,
    Math.min(env.CDP_CONFIG_CACHE_MS, 300_000),
    versions,
  );
  const baseUrls = { default: env.BASE_URL_DEFAULT, au: env.BASE_URL_AU, eu: env.BASE_URL_EU };
  const limiter = env.REQUESTS_TABLE ? createRateLimiter(db, env.REQUESTS_TABLE) : undefined;
  const unknownKeys = env.REQUESTS_TABLE ? createRateLimiter(db, env.REQUESTS_TABLE) : undefined;
  const authenticator: Authenticator = async (apiKey, sourceIp) => {
    if (!limiter || !unknownKeys) {
      throw new Error('Authenticated routes need REQUESTS_TABLE (rate-limit buckets)');
    }
    return authenticateLimited(apiKey, sourceIp, {
      settings: { region: env.CDP_REGION, baseUrls, directory },
      directory,
      limiter,
      unknownKeys,
      unknownKeyLimit: unknownKeyLimit(env.CDP_UNKNOWN_KEYS_PER_MINUTE),
    });
  };
  const signingKeys = signingKeyrings(config, createKeyWrapper(env.SIGNING_KMS_KEY_ID), versions);
  const idempotency = env.REQUESTS_TABLE
    ? new DynamoIdempotencyStore(db, env.REQUESTS_TABLE)
    : undefined;
  const cursorStore: CursorStore = env.REQUESTS_TABLE
    ? new DynamoCursorStore(db, env.REQUESTS_TABLE)
    : memoryCursorStore();
  const charge = async (tenant: Tenant, elapsedMs: number, tokens = 0) => {
    const extra = extraCost(elapsedMs, env.CDP_REQUEST_COST_MS) + tokens;
    if (!limiter || extra === 0) return;
    const { bucket, limit } = rateLimitOf(tenant);
    logger.info('Request cost', {
      instanceId: tenant.instance.id,
      dataSource: tenant.dataSource.name,
      tokens: 1 + extra,
      elapsedMs,
    });
    await limiter.charge(bucket, limit, extra).catch((error: unknown) => {
      logger.warn('Could not charge a request to its key', { error: error as Error });
    });
  };
  return {
    env,
    db,
    authenticate: authenticator,
    http: { authenticate: authenticator, charge, ...(idempotency ? { idempotency } : {}) },
    /** Charges the tenant's key `tokens` requests more (work a request starts beyond itself). */
    chargeTokens: (tenant: Tenant, tokens: number) => charge(tenant, 0, tokens),
    config,
    signingKeys,
    /** The cursors of one listing (`person/get`, …) of an instance. */
    cursors: async (instanceId: string, listing: string): Promise<CursorCodec> =>
      issuedCursors(await signingKeys(), instanceId, listing, cursorStore),
  };
}

/**
 * What a request costs its key beyond its admission token: one token per further started
 * `REQUEST_COST_MS` of the function's time (docs/api.md, Rate limits). A key's requests can
 * so take at most `requests_per_second × REQUEST_COST_MS` of function time a second: with
 * the default 100 a second, 25 s a second, about 25 functions busy, whatever its requests do.
 */
export const REQUEST_COST_MS = 250;

export function extraCost(elapsedMs: number, costMs: number = REQUEST_COST_MS): number {
  return Math.max(0, Math.ceil(elapsedMs / costMs) - 1);
}

/**
 * Unknown keys an address may try (`CDP_UNKNOWN_KEYS_PER_MINUTE`, 60 by default: a minute's
 * worth at once, then one a second). Each costs a strongly consistent read of the config
 * table; past this, the address is refused (429) for any key the container does not already
 * know, without a read, until its next token. Keys are 256 random bits (minted) or at least
 * 32 characters (files): the limit bounds the cost of guessing, not its odds.
 */
export function unknownKeyLimit(perMinute: number): RateLimit {
  return { requests_per_second: perMinute / 60, burst: perMinute };
}

export interface LimitedAuthentication {
  settings: AuthenticationSettings;
  directory: Pick<CachedTenantDirectory, 'knows'>;
  /** Each key's requests. */
  limiter: RateLimiter;
  /** Each address's unknown keys. */
  unknownKeys: RateLimiter;
  unknownKeyLimit: RateLimit;
}

/**
 * A request's key resolved to its tenant, and admitted by the key's rate limit as soon as
 * the key is known, before the body is parsed (docs/api.md, Rate limits). An address that
 * keeps presenting keys no one holds is refused for keys this container does not know.
 */
export async function authenticateLimited(
  apiKey: string | undefined,
  sourceIp: string | undefined,
  ports: LimitedAuthentication,
): Promise<Tenant> {
  const address = sourceIp ? unknownKeyBucket(sourceIp) : undefined;
  const blockedMs = address ? ports.unknownKeys.knownEmptyMs(address) : 0;
  if (blockedMs > 0 && !(apiKey && ports.directory.knows(hashApiKey(apiKey.trim())))) {
    throw new TooManyUnknownKeysError(Math.ceil(blockedMs / 1000), ports.unknownKeyLimit);
  }
  let tenant: Tenant;
  try {
    tenant = await authenticate(apiKey, ports.settings);
  } catch (error) {
    if (error instanceof UnknownApiKeyError && address) {
      const admission = await ports.unknownKeys.check(address, ports.unknownKeyLimit);
      if (!admission.admitted) {
        throw new TooManyUnknownKeysError(admission.retryAfterSeconds, ports.unknownKeyLimit);
      }
    }
    throw error;
  }
  const { bucket, limit } = rateLimitOf(tenant);
  await ports.limiter.admit(bucket, limit);
  return tenant;
}

/** The bucket of an address's unknown keys (the address hashed; no instance's). */
function unknownKeyBucket(sourceIp: string) {
  return {
    instanceId: '#UNKNOWN-KEYS',
    keyId: createHash('sha256').update(sourceIp).digest('hex'),
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
 * The deployment's signing keyring (cursors, email links), unwrapped (KMS on AWS) and kept
 * for `KEYRING_CACHE_MS`, or until the keys version moves (a rotation, a retirement). A
 * deployment whose keyring `admin apply` has not created yet signs with its legacy plain
 * secret, as the `k0` it will become; one with neither cannot sign (a 500 that says what to
 * run, in the log).
 */
export function signingKeyrings(
  config: Pick<DynamoConfigStore, 'getSigningKeys' | 'getLegacySigningSecret'>,
  wrapper: KeyWrapper,
  versions?: VersionWatch,
) {
  const cache = new TtlCache<Keyring>(1);
  versions?.onChange(() => {
    cache.clear();
  });
  return async (): Promise<Keyring> => {
    await versions?.check();
    return cache.getOrLoad('keyring', KEYRING_CACHE_MS, async () => {
      const stored = await config.getSigningKeys();
      if (stored) return openKeyring(stored.keyring, wrapper);
      const legacy = await config.getLegacySigningSecret();
      if (legacy) {
        logger.warn('No signing keyring yet: signing with the legacy secret as k0');
        return singleKeyring(legacy);
      }
      throw new Error(
        'This deployment has no signing keyring: run `npm run admin -- apply <file>`',
      );
    });
  };
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
      /** Deleting organizations: their activities go with them. */
      ACTIVITIES_TABLE: z.string().min(3).optional(),
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
        ...(env.ACTIVITIES_TABLE ? { activities: env.ACTIVITIES_TABLE } : {}),
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
  signingKeys: () => Promise<Keyring>,
  publicBaseUrl: string | undefined,
) {
  const publicUrl =
    publicBaseUrl ??
    { default: env.BASE_URL_DEFAULT, au: env.BASE_URL_AU, eu: env.BASE_URL_EU }[env.CDP_REGION];
  const signer = linkSigners(signingKeys);
  return async (instanceId: string) => {
    const current = await signer();
    return (messageId: string) => messageLinks(publicUrl, current, instanceId, messageId);
  };
}

/** The link signer of the deployment's keyring (one per keyring read). */
export function linkSigners(signingKeys: () => Promise<Keyring>) {
  let signer: { keyring: Keyring; signer: LinkSigner } | undefined;
  return async () => {
    const keyring = await signingKeys();
    if (signer?.keyring !== keyring) signer = { keyring, signer: new LinkSigner(keyring) };
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
