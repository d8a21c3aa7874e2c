import { z } from 'zod';
import { REGIONS } from '../domain/regions.js';

/**
 * Environment of the functions, read and checked once at cold start. A missing or malformed
 * variable stops the function with a message naming it, instead of failing on first use.
 */
export function readEnv<S extends z.ZodType>(
  schema: S,
  source: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const result = schema.safeParse(source);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid environment: ${problems.join('; ')}`);
  }
  return result.data;
}

const tableName = z.string().min(3);

/** What every API function needs: its region, the config table and the regional addresses. */
export const ApiEnv = z.object({
  CDP_REGION: z.enum(REGIONS),
  CONFIG_TABLE: tableName,
  /** Idempotency records; functions that answer POST/PUT under /v1 need it. */
  REQUESTS_TABLE: tableName.optional(),
  /**
   * How long a container keeps key lookups and instance configuration (unknown keys at most
   * 5 s). `admin apply --settle` waits this long before its second pass of claims.
   */
  CDP_CONFIG_CACHE_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  BASE_URL_DEFAULT: z.url(),
  BASE_URL_AU: z.url(),
  BASE_URL_EU: z.url(),
});
export type ApiEnv = z.infer<typeof ApiEnv>;

/** Functions that resolve locations: which geocoder, and the place index on AWS. */
export const LocationEnv = z
  .object({
    GEOCODER: z.enum(['aws', 'offline']).default('offline'),
    PLACE_INDEX_NAME: z.string().min(1).optional(),
  })
  .refine((env) => env.GEOCODER !== 'aws' || env.PLACE_INDEX_NAME, {
    message: 'PLACE_INDEX_NAME is required when GEOCODER=aws',
    path: ['PLACE_INDEX_NAME'],
  });

/** Functions that only work on organizations. */
export const OrganizationsEnv = z.object({ ORGANIZATIONS_TABLE: tableName });

/** Functions that read and write people (and record their built-in activities). */
export const PeopleEnv = z.object({
  PEOPLE_TABLE: tableName,
  ACTIVITIES_TABLE: tableName,
  ORGANIZATIONS_TABLE: tableName,
});

/** Functions that queue asynchronous requests (and the worker that reads them). */
export const IngestEnv = z.object({
  INGEST_QUEUE_URL: z.url(),
  PAYLOADS_BUCKET: z.string().min(3),
  REQUESTS_TABLE: tableName,
});

/** The ingest worker: everything the domain writes, and how fast it retries a message. */
export const IngestWorkerEnv = IngestEnv.extend({
  CONFIG_TABLE: tableName,

  /** A failed message comes back after `base · 2^(receives − 1)` seconds (5, 10, 20, 40). */
  INGEST_RETRY_BASE_SECONDS: z.coerce.number().min(0.1).max(60).default(5),
}).extend(PeopleEnv.shape);
