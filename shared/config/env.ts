import { z } from 'zod';
import { REGIONS } from '../domain/regions.js';
import { MAX_IN_FLIGHT_PER_ENDPOINT } from '../domain/webhooks/delivery.js';

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
  /**
   * Idempotency records (functions that answer POST/PUT under /v1) and rate-limit buckets
   * (every function with a key): every authenticated function needs it.
   */
  REQUESTS_TABLE: tableName.optional(),
  /**
   * How long a container keeps key lookups and instance configuration (unknown keys at most
   * 5 s). `admin apply --settle` waits this long before its second pass of claims.
   */
  CDP_CONFIG_CACHE_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  /** How often a container reads the keys version (a key revoked reaches it that fast). */
  CDP_KEYS_CHECK_MS: z.coerce.number().int().min(0).max(60_000).default(2_000),
  /** Unknown API keys one address may try a minute before it is refused (429). */
  CDP_UNKNOWN_KEYS_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(60),
  /**
   * A request takes one more token of its key's rate limit per started this many ms of its
   * function's time (docs/api.md, Rate limits). Deployments keep the default; the test
   * stacks raise it, as emulators are many times slower than AWS and their time is not the
   * work a request did.
   */
  CDP_REQUEST_COST_MS: z.coerce.number().int().min(50).max(900_000).default(250),
  /** The region's KMS key wrapping the signing keys (AWS); absent, the local wrapper. */
  SIGNING_KMS_KEY_ID: z.string().min(1).optional(),
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

/** Functions that read (listings) or keep (the audience worker) the field index. */
export const FieldIndexEnv = z.object({ INDEXES_TABLE: tableName });

/** Functions that only work on organizations. */
export const OrganizationsEnv = z.object({ ORGANIZATIONS_TABLE: tableName });

/** Accounts' activities: the accounts they belong to and the activities table. */
export const AccountActivitiesEnv = z.object({
  ORGANIZATIONS_TABLE: tableName,
  ACTIVITIES_TABLE: tableName,
});

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
  /**
   * The messages of a batch applied at once: at most this many (1-10; 2 by default), all
   * (`true`), or one after the other (`false`, as 1) (docs/api.md, back-pressure).
   */
  INGEST_MESSAGES_AT_ONCE: z
    .union([z.enum(['true', 'false']), z.coerce.number().int().min(1).max(10)])
    .default(2)
    .transform((value) => (typeof value === 'number' ? value : value === 'true')),
  /** How long a batched read waits for the batch's other messages' reads to share its call. */
  INGEST_READ_WINDOW_MS: z.coerce.number().int().min(0).max(50).default(2),
  /** Erasing people (background deletes): the sent emails that name them. */
  EMAILS_TABLE: tableName,
  /**
   * How long one delivery of a background archive, restore or delete works before it queues
   * the rest of the request (it always does one page of 100).
   */
  LIFECYCLE_SLICE_MS: z.coerce.number().int().min(0).max(600_000).default(20_000),
  /** Audience subscriptions sent with `async: true`: the members' choices. */
  AUDIENCES_TABLE: tableName,
}).extend(PeopleEnv.shape);

/** Person delete: what names a person (sent emails) and the payloads that may hold them. */
export const ErasureEnv = z.object({
  EMAILS_TABLE: tableName,
  PAYLOADS_BUCKET: z.string().min(3),
});

/** The emails table read for the instance's suppression list (person merge). */
export const SuppressionEnv = z.object({ EMAILS_TABLE: tableName });

/** Where links of sent emails point: the region's public address (its custom domain on AWS). */
const PublicAddress = z.object({ PUBLIC_BASE_URL: z.url().optional() });

/** `POST /v1/transactional/send`: emails, rendered payloads and the email queue. */
export const EmailApiEnv = PublicAddress.extend({
  EMAILS_TABLE: tableName,
  PAYLOADS_BUCKET: z.string().min(3),
  EMAIL_QUEUE_URL: z.url(),
  /**
   * The domain that sends for addresses not on one of the instance's `sending_domains`
   * (verified in SES once per deployment): `<local part>@<this domain>`, Reply-To kept.
   */
  EMAIL_FALLBACK_DOMAIN: z
    .string()
    .regex(/^([a-z0-9-]+\.)+[a-z]{2,}$/i)
    .default('mail.cdp.local'),
});

/** The email worker: emails, payloads, SES, and how fast it retries. */
export const EmailWorkerEnv = z.object({
  CONFIG_TABLE: tableName,
  EMAILS_TABLE: tableName,
  ACTIVITIES_TABLE: tableName,
  PAYLOADS_BUCKET: z.string().min(3),
  EMAIL_QUEUE_URL: z.url(),
  /** The configuration set whose event destination publishes SES events (SNS → SQS). */
  SES_CONFIGURATION_SET: z.string().min(1).optional(),
  /** The account's maximum send rate (emails per second), shared by the worker's batches. */
  SES_MAX_SEND_RATE: z.coerce.number().min(0.1).max(10_000).default(14),
  /** A message that failed comes back after `base · 2^(receives − 1)` seconds. */
  EMAIL_RETRY_BASE_SECONDS: z.coerce.number().min(0.1).max(300).default(10),
  /**
   * How long a send whose outcome is unknown waits for SES's event before SES's events can
   * prove it was not sent (deliver.ts). It must outlast the events worker's own retries
   * (`EMAIL_EVENTS_RETRY_BASE_SECONDS` · 15).
   */
  EMAIL_CONFIRM_WINDOW_SECONDS: z.coerce.number().min(1).max(3_600).default(600),
  /** The SES events' dead-letter queue: an event waiting there forbids any proof. */
  EMAIL_EVENTS_DLQ_URL: z.url().optional(),
  /** The fallback sending domain (a verified identity): the From of delivery probes. */
  EMAIL_FALLBACK_DOMAIN: EmailApiEnv.shape.EMAIL_FALLBACK_DOMAIN,
});

