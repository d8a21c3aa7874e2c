import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  GetResourcesCommand,
  GetStageCommand,
  type APIGatewayClient,
  type Resource as ApiResource,
} from '@aws-sdk/client-api-gateway';
import {
  DescribeStacksCommand,
  ListStackResourcesCommand,
  type CloudFormationClient,
} from '@aws-sdk/client-cloudformation';
import { DescribeAlarmsCommand, type CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  GetFunctionCommand,
  ListEventSourceMappingsCommand,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import { HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  GetSubscriptionAttributesCommand,
  GetTopicAttributesCommand,
  ListSubscriptionsByTopicCommand,
  type SNSClient,
} from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { LEFT_OUT_ON_LOCALSTACK } from '../infra/localstack.js';
import { functionSpecs } from '../infra/stacks/function-groups.js';
import type { Region } from '../shared/domain/regions.js';
import { STAGE_NAME } from '../shared/edge.js';
import { QUEUES, TABLES, queueName, tableName } from '../shared/resources.js';
import { ROUTES, routeKey } from '../shared/routes.js';
import { STREAM_WORKERS, WORKERS } from '../shared/workers.js';

/**
 * What `npm run deploy:localstack` checks once CloudFormation is done: that what the stacks
 * declare is there, asked of each service, not of CloudFormation alone (LocalStack's
 * CloudFormation can skip a resource type it does not know and still complete). Resources
 * are found by type in the stacks and every stack nested in them, and by the lists the stacks
 * are built from (tables, queues, workers, the routes table), never by logical ID.
 */
export interface DeployedResource {
  /** The stack holding it: the root's name, then each nested stack's logical ID. */
  stack: string;
  type: string;
  logicalId: string;
  physicalId: string;
  status: string;
}

export interface CheckRow {
  what: string;
  name: string;
  detail: string;
  ok: boolean;
}

export interface DeployClients {
  cloudFormation: CloudFormationClient;
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  sns: SNSClient;
  s3: S3Client;
  apiGateway: APIGatewayClient;
  lambda: LambdaClient;
  cloudWatch: CloudWatchClient;
}

const COMPLETE = new Set(['CREATE_COMPLETE', 'UPDATE_COMPLETE']);

export function isComplete(status: string | undefined): boolean {
  return status !== undefined && COMPLETE.has(status);
}

/** The resources of a stack and, recursively, of every stack nested in it. */
export async function stackResources(
  cloudFormation: CloudFormationClient,
  stackName: string,
  path = stackName,
): Promise<DeployedResource[]> {
  const found: DeployedResource[] = [];
  let NextToken: string | undefined;
  do {
    const page = await cloudFormation.send(
      new ListStackResourcesCommand({ StackName: stackName, NextToken }),
    );
    for (const summary of page.StackResourceSummaries ?? []) {
      const resource: DeployedResource = {
        stack: path,
        type: summary.ResourceType ?? '',
        logicalId: summary.LogicalResourceId ?? '',
        physicalId: summary.PhysicalResourceId ?? '',
        status: summary.ResourceStatus ?? '',
      };
      found.push(resource);
      if (resource.type === 'AWS::CloudFormation::Stack' && resource.physicalId) {
        found.push(
          ...(await stackResources(
            cloudFormation,
            resource.physicalId,
            `${path}/${resource.logicalId}`,
          )),
        );
      }
    }
    NextToken = page.NextToken;
  } while (NextToken);
  return found;
}

interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

/** The resources a synthesized stack declares, with those of its nested stacks' templates. */
export function templateResources(assembly: string, templateFile: string): TemplateResource[] {
  const template = JSON.parse(readFileSync(join(assembly, templateFile), 'utf8')) as {
    Resources?: Record<string, TemplateResource>;
  };
  const resources = Object.values(template.Resources ?? {});
  const nested = resources.flatMap((resource) => {
    const file = resource.Metadata?.['aws:asset:path'];
    return resource.Type === 'AWS::CloudFormation::Stack' && typeof file === 'string'
      ? templateResources(assembly, file)
      : [];
  });
  return [...resources, ...nested];
}

function countByType(types: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of types) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/**
 * Every declared type is deployed as often as declared, and nothing is left in a failed
 * state; the types the LocalStack flag leaves out must not be declared at all.
 */
export function compareWithTemplates(
  declared: TemplateResource[],
  deployed: DeployedResource[],
): CheckRow[] {
  const rows: CheckRow[] = [];
  const want = countByType(declared.map((resource) => resource.Type));
  const have = countByType(deployed.map((resource) => resource.type));
  for (const [type, count] of [...want].sort(([a], [b]) => a.localeCompare(b))) {
    const got = have.get(type) ?? 0;
    rows.push({
      what: 'declared',
      name: type,
      detail: `${got} of ${count} deployed`,
      ok: got === count && !(type in LEFT_OUT_ON_LOCALSTACK),
    });
  }
  const failed = deployed.filter((resource) => !isComplete(resource.status));
  for (const resource of failed) {
    rows.push({
      what: 'resource',
      name: `${resource.stack}/${resource.logicalId}`,
      detail: `${resource.type} ${resource.status}`,
      ok: false,
    });
  }
  return rows;
}

/** Runs a check; an error (the service does not know the resource) is a failed row. */
async function row(
  what: string,
  name: string,
  check: () => Promise<{ detail: string; ok: boolean }>,
): Promise<CheckRow> {
  try {
    return { what, name, ...(await check()) };
  } catch (error) {
    return { what, name, detail: `not found: ${(error as Error).name}`, ok: false };
  }
}

function physicalIds(deployed: DeployedResource[], type: string): string[] {
  return deployed.filter((resource) => resource.type === type).map((r) => r.physicalId);
}

async function checkTables(
  clients: DeployClients,
  region: Region,
  declared: TemplateResource[],
  deployed: DeployedResource[],
): Promise<CheckRow[]> {
  const owned = new Set(physicalIds(deployed, 'AWS::DynamoDB::Table'));
  return Promise.all(
    TABLES.map((definition) => {
      const name = tableName(region, definition.name);
      return row('table', name, async () => {
        const { Table } = await clients.dynamodb.send(
          new DescribeTableCommand({ TableName: name }),
        );
        const indexes = (Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName);
        const wantIndexes = definition.indexes.map((index) => index.name);
        const spec = declared.find(
          (resource) =>
            resource.Type === 'AWS::DynamoDB::Table' && resource.Properties?.TableName === name,
        )?.Properties?.StreamSpecification as { StreamViewType?: string } | undefined;
        const stream = Table?.StreamSpecification?.StreamEnabled
          ? (Table.StreamSpecification.StreamViewType ?? 'enabled')
          : undefined;
        const indexesOk =
          [...indexes].sort().join(',') === [...wantIndexes].sort().join(',') &&
          (Table?.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === 'ACTIVE');
        const streamOk =
          stream === spec?.StreamViewType && (stream === undefined || !!Table?.LatestStreamArn);
        return {
          detail: `${Table?.TableStatus ?? '?'}; indexes: ${indexes.join(', ') || 'none'}; stream: ${stream ?? 'none'} (declared ${spec?.StreamViewType ?? 'none'})`,
          ok: owned.has(name) && Table?.TableStatus === 'ACTIVE' && indexesOk && streamOk,
        };
      });
    }),
  );
}

async function queueArn(sqs: SQSClient, name: string): Promise<{ url: string; arn: string }> {
  const { QueueUrl = '' } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { url: QueueUrl, arn: Attributes?.QueueArn ?? '' };
}

async function checkQueues(clients: DeployClients, region: Region): Promise<CheckRow[]> {
  return Promise.all(
    QUEUES.map((definition) => {
      const name = queueName(region, definition.name);
      return row('queue', name, async () => {
        const dlq = await queueArn(clients.sqs, queueName(region, definition.name, true));
        const main = await queueArn(clients.sqs, name);
        const { Attributes } = await clients.sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: main.url, AttributeNames: ['RedrivePolicy'] }),
        );
        const redrive = JSON.parse(Attributes?.RedrivePolicy ?? '{}') as {
          deadLetterTargetArn?: string;
          maxReceiveCount?: number | string;
        };
        const ok =
          redrive.deadLetterTargetArn === dlq.arn &&
          Number(redrive.maxReceiveCount) === definition.maxReceiveCount;
        return {
          detail: `dead letters to ${dlq.arn.split(':').pop() ?? '?'} after ${String(redrive.maxReceiveCount)} receives`,
          ok,
        };
      });
    }),
  );
}

