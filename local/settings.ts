import { resolve } from 'node:path';
import { REGIONS, type Region } from '../shared/domain/regions.js';

/**
 * Ports, paths and switches of the local stack, from the environment (README.md lists them).
 * Every port is configurable, so that two stacks can run side by side (the tests do).
 */
export interface StackSettings {
  host: '127.0.0.1';
  port: number;
  dynamodbPort: number;
  sqsPort: number;
  sesPort: number;
  dataDir: string;
  ephemeral: boolean;
  seedFile: string | undefined;
  /** `CDP_FAULTS`: DynamoDB faults the API and workers meet (see dynamo-faults.ts). */
  faults: string | undefined;
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

export function readStackSettings(): StackSettings {
  return {
    host: '127.0.0.1',
    port: portFrom('PORT', 3000),
    dynamodbPort: portFrom('DYNAMODB_PORT', 8000),
    sqsPort: portFrom('SQS_PORT', 4566),
    sesPort: portFrom('SES_PORT', 8005),
    dataDir: resolve(process.env.CDP_DATA_DIR ?? '.data'),
    ephemeral: process.env.CDP_EPHEMERAL === '1' || process.env.CDP_EPHEMERAL === 'true',
    seedFile: process.env.CDP_SEED_FILE || undefined,
    faults: process.env.CDP_FAULTS?.trim() || undefined,
  };
}

export function regionPort(settings: StackSettings, region: Region): number {
  return settings.port + REGIONS.indexOf(region);
}

export function baseUrl(settings: StackSettings, region: Region): string {
  return `http://${settings.host}:${regionPort(settings, region)}`;
}

/** AWS SDK settings that point every client at the local stand-ins. */
export function localAwsEnv(settings: StackSettings): Record<string, string> {
  const sqs = `http://${settings.host}:${settings.sqsPort}`;
  return {
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    AWS_ENDPOINT_URL_DYNAMODB: `http://${settings.host}:${settings.dynamodbPort}`,
    AWS_ENDPOINT_URL_SQS: sqs,
    AWS_ENDPOINT_URL_SNS: sqs,
    AWS_ENDPOINT_URL_S3: sqs,
    AWS_ENDPOINT_URL_SESV2: `http://${settings.host}:${settings.sesPort}`,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}