/** The public email links (click, open, unsubscribe) and the SES events worker. */
export const EmailLinksEnv = z.object({
  EMAILS_TABLE: tableName,
  ACTIVITIES_TABLE: tableName,
});

/** The SES events worker: emails, people (a complaint unsubscribes) and its own queue. */
export const EmailEventsWorkerEnv = EmailLinksEnv.extend({
  CONFIG_TABLE: tableName,
  EMAIL_EVENTS_QUEUE_URL: z.url(),
  /** A failed SES event comes back after `base · 2^(receives − 1)` seconds (10, 20, 40, 80). */
  EMAIL_EVENTS_RETRY_BASE_SECONDS: z.coerce.number().min(0.1).max(60).default(10),
}).extend(PeopleEnv.shape);

/** Functions that read or change audiences (docs/audiences.md). */
export const AudiencesEnv = z.object({
  CONFIG_TABLE: tableName,
  AUDIENCES_TABLE: tableName,
  /** Functions that read people or write their enter and exit activities (by their grants). */
  PEOPLE_TABLE: tableName.optional(),
  ACTIVITIES_TABLE: tableName.optional(),
  /** Where builds and deletions are queued (functions that start them). */
  AUDIENCE_JOBS_QUEUE_URL: z.url().optional(),
  /** How long after a change of an audience its rebuild starts (changes meanwhile: one). */
  AUDIENCE_BUILD_DEBOUNCE_SECONDS: z.coerce.number().int().min(0).max(900).default(20),
});

/** The audience worker (the people table's stream): people read, activities written. */
export const AudienceWorkerEnv = AudiencesEnv.extend({
  PEOPLE_TABLE: tableName,
  ACTIVITIES_TABLE: tableName,
});

/** The last-seen worker (the activities table's stream): it updates people only. */
export const LastSeenWorkerEnv = z.object({
  PEOPLE_TABLE: tableName,
});

/** The audience-jobs queue's worker: builds, daily re-evaluations, deletions. */
export const AudienceJobsEnv = AudienceWorkerEnv.extend({
  AUDIENCE_JOBS_QUEUE_URL: z.url(),
  /** A message that failed comes back after `base · 2^(receives − 1)` seconds. */
  AUDIENCE_JOBS_RETRY_BASE_SECONDS: z.coerce.number().min(0.1).max(300).default(5),
  /** How long one message keeps working before it queues the rest of its job. */
  AUDIENCE_JOB_SLICE_MS: z.coerce.number().int().min(100).max(600_000).default(20_000),
});

/** Functions that read or change webhooks (docs/webhooks.md). */
export const WebhooksEnv = z.object({
  CONFIG_TABLE: tableName,
  /** Erased people's marks (the delivery workers read them: `erasures:check`). */
  REQUESTS_TABLE: tableName.optional(),
  /** The region's KMS key wrapping webhook secrets (AWS); absent, the local wrapper. */
  SIGNING_KMS_KEY_ID: z.string().min(1).optional(),
  /**
   * `true` on the local stack only: webhooks may deliver to `http://127.0.0.1` there. No
   * deployment sets it (docs/webhooks.md, "Addresses").
   */
  CDP_WEBHOOKS_ALLOW_LOOPBACK: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((value) => value === 'true' || value === '1'),
  /** Where events are queued for delivery (the fan-out worker, the delivery worker). */
  WEBHOOKS_QUEUE_URL: z.url().optional(),
  /** Deliveries to slow endpoints (the delivery workers: the prompt one moves them there). */
  WEBHOOKS_SLOW_QUEUE_URL: z.url().optional(),
  /** Kept events, attempts and replays (functions granted the deliveries table). */
  DELIVERIES_TABLE: tableName.optional(),
  /** Large events' bodies (claim check): the fan-out writes them, the delivery worker reads. */
  PAYLOADS_BUCKET: z.string().min(3).optional(),
  /** Where replays since a time are queued (the replay endpoint, the replay worker). */
  WEBHOOK_REPLAYS_QUEUE_URL: z.url().optional(),
  /** The most events one replay queues a second (the webhooks queue is every endpoint's). */
  CDP_WEBHOOK_REPLAY_RATE: z.coerce.number().min(1).max(10_000).default(100),
  /** Attempts in flight to one endpoint at once in a delivery worker (delivery.ts). */
  CDP_WEBHOOK_MAX_IN_FLIGHT: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(MAX_IN_FLIGHT_PER_ENDPOINT),
  /**
   * Attempts in flight for one instance at once in a prompt delivery worker: beyond, its
   * messages go to the slow queue (docs/webhooks.md, "Fair shares").
   */
  CDP_WEBHOOK_INSTANCE_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(100).default(20),
  /** How long one message of a replay works before it queues the rest. */
  WEBHOOK_REPLAY_SLICE_MS: z.coerce.number().int().min(100).max(600_000).default(20_000),
});

/**
 * The console's identity provider (docs/console.md): its issuer, the console's app client
 * and, when the issuer does not publish its keys at `<issuer>/.well-known/jwks.json`, where
 * it does. Without an issuer the console's routes refuse every request (401).
 */
export const ConsoleEnv = z.object({
  CONSOLE_ISSUER: z.url().optional(),
  CONSOLE_CLIENT_ID: z.string().min(1).optional(),
  CONSOLE_JWKS_URL: z.url().optional(),
});
