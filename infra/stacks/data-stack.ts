import { Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
  type ITable,
} from 'aws-cdk-lib/aws-dynamodb';
import { BlockPublicAccess, Bucket, BucketEncryption, type IBucket } from 'aws-cdk-lib/aws-s3';
import { Queue, QueueEncryption, type IQueue } from 'aws-cdk-lib/aws-sqs';
import { CfnPlaceIndex } from 'aws-cdk-lib/aws-location';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { SigningKey } from '../constructs/signing-key.js';
import { ConsoleUsers, type ConsoleUserPool } from '../constructs/console-users.js';
import { readFileSync } from 'node:fs';
import { ConfigurationFile } from '../../shared/domain/instance-config.js';
import type { Region } from '../../shared/domain/regions.js';
import { AudienceRecheckSchedule } from '../constructs/audience-schedule.js';
import { EmailSending, type EmailSendingData } from '../constructs/email-sending.js';
import { leftOutOnLocalstack } from '../localstack.js';
import {
  BUCKETS,
  QUEUES,
  TABLES,
  queueName,
  streamFailuresQueueName,
  tableName,
  type BucketName,
  type QueueName,
  type TableName,
} from '../../shared/resources.js';

/** What the API stack of the same region receives from this one. */
export interface RegionData {
  region: Region;
  tables: Record<TableName, ITable>;
  queues: Record<QueueName, IQueue>;
  /** Each queue's dead-letter queue (for the alarms and the dashboard). */
  deadLetters: Record<QueueName, IQueue>;
  /** Descriptions of stream batches the stream workers could not process. */
  streamFailures: IQueue;
  buckets: Record<BucketName, IBucket>;
  /** The Amazon Location Service place index address lookups use. */
  placeIndex: { name: string; arn: string };
  email: EmailSendingData;
  /** The KMS key wrapping the signing keyring. */
  signingKey: IKey;
  /** The console's user pool (absent on LocalStack, which has no Cognito in its free edition). */
  console?: ConsoleUserPool;
}

export interface DataStackProps extends StackProps {
  region: Region;
}

/**
 * The stateful half of a regional deployment: tables, queues (each with a dead-letter queue)
 * and buckets, from the list in `shared/resources.ts`. Everything is retained when the stack
 * goes, encrypted at rest, and TLS-only.
 */
export class DataStack extends Stack {
  readonly data: RegionData;

