import { resolve } from 'node:path';
import { REGIONS, type Region } from '../shared/domain/regions.js';

/**
 * Ports, paths and switches of the local stack, from the environment (docs/local.md lists them).
 * Every port is configurable, so that two stacks can run side by side (the tests do).
 */
export interface StackSettings {
  host: '127.0.0.1';
  port: number;
  dynamodbPort: number;
  sqsPort: number;
  sesPort: number;
  /** The console's local identity provider (`CONSOLE_ISSUER_PORT`, default `PORT` + 3, the port after the regions'). */
  consoleIssuerPort: number;
  dataDir: string;
  ephemeral: boolean;
  seedFile: string | undefined;
  /** `CDP_FAULTS`: DynamoDB faults the API and workers meet (see dynamo-faults.ts). */
  faults: string | undefined;
  /**
   * `CDP_AWS_ENDPOINT=external`: no emulator is started; every AWS client goes to the endpoint
   * the environment names (LocalStack). `undefined`: the stack's own emulators.
   */
  external: ExternalAws | undefined;
  /**
   * `CDP_SKIP_EMULATORS=dynamodb,sqs`: emulators the stack does not start, because something
   * else runs them on their ports and may stop and restart them (the process-fault tests):
   * the stack waits for them to answer and does not stop when they do.
   */
  skipEmulators: ReadonlySet<Emulator>;
  /**
   * `CDP_REGIONS=default`: the regions the stack runs (all three unless said). The benchmarks
   * run the one they measure: on AWS each region is a deployment of its own, and here the
   * others' stream pollers would share DynamoDB Local's one database connection with it.
   */
  regions: readonly Region[];
  /**
   * `CDP_SPLIT_WORKERS=1`: each region's queue workers and stream workers run in processes of
   * their own beside its API (as on AWS, where they are functions of their own), not on the
   * API's event loop.
   */
  splitWorkers: boolean;
}

/**
 * What one regional process runs (`CDP_REGION_ROLE`, set by the stack): `all` (the API and the
 * workers, by default), or one part: `api`, `queue-workers` (with the daily re-evaluation) or
 * `stream-workers` (`CDP_SPLIT_WORKERS=1`: three processes per region).
 */
export const REGION_ROLES = ['all', 'api', 'queue-workers', 'stream-workers'] as const;
export type RegionRole = (typeof REGION_ROLES)[number];

export function regionRoleFrom(raw: string | undefined): RegionRole {
  const role = raw ?? 'all';
  const known = REGION_ROLES.find((candidate) => candidate === role);
  if (!known) throw new Error(`CDP_REGION_ROLE=${role} is not one of ${REGION_ROLES.join(', ')}`);
  return known;
}

/** The emulators `CDP_SKIP_EMULATORS` may name: DynamoDB Local and fauxqs (SQS, SNS, S3). */
export const EMULATORS = ['dynamodb', 'sqs'] as const;
export type Emulator = (typeof EMULATORS)[number];

function emulatorsFrom(name: string, raw: string | undefined): ReadonlySet<Emulator> {
  const names = (raw ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  const unknown = names.filter((part) => !(EMULATORS as readonly string[]).includes(part));
  if (unknown.length > 0) {
    throw new Error(
      `${name}=${raw ?? ''}: ${unknown.join(', ')} is not one of ${EMULATORS.join(', ')}`,
    );
  }
  return new Set(names as Emulator[]);
}

function regionsFrom(raw: string | undefined): readonly Region[] {
  const names = (raw ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (names.length === 0) return REGIONS;
  const unknown = names.filter((part) => !(REGIONS as readonly string[]).includes(part));
  if (unknown.length > 0) {
    throw new Error(
      `CDP_REGIONS=${raw ?? ''}: ${unknown.join(', ')} is not one of ${REGIONS.join(', ')}`,
    );
  }
  return REGIONS.filter((region) => names.includes(region));
}

/** The services the stack uses, by the suffix of their `AWS_ENDPOINT_URL_<SERVICE>` variable. */
export const AWS_SERVICES = ['DYNAMODB', 'DYNAMODB_STREAMS', 'SQS', 'S3', 'SNS', 'SESV2'] as const;
export type AwsService = (typeof AWS_SERVICES)[number];

export interface ExternalAws {
  /** Each service's endpoint: `AWS_ENDPOINT_URL_<SERVICE>`, else `AWS_ENDPOINT_URL`. */
  endpoints: Record<AwsService, string>;
  /** `AWS_ENDPOINT_URL_SESV2` was given: SES v2 is there, whatever LocalStack offers. */
  sesv2Named: boolean;
  /**
   * SES v2 goes to the project's SES stand-in, run by the stack on `$SES_PORT`, because the
   * endpoint has none (LocalStack's free edition has SES v1 only): `useSesStandIn`.
   */
  sesStandIn: boolean;
}

/**
 * Where LocalStack listens unless `AWS_ENDPOINT_URL` says otherwise: `$LOCALSTACK_PORT`, the
 * port `npm run localstack` takes too, else LocalStack's own 4566.
 */
export function defaultExternalEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return `http://localhost:${env.LOCALSTACK_PORT || '4566'}`;
}

function portFrom(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`${name}=${raw} is not a port number`);
  }
  return port;
}

