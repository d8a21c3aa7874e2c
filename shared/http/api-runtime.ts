import { CachedTenantDirectory, DynamoConfigStore } from '../adapters/config-store.js';
import { createDocumentClient, createS3Client, createSqsClient } from '../adapters/aws-clients.js';
import { SqsIngestQueue } from '../adapters/ingest-queue.js';
import { DynamoRequestStore } from '../adapters/request-store.js';
import { DynamoPeopleStore } from '../adapters/people-store.js';
import { DynamoIdempotencyStore } from '../adapters/idempotency-store.js';
import { LocationClient } from '@aws-sdk/client-location';
import { AwsLocationGeocoder, OfflineGeocoder } from '../adapters/geocoders.js';
import { MaxmindIpLocator } from '../adapters/ip-locator.js';
import { ApiEnv, IngestEnv, LocationEnv, PeopleEnv, readEnv } from '../config/env.js';
import type { GeocodingMeter, LocationServices } from '../domain/location.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { authenticate } from '../domain/tenancy.js';
import { cursorCodec, type CursorCodec } from '../domain/cursor.js';
import { TtlCache } from '../lib/ttl-cache.js';
import type { Authenticator } from './api-handler.js';

/**
 * What every API function builds once per container: its checked environment, the DynamoDB
 * client, the key-checking authenticator (with its short-lived cache) and, for functions
 * that answer `POST`/`PUT`, the idempotency store. Handler modules call this at module
 * scope; they are the composition roots. `http` is what `apiHandler` takes.
 */
export function createApiRuntime(env: ApiEnv = readEnv(ApiEnv)) {
  const db = createDocumentClient();
  const directory = new CachedTenantDirectory(
    new DynamoConfigStore(db, env.CONFIG_TABLE),
    env.CDP_CONFIG_CACHE_MS,
    Math.min(env.CDP_CONFIG_CACHE_MS, 5_000),
  );
  const baseUrls = { default: env.BASE_URL_DEFAULT, au: env.BASE_URL_AU, eu: env.BASE_URL_EU };
  const authenticator: Authenticator = (apiKey) =>
    authenticate(apiKey, { region: env.CDP_REGION, baseUrls, directory });
  const idempotency = env.REQUESTS_TABLE
    ? new DynamoIdempotencyStore(db, env.REQUESTS_TABLE)
    : undefined;
  return {
    env,
    db,
    authenticate: authenticator,
    http: { authenticate: authenticator, ...(idempotency ? { idempotency } : {}) },
    cursors: cursorCodecs(new DynamoConfigStore(db, env.CONFIG_TABLE)),
  };
}

/**
 * Signed paging cursors of an instance, with the deployment's secret (read once, kept for
 * five minutes). Applying a configuration creates the secret; a deployment without one
 * cannot page (a 500 that says what to run, in the log).
 */
function cursorCodecs(config: DynamoConfigStore) {
  const cache = new TtlCache<string>(1);
  return async (instanceId: string): Promise<CursorCodec> => {
    const secret = await cache.getOrLoad('secret', 300_000, async () => {
      const found = await config.getSigningSecret();
      if (!found) {
        throw new Error(
          'This deployment has no signing secret: run `npm run admin -- apply <file>`',
        );
      }
      return found;
    });
    return cursorCodec(secret, instanceId);
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

/** IP lookups (offline database), address geocoding (per `GEOCODER`) and the billing meter. */
export function createLocationServices(meter: GeocodingMeter): LocationServices {
  const env = readEnv(LocationEnv);
  const geocoder =
    env.GEOCODER === 'aws' && env.PLACE_INDEX_NAME
      ? new AwsLocationGeocoder(new LocationClient({}), env.PLACE_INDEX_NAME)
      : new OfflineGeocoder();
  return { ipLocator: new MaxmindIpLocator(), geocoder, meter };
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
