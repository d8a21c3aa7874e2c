import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  ResourceNotFoundException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableNotExists,
  type AttributeDefinition,
  type DynamoDBClient,
  type GlobalSecondaryIndex,
  type StreamSpecification,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  CreateTopicCommand,
  ListSubscriptionsByTopicCommand,
  SubscribeCommand,
  type SNSClient,
} from '@aws-sdk/client-sns';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  PurgeQueueCommand,
  PurgeQueueInProgress,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  AlreadyExistsException,
  CreateConfigurationSetCommand,
  CreateConfigurationSetEventDestinationCommand,
  CreateEmailIdentityCommand,
  type SESv2Client,
} from '@aws-sdk/client-sesv2';
import type { Region } from '../shared/domain/regions.js';
import {
  BUCKETS,
  QUEUES,
  TABLES,
  localBucketName,
  queueName,
  sesConfigurationSet,
  streamFailuresQueueName,
  tableName,
  type IndexDefinition,
  type QueueName,
  type TableDefinition,
} from '../shared/resources.js';

/**
 * Creates the tables, queues and buckets of one region on the local stand-ins (or, with
 * `CDP_AWS_ENDPOINT=external`, on LocalStack), from the same list the CDK stack reads. Idempotent: what exists is kept (a table gains the indexes the
 * list added since), so a restart finds the data of the last run.
 */
function attributeDefinitions(table: TableDefinition): AttributeDefinition[] {
  const names = new Set(['pk', 'sk']);
  for (const index of table.indexes) names.add(index.partitionKey).add(index.sortKey);
  return [...names].map((AttributeName) => ({ AttributeName, AttributeType: 'S' }));
}

function gsi(index: IndexDefinition): GlobalSecondaryIndex {
  return {
    IndexName: index.name,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' },
      { AttributeName: index.sortKey, KeyType: 'RANGE' },
    ],
    Projection: index.include
      ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.include] }
      : { ProjectionType: 'KEYS_ONLY' },
  };
}

function streamSpecification(table: TableDefinition): StreamSpecification {
  return table.stream
    ? { StreamEnabled: true, StreamViewType: table.stream }
    : { StreamEnabled: false };
}

/**
 * Creates a table, again after a while when the endpoint failed to (LocalStack, right after
 * the table was dropped: the stream of the table it replaces is still being removed, and its
 * CreateTable answers 500 "Stream … already exists", sometimes leaving the table half made,
 * which goes first).
 */
async function createTable(
  db: DynamoDBClient,
  TableName: string,
  command: () => CreateTableCommand,
): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await db.send(command());
      return;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
        ?.httpStatusCode;
      const retryable =
        status === undefined ||
        status >= 500 ||
        (error as Error).name === 'ResourceInUseException' ||
        /already exists/i.test(String(error));
      if (!retryable || attempt >= 8) throw error;
      await db.send(new DeleteTableCommand({ TableName })).catch(() => undefined);
      await waitUntilTableNotExists({ client: db, maxWaitTime: 60 }, { TableName });
      await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
    }
  }
}

async function ensureTable(db: DynamoDBClient, region: Region, table: TableDefinition) {
  const TableName = tableName(region, table.name);
  let existing: Set<string> | undefined;
  let streamView: string | undefined;
  try {
    const { Table } = await db.send(new DescribeTableCommand({ TableName }));
    existing = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName ?? ''));
    streamView = Table?.StreamSpecification?.StreamEnabled
      ? Table.StreamSpecification.StreamViewType
      : undefined;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  if (!existing) {
    await createTable(
      db,
      TableName,
      () =>
        new CreateTableCommand({
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: attributeDefinitions(table),
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          ...(table.indexes.length > 0 ? { GlobalSecondaryIndexes: table.indexes.map(gsi) } : {}),
          ...(table.stream ? { StreamSpecification: streamSpecification(table) } : {}),
        }),
    );
    if (table.ttlAttribute) {
      await db.send(
        new UpdateTimeToLiveCommand({
          TableName,
          TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
        }),
      );
    }
    return;
  }
  // A table made before the list gave it a stream (or another view) gets it now.
  if (table.stream && streamView !== table.stream) {
    if (streamView) {
      await db.send(
        new UpdateTableCommand({ TableName, StreamSpecification: { StreamEnabled: false } }),
      );
    }
    await db.send(
      new UpdateTableCommand({ TableName, StreamSpecification: streamSpecification(table) }),
    );
  }
  for (const index of table.indexes.filter((candidate) => !existing.has(candidate.name))) {
    await db.send(
      new UpdateTableCommand({
        TableName,
        AttributeDefinitions: attributeDefinitions(table),
        GlobalSecondaryIndexUpdates: [{ Create: gsi(index) }],
      }),
    );
  }
}

export async function ensureTables(db: DynamoDBClient, region: Region): Promise<void> {
  for (const table of TABLES) await ensureTable(db, region, table);
}

/**
 * Deletes a region's tables, for a stack on an external endpoint that is to start from
 * nothing (`CDP_EPHEMERAL=1`): LocalStack keeps its state until it restarts, where the local
 * emulators forget by running in memory. Run before `ensureTables`, which makes them again.
 */