/** An http(s) URL (`localhost:4566` would parse, with `localhost:` as its scheme). */
function urlFrom(name: string, value: string): string {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    throw new Error(`${name}=${value} is not a URL (expected http://host:port)`);
  }
  return url.toString().replace(/\/$/, '');
}

/** Whether `CDP_AWS_ENDPOINT=external` is set (AWS services at an external endpoint). */
export function usesExternalAws(env: NodeJS.ProcessEnv = process.env): boolean {
  const mode = env.CDP_AWS_ENDPOINT?.trim();
  if (!mode) return false;
  if (mode !== 'external') {
    throw new Error(`CDP_AWS_ENDPOINT=${mode} is not understood: the one value is "external"`);
  }
  return true;
}

/**
 * The external endpoints, always set: with `CDP_AWS_ENDPOINT=external` and no endpoint
 * variable, clients go to LocalStack's default address, never to AWS itself.
 */
function readExternalAws(env: NodeJS.ProcessEnv): ExternalAws | undefined {
  if (!usesExternalAws(env)) return undefined;
  const shared = env.AWS_ENDPOINT_URL
    ? urlFrom('AWS_ENDPOINT_URL', env.AWS_ENDPOINT_URL)
    : urlFrom('LOCALSTACK_PORT', defaultExternalEndpoint(env));
  const endpoints = {} as Record<AwsService, string>;
  for (const service of AWS_SERVICES) {
    const name = `AWS_ENDPOINT_URL_${service}`;
    const own = env[name];
    endpoints[service] = own ? urlFrom(name, own) : shared;
  }
  return { endpoints, sesv2Named: Boolean(env.AWS_ENDPOINT_URL_SESV2), sesStandIn: false };
}

/**
 * Whether an endpoint offers SES v2. LocalStack lists its services at `/_localstack/health`
 * (its free edition: `ses`, not `sesv2`); an endpoint that does not answer there is taken to
 * be another emulator of AWS, with SES v2.
 */
export function offersSesV2(health: { status: number; body: string } | undefined): boolean {
  if (health?.status !== 200) return true;
  try {
    const { services } = JSON.parse(health.body) as { services?: Record<string, unknown> };
    return services === undefined || 'sesv2' in services;
  } catch {
    return true;
  }
}

/** Sends SES v2 to the project's SES stand-in, which the stack then runs on `$SES_PORT`. */
export function useSesStandIn(settings: StackSettings): void {
  if (!settings.external) return;
  settings.external.endpoints.SESV2 = `http://${settings.host}:${settings.sesPort}`;
  settings.external.sesStandIn = true;
}

export function readStackSettings(): StackSettings {
  const port = portFrom('PORT', 3000);
  return {
    host: '127.0.0.1',
    port,
    dynamodbPort: portFrom('DYNAMODB_PORT', 8000),
    sqsPort: portFrom('SQS_PORT', 4566),
    sesPort: portFrom('SES_PORT', 8005),
    consoleIssuerPort: portFrom('CONSOLE_ISSUER_PORT', port + 3),
    dataDir: resolve(process.env.CDP_DATA_DIR ?? '.data'),
    ephemeral: process.env.CDP_EPHEMERAL === '1' || process.env.CDP_EPHEMERAL === 'true',
    seedFile: process.env.CDP_SEED_FILE || undefined,
    faults: process.env.CDP_FAULTS?.trim() || undefined,
    external: readExternalAws(process.env),
    skipEmulators: emulatorsFrom('CDP_SKIP_EMULATORS', process.env.CDP_SKIP_EMULATORS),
    regions: regionsFrom(process.env.CDP_REGIONS),
    splitWorkers: process.env.CDP_SPLIT_WORKERS === '1' || process.env.CDP_SPLIT_WORKERS === 'true',
  };
}

export function regionPort(settings: StackSettings, region: Region): number {
  return settings.port + REGIONS.indexOf(region);
}

export function baseUrl(settings: StackSettings, region: Region): string {
  return `http://${settings.host}:${regionPort(settings, region)}`;
}

/**
 * AWS SDK settings that point every client at the local stand-ins, or (external) at the
 * endpoints the environment names. Credentials there are LocalStack's `test`/`test` (its
 * account 000000000000), whatever the environment holds: real keys never go to an emulator.
 */
export function localAwsEnv(settings: StackSettings): Record<string, string> {
  if (settings.external) {
    const env: Record<string, string> = {
      AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    for (const service of AWS_SERVICES) {
      env[`AWS_ENDPOINT_URL_${service}`] = settings.external.endpoints[service];
    }
    return env;
  }
  const sqs = `http://${settings.host}:${settings.sqsPort}`;
  return {
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    AWS_ENDPOINT_URL_DYNAMODB: `http://${settings.host}:${settings.dynamodbPort}`,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: `http://${settings.host}:${settings.dynamodbPort}`,
    AWS_ENDPOINT_URL_SQS: sqs,
    AWS_ENDPOINT_URL_SNS: sqs,
    AWS_ENDPOINT_URL_S3: sqs,
    AWS_ENDPOINT_URL_SESV2: `http://${settings.host}:${settings.sesPort}`,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}