async function checkTopics(
  clients: DeployClients,
  region: Region,
  deployed: DeployedResource[],
): Promise<CheckRow[]> {
  const topics = physicalIds(deployed, 'AWS::SNS::Topic').map((arn) =>
    row('topic', arn.split(':').pop() ?? arn, async () => {
      await clients.sns.send(new GetTopicAttributesCommand({ TopicArn: arn }));
      const { Subscriptions = [] } = await clients.sns.send(
        new ListSubscriptionsByTopicCommand({ TopicArn: arn }),
      );
      const listed = Subscriptions.map(
        (s) => `${s.Protocol ?? '?'}:${s.Endpoint?.split(':').pop() ?? '?'}`,
      );
      // SES's events reach the email-events worker's queue only through this subscription.
      const eventsQueue = queueName(region, 'email-events');
      const sesEvents = arn.endsWith(`:cdp-${region}-ses-events`);
      return {
        detail: `subscriptions: ${listed.join(', ') || 'none'}`,
        ok: !sesEvents || listed.includes(`sqs:${eventsQueue}`),
      };
    }),
  );
  const subscriptions = physicalIds(deployed, 'AWS::SNS::Subscription').map((arn) =>
    row('subscription', arn.split(':').slice(-2).join(':'), async () => {
      const { Attributes } = await clients.sns.send(
        new GetSubscriptionAttributesCommand({ SubscriptionArn: arn }),
      );
      return {
        detail: `${Attributes?.Protocol ?? '?'} to ${Attributes?.Endpoint?.split(':').pop() ?? '?'}`,
        ok: Attributes !== undefined,
      };
    }),
  );
  return Promise.all([...topics, ...subscriptions]);
}