  constructor(scope: Construct, id: string, props: DataStackProps) {
    super(scope, id, props);
    const { region } = props;

    const tables = {} as Record<TableName, ITable>;
    for (const definition of TABLES) {
      const table = new Table(this, `${definition.name}-table`, {
        tableName: tableName(region, definition.name),
        partitionKey: { name: 'pk', type: AttributeType.STRING },
        sortKey: { name: 'sk', type: AttributeType.STRING },
        billingMode: BillingMode.PAY_PER_REQUEST,
        encryption: TableEncryption.AWS_MANAGED,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        deletionProtection: true,
        removalPolicy: RemovalPolicy.RETAIN,
        ...(definition.ttlAttribute ? { timeToLiveAttribute: definition.ttlAttribute } : {}),
        ...(definition.stream ? { stream: StreamViewType[definition.stream] } : {}),
      });
      for (const index of definition.indexes) {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
          sortKey: { name: index.sortKey, type: AttributeType.STRING },
          ...(index.include
            ? { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...index.include] }
            : { projectionType: ProjectionType.KEYS_ONLY }),
        });
      }
      tables[definition.name] = table;
    }

    const queues = {} as Record<QueueName, IQueue>;
    const deadLetterQueues = {} as Record<QueueName, IQueue>;
    for (const definition of QUEUES) {
      const deadLetters = new Queue(this, `${definition.name}-dlq`, {
        queueName: queueName(region, definition.name, true),
        retentionPeriod: Duration.days(14),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        removalPolicy: RemovalPolicy.RETAIN,
      });
      deadLetterQueues[definition.name] = deadLetters;
      NagSuppressions.addResourceSuppressions(deadLetters, [
        { id: 'AwsSolutions-SQS3', reason: 'This is the dead-letter queue of another queue.' },
      ]);
      queues[definition.name] = new Queue(this, `${definition.name}-queue`, {
        queueName: queueName(region, definition.name),
        visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
        retentionPeriod: Duration.days(definition.retentionDays ?? 4),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        deadLetterQueue: { queue: deadLetters, maxReceiveCount: definition.maxReceiveCount },
        removalPolicy: RemovalPolicy.RETAIN,
      });
    }

    const streamFailures = new Queue(this, 'stream-failures', {
      queueName: streamFailuresQueueName(region),
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    NagSuppressions.addResourceSuppressions(streamFailures, [
      {
        id: 'AwsSolutions-SQS3',
        reason:
          'The on-failure destination of the stream workers: a dead-letter queue in all but name.',
      },
    ]);

    new AudienceRecheckSchedule(this, 'audiences-daily', {
      region,
      queue: queues['audience-jobs'],
    });

    const buckets = {} as Record<BucketName, IBucket>;
    for (const definition of BUCKETS) {
      const bucket = new Bucket(this, `${definition.name}-bucket`, {
        blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
        encryption: BucketEncryption.S3_MANAGED,
        enforceSSL: true,
        // Claim-check payloads are only needed until their message is processed.
        lifecycleRules: [{ expiration: Duration.days(30) }],
        removalPolicy: RemovalPolicy.RETAIN,
      });
      NagSuppressions.addResourceSuppressions(bucket, [
        {
          id: 'AwsSolutions-S1',
          reason:
            'Short-lived claim-check payloads written only by our own functions; CloudTrail data events cover access auditing where required.',
        },
      ]);
      buckets[definition.name] = bucket;
    }

    const placeIndexName = `cdp-${region}-places`;
    const placeIndex = leftOutOnLocalstack(this, 'AWS::Location::PlaceIndex')
      ? undefined
      : new CfnPlaceIndex(this, 'place-index', {
          indexName: placeIndexName,
          dataSource: 'Esri',
          // Results are stored on people (their city, region and country).
          dataSourceConfiguration: { intendedUse: 'Storage' },
          pricingPlan: 'RequestBasedUsage',
        });

    const email = new EmailSending(this, 'email', {
      region,
      fallbackDomain: fallbackDomainOf(this, region),
      sendingDomains: sendingDomainsOf(this, region),
      eventsQueue: queues['email-events'],
    });

    const signing = new SigningKey(this, 'signing', { region });
    const consoleUsers = leftOutOnLocalstack(this, 'AWS::Cognito::UserPool')
      ? undefined
      : new ConsoleUsers(this, 'console-users', { region });

    this.data = {
      region,
      signingKey: signing.key,
      tables,
      queues,
      deadLetters: deadLetterQueues,
      streamFailures,
      buckets,
      placeIndex: {
        name: placeIndexName,
        arn:
          placeIndex?.attrArn ??
          this.formatArn({ service: 'geo', resource: 'place-index', resourceName: placeIndexName }),
      },
      email: email.data,
      ...(consoleUsers ? { console: consoleUsers.pool } : {}),
    };
  }
}

/** Context `emailDomains`: the fallback sending domain of each region. */
function fallbackDomainOf(scope: Construct, region: Region): string {
  const domains = scope.node.tryGetContext('emailDomains') as
    Partial<Record<Region, string>> | undefined;
  const domain = domains?.[region];
  if (typeof domain !== 'string' || domain === '') {
    throw new Error(
      `cdk.json context "emailDomains" must give the fallback sending domain of ${region}`,
    );
  }
  return domain;
}

/**
 * Context `instanceConfig` (optional): the instance configuration file whose instances'
 * `sending_domains` get an SES identity in their region. Without it, only the fallback domain.
 */
function sendingDomainsOf(scope: Construct, region: Region): string[] {
  const file = scope.node.tryGetContext('instanceConfig') as string | undefined;
  if (!file) return [];
  const config = ConfigurationFile.parse(JSON.parse(readFileSync(file, 'utf8')));
  return config.instances
    .filter((instance) => instance.region === region)
    .flatMap((instance) => instance.sending_domains);
}