export async function dropTables(db: DynamoDBClient, region: Region): Promise<void> {
  for (const table of TABLES) {
    const TableName = tableName(region, table.name);
    try {
      await db.send(new DeleteTableCommand({ TableName }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) continue;
      throw error;
    }
    await waitUntilTableNotExists({ client: db, maxWaitTime: 60 }, { TableName });
  }
}

export type QueueUrls = Record<QueueName, string>;

export async function ensureQueues(sqs: SQSClient, region: Region): Promise<QueueUrls> {
  const urls: Partial<QueueUrls> = {};
  for (const queue of QUEUES) {
    const dlq = await sqs.send(
      new CreateQueueCommand({ QueueName: queueName(region, queue.name, true) }),
    );
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: queueName(region, queue.name),
        Attributes: {
          VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: Attributes?.QueueArn,
            maxReceiveCount: String(queue.maxReceiveCount),
          }),
        },
      }),
    );
    if (!created.QueueUrl) throw new Error(`No URL for queue ${queue.name}`);
    urls[queue.name] = created.QueueUrl;
  }
  return urls as QueueUrls;
}

/** The queue stream workers describe the batches they could not process to (its URL). */
export async function ensureStreamFailuresQueue(sqs: SQSClient, region: Region): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: streamFailuresQueueName(region) }),
  );
  if (!QueueUrl) throw new Error(`No URL for queue ${streamFailuresQueueName(region)}`);
  return QueueUrl;
}

/**
 * Empties a region's queues and dead-letter queues (`CDP_EPHEMERAL=1` on an external
 * endpoint, with `dropTables`), so that no message of an earlier run reaches the new tables.
 * A purge refused as one is already under way (SQS allows one a minute) has the same effect.
 */
export async function purgeQueues(sqs: SQSClient, region: Region): Promise<void> {
  const names = [
    ...QUEUES.flatMap((queue) => [
      queueName(region, queue.name),
      queueName(region, queue.name, true),
    ]),
    streamFailuresQueueName(region),
  ];
  for (const QueueName of names) {
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName }));
    try {
      await sqs.send(new PurgeQueueCommand({ QueueUrl }));
    } catch (error) {
      if (!(error instanceof PurgeQueueInProgress)) throw error;
    }
  }
}

export async function ensureBuckets(s3: S3Client, region: Region): Promise<void> {
  for (const bucket of BUCKETS) {
    try {
      await s3.send(new CreateBucketCommand({ Bucket: localBucketName(region, bucket.name) }));
    } catch (error) {
      const name = error instanceof Error ? error.name : '';
      if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
    }
  }
}

/**
 * The SNS topic SES's event destination publishes a region's sending events to, with the
 * region's email-events queue subscribed as on AWS: not raw, so the queue receives SNS
 * envelopes (`{"Type": "Notification", "Message": "<the SES event>", …}`). Run after
 * `ensureQueues`. Idempotent: the topic and the subscription are made once. (fauxqs does
 * not check queue policies; on AWS the stateful stack grants SNS `sqs:SendMessage`.)
 */
export async function ensureSesEventTopic(
  sns: SNSClient,
  sqs: SQSClient,
  region: Region,
): Promise<string> {
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: `cdp-${region}-ses-events` }));
  if (!TopicArn) throw new Error(`No ARN for the SES event topic of ${region}`);
  const { QueueUrl } = await sqs.send(
    new GetQueueUrlCommand({ QueueName: queueName(region, 'email-events') }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  const queueArn = Attributes?.QueueArn;
  if (!queueArn) throw new Error(`No ARN for the email-events queue of ${region}`);
  let NextToken: string | undefined;
  do {
    const page = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn, NextToken }));
    const subscribed = (page.Subscriptions ?? []).some(
      (subscription) => subscription.Protocol === 'sqs' && subscription.Endpoint === queueArn,
    );
    if (subscribed) return TopicArn;
    NextToken = page.NextToken;
  } while (NextToken);
  await sns.send(new SubscribeCommand({ TopicArn, Protocol: 'sqs', Endpoint: queueArn }));
  return TopicArn;
}

/** Runs a create call; one that finds its resource already there has done its job. */
async function createOnce(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!(error instanceof AlreadyExistsException)) throw error;
  }
}

/**
 * What an SES that checks senders (LocalStack) needs before a region's emails can go out:
 * its sending domains as identities (LocalStack verifies them at once; on AWS that takes
 * DNS records, an operator's step), and the region's configuration set, whose event
 * destination publishes to the SES event topic. Idempotent. The local SES gateway needs none
 * of it: it sends from any address and is handed its configuration sets' topics.
 */
export async function ensureSesSending(
  ses: SESv2Client,
  region: Region,
  topicArn: string,
  domains: readonly string[],
): Promise<void> {
  for (const domain of domains) {
    await createOnce(() => ses.send(new CreateEmailIdentityCommand({ EmailIdentity: domain })));
  }
  const ConfigurationSetName = sesConfigurationSet(region);
  await createOnce(() => ses.send(new CreateConfigurationSetCommand({ ConfigurationSetName })));
  await createOnce(() =>
    ses.send(
      new CreateConfigurationSetEventDestinationCommand({
        ConfigurationSetName,
        EventDestinationName: `cdp-${region}-ses-events`,
        EventDestination: {
          Enabled: true,
          MatchingEventTypes: [
            'SEND',
            'DELIVERY',
            'BOUNCE',
            'COMPLAINT',
            'REJECT',
            'RENDERING_FAILURE',
          ],
          SnsDestination: { TopicArn: topicArn },
        },
      }),
    ),
  );
}