async function checkBuckets(
  clients: DeployClients,
  deployed: DeployedResource[],
): Promise<CheckRow[]> {
  return Promise.all(
    physicalIds(deployed, 'AWS::S3::Bucket').map((bucket) =>
      row('bucket', bucket, async () => {
        await clients.s3.send(new HeadBucketCommand({ Bucket: bucket }));
        return { detail: 'exists', ok: true };
      }),
    ),
  );
}

/** `METHOD /path` of every method of an API's resources, with the function it integrates. */
export function apiMethods(resources: ApiResource[]): Map<string, string | undefined> {
  const methods = new Map<string, string | undefined>();
  for (const resource of resources) {
    for (const [method, definition] of Object.entries(resource.resourceMethods ?? {})) {
      const uri = definition.methodIntegration?.uri;
      // arn:…:lambda:path/2015-03-31/functions/<function ARN>/invocations
      const fn = /functions\/(.+)\/invocations/.exec(uri ?? '')?.[1];
      methods.set(`${method} ${resource.path ?? ''}`, fn?.split(':').pop());
    }
  }
  return methods;
}

/**
 * Routes that share a folder of `functions/` share one deployed function, and no two
 * folders share one: the deployed integrations follow the routes table, not just exist.
 */
export function folderRow(methods: Map<string, string | undefined>): CheckRow {
  const byFolder = new Map<string, Set<string | undefined>>();
  for (const route of ROUTES) {
    const fns = byFolder.get(route.function) ?? new Set<string | undefined>();
    fns.add(methods.get(routeKey(route)));
    byFolder.set(route.function, fns);
  }
  const split = [...byFolder].filter(([, fns]) => fns.size !== 1).map(([folder]) => folder);
  const distinct = new Set([...byFolder.values()].flatMap((fns) => [...fns]));
  return {
    what: 'route functions',
    name: `${byFolder.size} folders, ${distinct.size} functions`,
    detail:
      split.length > 0 ? `split over functions: ${split.join(', ')}` : 'one function per folder',
    ok: split.length === 0 && distinct.size === byFolder.size && !distinct.has(undefined),
  };
}

async function checkApi(
  clients: DeployClients,
  deployed: DeployedResource[],
  functions: Set<string>,
): Promise<CheckRow[]> {
  const rows: CheckRow[] = [];
  for (const apiId of physicalIds(deployed, 'AWS::ApiGateway::RestApi')) {
    const resources: ApiResource[] = [];
    let position: string | undefined;
    do {
      const page = await clients.apiGateway.send(
        new GetResourcesCommand({ restApiId: apiId, embed: ['methods'], limit: 500, position }),
      );
      resources.push(...(page.items ?? []));
      position = page.position;
    } while (position);
    const methods = apiMethods(resources);
    rows.push(
      await row('stage', `${apiId}/${STAGE_NAME}`, async () => {
        await clients.apiGateway.send(
          new GetStageCommand({ restApiId: apiId, stageName: STAGE_NAME }),
        );
        return { detail: `REST API ${apiId}, ${resources.length} resources`, ok: true };
      }),
    );
    for (const route of [...ROUTES, { method: 'ANY', path: '/{proxy+}' }]) {
      const key =
        route.method === 'ANY' ? `ANY ${route.path}` : routeKey(route as (typeof ROUTES)[number]);
      const fn = methods.get(key);
      rows.push({
        what: 'route',
        name: key,
        detail: fn ? `→ ${fn}` : methods.has(key) ? 'no Lambda integration' : 'missing',
        ok: fn !== undefined && functions.has(fn),
      });
    }
    rows.push(folderRow(methods));
  }
  if (rows.length === 0) rows.push({ what: 'REST API', name: '-', detail: 'missing', ok: false });
  return rows;
}

async function checkFunctions(
  clients: DeployClients,
  region: Region,
  deployed: DeployedResource[],
): Promise<{ rows: CheckRow[]; names: Set<string> }> {
  const names = physicalIds(deployed, 'AWS::Lambda::Function');
  const found = new Set<string>();
  const states = new Map<string, number>();
  await Promise.all(
    names.map(async (name) => {
      const fn = await clients.lambda
        .send(new GetFunctionCommand({ FunctionName: name }))
        .catch(() => undefined);
      if (!fn) return;
      found.add(name);
      const state = fn.Configuration?.State ?? 'unknown';
      states.set(state, (states.get(state) ?? 0) + 1);
    }),
  );
  // One per folder of the routes table (routes may share one), the fallback, one per queue
  // worker and one per stream worker.
  const expected = functionSpecs(ROUTES, WORKERS, STREAM_WORKERS).length;
  const folders = new Set(ROUTES.map((route) => route.function)).size;
  const rows: CheckRow[] = [
    {
      what: 'functions',
      name: `${found.size} of ${names.length} found`,
      detail: `one per folder of the routes (${folders}), per worker (${WORKERS.length} queue, ${STREAM_WORKERS.length} stream) and the fallback; ${[...states].map(([state, count]) => `${count} ${state}`).join(', ')}`,
      ok:
        found.size === names.length &&
        names.length === expected &&
        states.get('Active') === names.length,
    },
  ];
  for (const worker of WORKERS) {
    rows.push(
      await row('worker', worker.function, async () => {
        const { arn } = await queueArn(clients.sqs, queueName(region, worker.queue));
        const { EventSourceMappings = [] } = await clients.lambda.send(
          new ListEventSourceMappingsCommand({ EventSourceArn: arn }),
        );
        const mapping = EventSourceMappings.find((m) =>
          found.has(m.FunctionArn?.split(':').pop() ?? ''),
        );
        return {
          detail: mapping
            ? `${queueName(region, worker.queue)} → ${mapping.FunctionArn?.split(':').pop() ?? '?'}, batches of ${String(mapping.BatchSize)}`
            : `no event source mapping from ${queueName(region, worker.queue)}`,
          ok: mapping?.BatchSize === worker.batchSize,
        };
      }),
    );
  }
  return { rows, names: found };
}

async function checkAlarms(
  clients: DeployClients,
  deployed: DeployedResource[],
): Promise<CheckRow[]> {
  const names = physicalIds(deployed, 'AWS::CloudWatch::Alarm');
  const found = new Set<string>();
  for (let start = 0; start < names.length; start += 100) {
    let NextToken: string | undefined;
    do {
      const page = await clients.cloudWatch.send(
        new DescribeAlarmsCommand({ AlarmNames: names.slice(start, start + 100), NextToken }),
      );
      for (const alarm of page.MetricAlarms ?? []) found.add(alarm.AlarmName ?? '');
      NextToken = page.NextToken;
    } while (NextToken);
  }
  const missing = names.filter((name) => !found.has(name));
  return [
    {
      what: 'alarms',
      name: `${found.size} of ${names.length} found`,
      detail: missing.length > 0 ? `missing: ${missing.slice(0, 3).join(', ')}…` : 'all there',
      ok: missing.length === 0 && names.length > 0,
    },
  ];
}

export interface StackState {
  name: string;
  status: string | undefined;
}

export async function stackStatus(
  cloudFormation: CloudFormationClient,
  name: string,
): Promise<string | undefined> {
  try {
    const { Stacks = [] } = await cloudFormation.send(
      new DescribeStacksCommand({ StackName: name }),
    );
    return Stacks[0]?.StackStatus;
  } catch {
    return undefined;
  }
}

/** Every check of a deployed region's stacks, in the order of the printed table. */
export async function checkDeployment(
  clients: DeployClients,
  region: Region,
  stacks: { name: string; template: string }[],
  assembly: string,
): Promise<CheckRow[]> {
  const deployed: DeployedResource[] = [];
  const declared: TemplateResource[] = [];
  const rows: CheckRow[] = [];
  for (const stack of stacks) {
    const status = await stackStatus(clients.cloudFormation, stack.name);
    rows.push({
      what: 'stack',
      name: stack.name,
      detail: status ?? 'missing',
      ok: isComplete(status),
    });
    if (status === undefined) continue;
    const resources = await stackResources(clients.cloudFormation, stack.name);
    for (const nested of resources.filter((r) => r.type === 'AWS::CloudFormation::Stack')) {
      const nestedStatus = await stackStatus(clients.cloudFormation, nested.physicalId);
      rows.push({
        what: 'nested stack',
        name: `${nested.stack}/${nested.logicalId}`,
        detail: nestedStatus ?? 'missing',
        ok: isComplete(nestedStatus),
      });
    }
    deployed.push(...resources);
    declared.push(...templateResources(assembly, stack.template));
  }
  const { rows: functionRows, names } = await checkFunctions(clients, region, deployed);
  rows.push(
    ...(await checkTables(clients, region, declared, deployed)),
    ...(await checkQueues(clients, region)),
    ...(await checkTopics(clients, region, deployed)),
    ...(await checkBuckets(clients, deployed)),
    ...functionRows,
    ...(await checkApi(clients, deployed, names)),
    ...(await checkAlarms(clients, deployed)),
    ...compareWithTemplates(declared, deployed),
  );
  return rows;
}

/** The table the command prints: one line per check, failures marked. */
export function formatRows(rows: CheckRow[]): string {
  const width = (pick: (row: CheckRow) => string) =>
    Math.min(60, Math.max(...rows.map((r) => pick(r).length)));
  const what = width((r) => r.what);
  const name = width((r) => r.name);
  return rows
    .map(
      (r) =>
        `${r.ok ? 'ok  ' : 'FAIL'}  ${r.what.padEnd(what)}  ${r.name.padEnd(name)}  ${r.detail}`,
    )
    .join('\n');
}
