import { AUDIENCE_HELD_MESSAGE } from '../../shared/domain/audiences/audience.js';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/bin/app.js';
import { REGIONS } from '../../shared/domain/regions.js';
import type { Region } from '../../shared/domain/regions.js';
import {
  SHORT_KEY_REQUESTS_PER_5_MIN,
  TRACKING_REQUESTS_PER_5_MIN,
} from '../../infra/constructs/abuse-limits.js';
import { EDGE_ERRORS, EDGE_MAX_BODY_BYTES, STAGE_NAME, numbersAbove } from '../../shared/edge.js';
import {
  QUEUES,
  TABLES,
  queueName,
  sesConfigurationSet,
  tableName,
  type QueueName,
  type TableName,
} from '../../shared/resources.js';
import { FALLBACK_FUNCTION, ROUTES, routeKey, type Access } from '../../shared/routes.js';
import { STREAM_WORKERS, streamFilterPattern, WORKERS } from '../../shared/workers.js';
import { alarmName } from '../../infra/constructs/operations.js';
import { ApiStack, STAGE_THROTTLE } from '../../infra/stacks/api-stack.js';
import { functionSpecs } from '../../infra/stacks/function-groups.js';
import { restApiOf } from './rest-api-template.js';

/** The app as `cdk synth` builds it (cdk.json context), without bundling the functions. */
function stackOf(app: App, id: string): Stack {
  const child = app.node.findChild(id);
  if (!Stack.isStack(child)) throw new Error(`${id} is not a stack`);
  return child;
}

function synthesize(): App {
  const { context } = JSON.parse(readFileSync('cdk.json', 'utf8')) as {
    context: Record<string, unknown>;
  };
  const app = new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] } });
  buildApp(app);
  app.synth();
  return app;
}

/** The handler aws-cdk-lib's BucketDeployment makes to upload the console's pages. */
const isPagesUploadHandler = (logicalId: string) =>
  logicalId.startsWith('CustomCDKBucketDeployment');

/**
 * The API stack's resources and those of its nested stacks (the functions, by group) in one
 * template, for assertions that do not care which of them holds a resource.
 */
function withNestedStacks(stack: ApiStack): Template {
  const resources: Record<string, unknown> = {};
  for (const part of [stack, ...stack.functionStacks]) {
    const template = Template.fromStack(part).toJSON() as { Resources: Record<string, unknown> };
    for (const [id, resource] of Object.entries(template.Resources)) {
      if (id in resources) throw new Error(`logical ID ${id} is in two stacks`);
      resources[id] = resource;
    }
  }
  return Template.fromJSON({ Resources: resources });
}

/** The functions of the stack: one per folder of the routes table, the fallback, the workers. */
const SPECS = functionSpecs(ROUTES, WORKERS, STREAM_WORKERS);

/** The logical ID prefix of a function's resources in its nested stack (`personmerge`). */
const idOf = (folder: string) => folder.replace(/-/g, '');

type Statement = { Action: string | string[]; Resource: unknown };

function statementsOf(template: Template, functionLogicalIdPrefix: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy');
  return Object.entries(policies)
    .filter(([id]) => id.startsWith(functionLogicalIdPrefix))
    .flatMap(
      ([, policy]) =>
        (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties
          .PolicyDocument.Statement,
    );
}

function actionsOf(statements: Statement[]): string[] {
  return statements.flatMap((statement) =>
    Array.isArray(statement.Action) ? statement.Action : [statement.Action],
  );
}

type GatewayResponse = {
  ResponseType: string;
  StatusCode: string;
  ResponseTemplates: Record<string, string>;
  ResponseParameters?: Record<string, string>;
};
type FunctionResource = { Properties: { Environment: { Variables: Record<string, unknown> } } };

function readContext(): Record<string, unknown> {
  return (JSON.parse(readFileSync('cdk.json', 'utf8')) as { context: Record<string, unknown> })
    .context;
}

/** Whether that output is the ARN of the function of this folder, in its group's stack. */
function isFunctionOutput(output: string, folder: string): boolean {
  const spec = SPECS.find((candidate) => candidate.name === folder);
  return (
    spec !== undefined &&
    new RegExp(`apifunctions${idOf(spec.group)}${idOf(folder)}function[0-9A-F]{8}Arn$`).test(output)
  );
}

const READS = ['GetItem', 'BatchGetItem', 'Query', 'ConditionCheckItem'].map(
  (a) => `dynamodb:${a}`,
);
const WRITES = ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'].map(
  (a) => `dynamodb:${a}`,
);
const CONSUME = [
  'sqs:ReceiveMessage',
  'sqs:ChangeMessageVisibility',
  'sqs:GetQueueUrl',
  'sqs:DeleteMessage',
  'sqs:GetQueueAttributes',
];

/** `action target` pairs a policy allows, with targets named after the data stack's resources. */
function touchesOf(statements: Statement[]): string[] {
  const touches = new Set<string>();
  for (const statement of statements) {
    const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
    for (const resource of resources) {
      const text = JSON.stringify(resource);
      const table =
        /FnGetAtt(config|people|organizations|activities|requests|emails|audiences|deliveries|indexes)table/.exec(
          text,
        );
      const queue =
        /FnGetAtt(ingest|emailevents|email|audiencejobs|webhookreplays|webhooksslow|webhooks)(queue|dlq)/.exec(
          text,
        ) ?? /FnGetAtt(streamfailures)()/.exec(text);
      const kms = /signingkey/.test(text);
      const queueNames: Record<string, string> = {
        emailevents: 'email-events',
        audiencejobs: 'audience-jobs',
        webhookreplays: 'webhook-replays',
        webhooksslow: 'webhooks-slow',
        streamfailures: 'stream-failures',
      };
      const target = kms
        ? 'kms:signing-key'
        : table
          ? `table:${table[1]}${text.includes('/index/*') ? '/index' : ''}`
          : queue
            ? `queue:${queueNames[queue[1] ?? ''] ?? queue[1]}${queue[2] === 'dlq' ? ':dlq' : ''}`
            : text.includes('payloadsbucket')
              ? `bucket:${/\/(\w+)\/\*/.exec(text)?.[1] ?? '?'}`
              : text.includes(':identity/')
                ? `ses:identity/${/:identity\/([^"]+)"/.exec(text)?.[1] ?? '?'}`
                : text.includes(':configuration-set/')
                  ? 'ses:configuration-set'
                  : text.includes('placeindex')
                    ? 'geo:place-index'
                    : resource === '*'
                      ? '*'
                      : text;
      for (const action of actionsOf([statement])) touches.add(`${action} ${target}`);
    }
  }
  return [...touches].sort();
}

/** What each kind of access should allow, written out independently of the construct. */
function expectedTouches(
  access: readonly Access[],
  region: Region,
  consumes?: QueueName,
  stream?: TableName,
): string[] {
  // X-Ray's upload actions have no resource of their own.
  const touches = new Set<string>(['xray:PutTraceSegments *', 'xray:PutTelemetryRecords *']);
  const table = (name: TableName, actions: string[]) => {
    const indexed = TABLES.find((t) => t.name === name)?.indexes.length ?? 0;
    for (const action of actions) {
      touches.add(`${action} table:${name}`);
      if (indexed > 0) touches.add(`${action} table:${name}/index`);
    }
  };
  const domains = [(readContext().emailDomains as Record<string, string>)[region] ?? ''];
  for (const need of access) {
    if (need === 'config:read') table('config', READS);
    else if (need === 'config:write') table('config', [...READS, ...WRITES]);
    else if (need.endsWith(':read')) table(need.replace(':read', '') as TableName, READS);
    else if (
      [
        'people',
        'organizations',
        'activities',
        'requests',
        'emails',
        'audiences',
        'deliveries',
        'indexes',
      ].includes(need)
    ) {
      table(need as TableName, [...READS, ...WRITES]);
    } else if (need === 'payloads:put') {
      touches.add('s3:PutObject bucket:ingest').add('s3:DeleteObject bucket:ingest');
    } else if (need === 'payloads:get') touches.add('s3:GetObject bucket:ingest');
    else if (need === 'payloads:erase') {
      touches.add('s3:DeleteObject bucket:ingest').add('s3:DeleteObject bucket:email');
    } else if (need === 'email-payloads:put') touches.add('s3:PutObject bucket:email');
    else if (need === 'email-payloads:get') touches.add('s3:GetObject bucket:email');
    else if (need === 'webhook-payloads:get') touches.add('s3:GetObject bucket:webhooks');
    else if (need === 'webhook-events:keep') {
      table('deliveries', ['dynamodb:PutItem', 'dynamodb:BatchWriteItem']);
      touches.add('s3:PutObject bucket:webhooks');
    } else if (need === 'webhook-events:forget') {
      table('deliveries', ['dynamodb:Query', 'dynamodb:BatchWriteItem']);
      touches.add('s3:DeleteObject bucket:webhooks');
    } else if (
      need === 'queue:ingest' ||
      need === 'queue:email' ||
      need === 'queue:audience-jobs' ||
      need === 'queue:webhooks' ||
      need === 'queue:webhooks-slow' ||
      need === 'queue:webhook-replays'
    ) {
      for (const action of ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl']) {
        touches.add(`${action} queue:${need.slice('queue:'.length)}`);
      }
    } else if (need === 'signing' || need === 'webhook-secrets:unwrap') {
      touches.add('kms:Decrypt kms:signing-key');
    } else if (need === 'webhook-secrets:wrap') {
      touches.add('kms:Decrypt kms:signing-key').add('kms:Encrypt kms:signing-key');
    } else if (need === 'queue:email-events:dead-letters') {
      touches.add('sqs:GetQueueAttributes queue:email-events:dlq');
    } else if (need === 'queues:dead-letters:depth') {
      for (const queue of QUEUES) touches.add(`sqs:GetQueueAttributes queue:${queue.name}:dlq`);
      touches.add('sqs:GetQueueAttributes queue:stream-failures');
    } else if (need.startsWith('queue:') && need.endsWith(':retry')) {
      touches.add(`sqs:ChangeMessageVisibility queue:${need.slice(6, -6)}`);
    } else if (need === 'ses:send') {
      for (const action of ['ses:SendEmail', 'ses:SendRawEmail']) {
        touches.add(`${action} ses:configuration-set`);
        for (const domain of domains) touches.add(`${action} ses:identity/${domain}`);
      }
    } else if (need === 'geo') touches.add('geo:SearchPlaceIndexForText geo:place-index');
    else if (need === 'webhooks:health') touches.add('dynamodb:UpdateItem table:config');
    else if (need === 'erasures:check') touches.add('dynamodb:GetItem table:requests');
  }
  if (consumes) for (const action of CONSUME) touches.add(`${action} queue:${consumes}`);
  if (stream) {
    // Reading the table's stream, and describing a failed batch on the stream-failures queue.
    for (const action of ['DescribeStream', 'GetRecords', 'GetShardIterator']) {
      touches.add(`dynamodb:${action} table:${stream}`);
    }
    touches.add('dynamodb:ListStreams *');
    for (const action of ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl']) {
      touches.add(`${action} queue:stream-failures`);
    }
  }
  return [...touches].sort();
}

describe('the CDK app', () => {
  let app: App;
  beforeAll(() => {
    app = synthesize();
  });

  it('has an independent data and API stack for each region, in its AWS region', () => {
    const stacks = app.node.children.filter((child) => Stack.isStack(child));
    expect(stacks.map((stack) => `${stack.stackName}@${stack.region}`).sort()).toEqual([
      'cdp-au-api@ap-southeast-2',
      'cdp-au-data@ap-southeast-2',
      'cdp-default-api@us-east-1',
      'cdp-default-data@us-east-1',
      'cdp-eu-api@eu-central-1',
      'cdp-eu-data@eu-central-1',
    ]);
  });

  it.each(REGIONS)('passes the cdk-nag AWS Solutions checks (%s)', (region) => {
    for (const kind of ['data', 'api']) {
      const stack = stackOf(app, `cdp-${region}-${kind}`);
      const errors = Annotations.fromStack(stack).findError(
        '*',
        Match.stringLikeRegexp('AwsSolutions-.*'),
      );
      expect(errors.map((e) => `${e.id}: ${JSON.stringify(e.entry.data)}`)).toEqual([]);
    }
  });

  describe.each(REGIONS)('region %s', (region) => {
    let data: Template;
    let api: Template;
    /** The API stack with its nested stacks, where the functions are. */
    let functions: Template;
    beforeAll(() => {
      data = Template.fromStack(stackOf(app, `cdp-${region}-data`));
      const apiStack = stackOf(app, `cdp-${region}-api`);
      if (!(apiStack instanceof ApiStack)) throw new Error(`cdp-${region}-api is no ApiStack`);
      api = Template.fromStack(apiStack);
      functions = withNestedStacks(apiStack);
    });

    it('keeps every table, encrypted, with point-in-time recovery and deletion protection', () => {
      for (const table of TABLES) {
        data.hasResource('AWS::DynamoDB::Table', {
          DeletionPolicy: 'Retain',
          Properties: Match.objectLike({
            TableName: tableName(region, table.name),
            BillingMode: 'PAY_PER_REQUEST',
            DeletionProtectionEnabled: true,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
            SSESpecification: { SSEEnabled: true },
            KeySchema: [
              { AttributeName: 'pk', KeyType: 'HASH' },
              { AttributeName: 'sk', KeyType: 'RANGE' },
            ],
          }),
        });
      }
    });

    it('gives every queue a dead-letter queue', () => {
      for (const queue of QUEUES) {
        data.hasResourceProperties('AWS::SQS::Queue', {
          QueueName: queueName(region, queue.name),
          RedrivePolicy: {
            deadLetterTargetArn: Match.anyValue(),
            maxReceiveCount: queue.maxReceiveCount,
          },
        });
        data.hasResourceProperties('AWS::SQS::Queue', {
          QueueName: queueName(region, queue.name, true),
        });
      }
    });

    it('serves exactly the routes table, each route by the Node.js 22 ARM64 function of its folder', () => {
      const apiStack = stackOf(app, `cdp-${region}-api`);
      if (!(apiStack instanceof ApiStack)) throw new Error(`cdp-${region}-api is no ApiStack`);
      const rest = restApiOf(apiStack);
      const served = rest.methods
        .filter((method) => method.httpMethod !== 'ANY')
        .map((method) => `${method.httpMethod} ${method.path}`);
      expect(served.sort()).toEqual(ROUTES.map(routeKey).sort());
      for (const route of ROUTES) {
        const method = rest.methods.find(
          (m) => m.httpMethod === route.method && m.path === route.path,
        );
        expect({ route: routeKey(route), function: method?.invokes }).toEqual({
          route: routeKey(route),
          function: expect.stringMatching(/Arn$/) as unknown,
        });
        expect(isFunctionOutput(method?.invokes ?? '', route.function)).toBe(true);
      }
      // Every other method of every path (the root's too), and every unknown path, reach the
      // fallback: one ANY a path resource, wherever it is.
      const anyMethods = rest.methods.filter((method) => method.httpMethod === 'ANY');
      expect(anyMethods.map((method) => method.path).sort()).toEqual(
        ['/', ...rest.resources.map((resource) => resource.path)].sort(),
      );
      for (const method of anyMethods) {
        expect(isFunctionOutput(method.invokes, FALLBACK_FUNCTION.function)).toBe(true);
      }
      expect(anyMethods.map((method) => method.path)).toContain('/{proxy+}');

      // One function per folder: the accounts routes are the organizations' functions.
      const deployed = functions.findResources('AWS::Lambda::Function', {
        Properties: { Runtime: 'nodejs22.x', Architectures: ['arm64'] },
      });
      expect(Object.keys(deployed)).toHaveLength(
        new Set(ROUTES.map((route) => route.function)).size +
          1 +
          WORKERS.length +
          STREAM_WORKERS.length,
      );
      // The API stack's own function is the console pages' upload handler (aws-cdk-lib's).
      expect(
        Object.keys(api.findResources('AWS::Lambda::Function')).filter(
          (id) => !isPagesUploadHandler(id),
        ),
      ).toEqual([]);
    });

    it('lets API Gateway invoke each function by the routes it serves only, and the fallback by any', () => {
      const permissions = Object.entries(functions.findResources('AWS::Lambda::Permission')).map(
        ([id, permission]) => ({
          id,
          ...(permission as { Properties: { Principal: string; SourceArn: unknown } }).Properties,
        }),
      );
      const sourceOf = (id: string) =>
        permissions
          .filter((permission) => permission.id.startsWith(id))
          .map((permission) => {
            expect(permission.Principal).toBe('apigateway.amazonaws.com');
            const parts = (permission.SourceArn as { 'Fn::Join': [string, unknown[]] })[
              'Fn::Join'
            ][1];
            return String(parts[parts.length - 1]);
          })
          .sort();
      for (const spec of SPECS.filter((candidate) => candidate.routes.length > 0)) {
        expect({
          function: spec.name,
          sources: sourceOf(`${idOf(spec.name)}functioninvoke`),
        }).toEqual({
          function: spec.name,
          sources: spec.routes.map((route) => `/${STAGE_NAME}/${route.method}${route.path}`).sort(),
        });
      }
      expect(sourceOf(`${idOf(FALLBACK_FUNCTION.function)}function`)).toEqual([
        `/${STAGE_NAME}/*/*`,
      ]);
      for (const worker of WORKERS)
        expect(sourceOf(`${idOf(worker.function)}function`)).toEqual([]);
      expect(permissions).toHaveLength(ROUTES.length + 1);
    });

    it('grants every function exactly what its entry in the routes or workers table declares', () => {
      const entries: {
        id: string;
        access: readonly Access[];
        consumes?: QueueName;
        stream?: TableName;
      }[] = SPECS.map((spec) => ({
        id: spec.name,
        access: spec.access,
        ...(spec.worker ? { consumes: spec.worker.queue } : {}),
        ...(spec.streamWorker ? { stream: spec.streamWorker.table } : {}),
      }));
      for (const entry of entries) {
        const prefix = `${idOf(entry.id)}function`;
        const granted = touchesOf(statementsOf(functions, prefix));
        const expected = expectedTouches(entry.access, region, entry.consumes, entry.stream);
        expect({ function: entry.id, grants: granted }).toEqual({
          function: entry.id,
          grants: expected,
        });
      }
    });

    it('feeds every worker from its queue, reporting partial batch failures, with bounded concurrency', () => {
      const mappings = Object.values(functions.findResources('AWS::Lambda::EventSourceMapping'))
        .map((mapping) => JSON.stringify((mapping as { Properties: unknown }).Properties))
        .filter((mapping) => !mapping.includes('StreamArn'));
      expect(mappings).toHaveLength(WORKERS.length);
      for (const worker of WORKERS) {
        const queueId = `FnGetAtt${worker.queue.replace(/-/g, '')}queue`;
        const mapping = mappings.find((m) => m.includes(`"Ref":"${idOf(worker.function)}function`));
        expect(mapping).toContain(queueId);
        expect(JSON.parse(mapping ?? '{}')).toMatchObject({
          BatchSize: worker.batchSize,
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          ScalingConfig: { MaximumConcurrency: worker.maxConcurrency },
        });
      }
    });

    it("feeds every stream worker from its table's stream: its items only, failures bisected, retried, then described", () => {
      const mappings = Object.values(functions.findResources('AWS::Lambda::EventSourceMapping'))
        .map((mapping) => JSON.stringify((mapping as { Properties: unknown }).Properties))
        .filter((mapping) => mapping.includes('StreamArn'));
      expect(mappings).toHaveLength(STREAM_WORKERS.length);
      for (const worker of STREAM_WORKERS) {
        const mapping = mappings.find((m) => m.includes(`"Ref":"${idOf(worker.function)}function`));
        expect(mapping).toContain(`FnGetAtt${worker.table}table`);
        expect(mapping).toContain('FnGetAttstreamfailures');
        expect(JSON.parse(mapping ?? '{}')).toMatchObject({
          BatchSize: worker.batchSize,
          StartingPosition: 'TRIM_HORIZON',
          BisectBatchOnFunctionError: true,
          MaximumRetryAttempts: worker.maxRetryAttempts,
          ParallelizationFactor: worker.parallelization,
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          FilterCriteria: {
            Filters: [{ Pattern: JSON.stringify(streamFilterPattern(worker)) }],
          },
        });
      }
    });

    it('tells every function its region and the base address of every region', () => {
      for (const [id, fn] of Object.entries(functions.findResources('AWS::Lambda::Function'))) {
        if (isPagesUploadHandler(id)) continue;
        const variables = (
          fn as { Properties: { Environment: { Variables: Record<string, unknown> } } }
        ).Properties.Environment.Variables;
        expect(variables).toMatchObject({
          CDP_REGION: region,
          BASE_URL_DEFAULT: expect.stringMatching(/^https:\/\//) as unknown,
          BASE_URL_AU: expect.stringMatching(/^https:\/\//) as unknown,
          BASE_URL_EU: expect.stringMatching(/^https:\/\//) as unknown,
        });
      }
    });

    it('grants functions only what their route declares', () => {
      const health = actionsOf(statementsOf(functions, 'healthfunction'));
      expect(health.filter((action) => action.startsWith('dynamodb:'))).toEqual([]);
      const fallback = actionsOf(
        statementsOf(functions, `${idOf(FALLBACK_FUNCTION.function)}function`),
      );
      expect(fallback.filter((action) => action.startsWith('dynamodb:'))).toEqual([]);

      // Listing only reads, but for its idempotency records (the requests table).
      const listingStatements = statementsOf(functions, 'persongetfunction');
      const listing = actionsOf(listingStatements);
      expect(listing).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:Query']));
      const writes = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'];
      expect(writes.every((action) => listing.includes(action))).toBe(true);
      for (const statement of listingStatements) {
        if (!actionsOf([statement]).some((action) => writes.includes(action))) continue;
        expect(JSON.stringify(statement.Resource)).toMatch(/requests/);
        expect(JSON.stringify(statement.Resource)).not.toMatch(/people|organizations|activities/);
      }
      // Merging writes people and may geocode; nothing else can.
      const merge = actionsOf(statementsOf(functions, 'personmergefunction'));
      expect(merge).toEqual(
        expect.arrayContaining(['dynamodb:UpdateItem', 'geo:SearchPlaceIndexForText']),
      );
      expect(listing).not.toContain('geo:SearchPlaceIndexForText');

      // The last-seen worker reads the activities stream and writes people, nothing else.
      const lastSeen = statementsOf(functions, 'lastseenworkerfunction');
      expect(actionsOf(lastSeen)).toEqual(
        expect.arrayContaining(['dynamodb:UpdateItem', 'dynamodb:GetRecords']),
      );
      for (const statement of lastSeen) {
        const actions = actionsOf([statement]);
        const resource = JSON.stringify(statement.Resource);
        if (actions.includes('dynamodb:UpdateItem')) {
          expect(resource).toMatch(/people/);
          expect(resource).not.toMatch(/activities|organizations|requests|emails|config/);
        }
        if (resource.includes('activities')) {
          expect(
            actions.every((action) =>
              /^dynamodb:(GetRecords|GetShardIterator|DescribeStream|ListStreams)$/.test(action),
            ),
          ).toBe(true);
        }
      }

      // The webhook delivery worker updates the config table in webhook partitions only.
      const delivery = statementsOf(functions, 'webhookdeliveryworkerfunction');
      const configWrites = delivery.filter(
        (statement) =>
          actionsOf([statement]).some((action) => writes.includes(action)) &&
          JSON.stringify(statement.Resource).includes('configtable'),
      );
      expect(configWrites).toHaveLength(1);
      expect(configWrites[0]).toMatchObject({
        Action: 'dynamodb:UpdateItem',
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['INST#*#WH'] } },
      });
    });

    it('throttles, traces and logs the stage, behind the WAF rule that refuses oversized bodies', () => {
      api.hasResourceProperties('AWS::ApiGateway::RestApi', {
        Name: `cdp-${region}`,
        BinaryMediaTypes: ['*/*'],
        EndpointConfiguration: { Types: ['REGIONAL'] },
      });
      api.hasResourceProperties('AWS::ApiGateway::Stage', {
        StageName: STAGE_NAME,
        TracingEnabled: true,
        AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
        MethodSettings: Match.arrayWith([
          Match.objectLike({
            HttpMethod: '*',
            ResourcePath: '/*',
            LoggingLevel: 'ERROR',
            ThrottlingRateLimit: STAGE_THROTTLE.rateLimit,
            ThrottlingBurstLimit: STAGE_THROTTLE.burstLimit,
          }),
        ]),
      });
      const acls = api.findResources('AWS::WAFv2::WebACL');
      expect(Object.keys(acls)).toHaveLength(1);
      const [aclId, acl] = Object.entries(acls)[0] as [string, { Properties: unknown }];
      const rule = JSON.stringify(acl.Properties);
      expect(rule).toContain(JSON.stringify(numbersAbove(EDGE_MAX_BODY_BYTES)).slice(1, -1));
      expect(rule).toContain('content-length');
      expect(rule).toContain('chunked');
      api.hasResourceProperties('AWS::WAFv2::WebACL', {
        DefaultAction: { Allow: {} },
        Rules: [
          Match.objectLike({
            Action: { Block: {} },
            Statement: {
              OrStatement: {
                Statements: [
                  Match.objectLike({ RegexMatchStatement: Match.anyValue() }),
                  Match.objectLike({ ByteMatchStatement: Match.anyValue() }),
                ],
              },
            },
            VisibilityConfig: Match.objectLike({ SampledRequestsEnabled: false }),
          }),
          // Per-address rate rules, answered 429 in the error envelope.
          Match.objectLike({
            Name: 'tracking-links-per-address',
            Action: {
              Block: {
                CustomResponse: Match.objectLike({
                  ResponseCode: 429,
                  ResponseHeaders: [{ Name: 'Retry-After', Value: '60' }],
                }),
              },
            },
            Statement: {
              RateBasedStatement: Match.objectLike({
                Limit: TRACKING_REQUESTS_PER_5_MIN,
                AggregateKeyType: 'IP',
                EvaluationWindowSec: 300,
                ScopeDownStatement: {
                  ByteMatchStatement: Match.objectLike({
                    FieldToMatch: { UriPath: {} },
                    SearchString: '/t/',
                  }),
                },
              }),
            },
          }),
          Match.objectLike({
            Name: 'short-keys-per-address',
            Statement: {
              RateBasedStatement: Match.objectLike({
                Limit: SHORT_KEY_REQUESTS_PER_5_MIN,
                AggregateKeyType: 'IP',
                ScopeDownStatement: {
                  SizeConstraintStatement: Match.objectLike({
                    FieldToMatch: { SingleHeader: { Name: 'x-api-key' } },
                    ComparisonOperator: 'LT',
                    Size: 32,
                  }),
                },
              }),
            },
          }),
        ],
        CustomResponseBodies: {
          'too-many': Match.objectLike({
            ContentType: 'APPLICATION_JSON',
            Content: Match.stringLikeRegexp('"code":429'),
          }),
        },
        // Sampled requests would keep X-Api-Key headers in WAF for hours.
        VisibilityConfig: Match.objectLike({ SampledRequestsEnabled: false }),
      });
      api.hasResourceProperties('AWS::WAFv2::WebACLAssociation', {
        WebACLArn: { 'Fn::GetAtt': [aclId, 'Arn'] },
        ResourceArn: Match.objectLike({
          'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp('/stages/')])],
        }),
      });
    });

    it('reserves concurrency for the routes that can run for seconds', () => {
      const lambdas = functions.findResources('AWS::Lambda::Function');
      for (const spec of SPECS) {
        const found = Object.entries(lambdas).find(([id]) =>
          id.startsWith(`${idOf(spec.name)}function`),
        );
        const reserved = (found?.[1] as { Properties: { ReservedConcurrentExecutions?: number } })
          .Properties.ReservedConcurrentExecutions;
        expect({ function: spec.name, reserved }).toEqual({
          function: spec.name,
          reserved: spec.reservedConcurrency,
        });
      }
      expect(
        Object.fromEntries(
          SPECS.filter((spec) => spec.reservedConcurrency).map((spec) => [
            spec.name,
            spec.reservedConcurrency,
          ]),
        ),
      ).toEqual({
        'transactional-send': 50,
        'person-merge': 100,
        'activities-create': 100,
        'organizations-merge': 50,
        'person-get': 50,
      });
      const total = SPECS.reduce((sum, spec) => sum + (spec.reservedConcurrency ?? 0), 0);
      // AWS keeps 100 of an account's 1,000 unreserved; the rest is for everything else.
      expect(total).toBeLessThanOrEqual(500);
    });

    it('wraps the signing keys with a KMS key of the region, rotated, retained', () => {
      data.hasResourceProperties('AWS::KMS::Key', {
        EnableKeyRotation: true,
        Description: Match.stringLikeRegexp('signing keys'),
      });
      data.hasResourceProperties('AWS::KMS::Alias', { AliasName: `alias/cdp-${region}-signing` });
      data.hasResource('AWS::KMS::Key', { DeletionPolicy: 'Retain' });
    });

    it('alarms on dead letters, queue age, 5xx, function errors and throttles, the iterator age of stream workers, held audiences, table throttles and SES rates, on a dashboard', () => {
      const names = Object.values(functions.findResources('AWS::CloudWatch::Alarm')).map(
        (alarm) => (alarm as { Properties: { AlarmName: string } }).Properties.AlarmName,
      );
      expect(names.sort()).toEqual(
        [
          ...QUEUES.flatMap((queue) => [
            alarmName.deadLetters(region, queue.name),
            alarmName.oldestMessage(region, queue.name),
          ]),
          alarmName.api5xxRate(region),
          alarmName.streamFailures(region),
          ...SPECS.flatMap((spec) => [
            alarmName.functionErrors(region, spec.name),
            alarmName.functionThrottles(region, spec.name),
          ]),
          // Every stream worker alarms when it reads its stream far behind the writes.
          ...STREAM_WORKERS.map((worker) => alarmName.streamIteratorAge(region, worker.function)),
          // And on the messages of its log that say something is wrong (a held audience).
          ...STREAM_WORKERS.flatMap((worker) =>
            (worker.logAlarms ?? []).map((alarm) => alarmName.logged(region, alarm.id)),
          ),
          ...TABLES.map((table) => alarmName.tableThrottles(region, table.name)),
          alarmName.sesBounceRate(region),
          alarmName.sesComplaintRate(region),
        ].sort(),
      );
      // The held-audience alarm counts the audience worker's log message that says so.
      functions.hasResourceProperties('AWS::Logs::MetricFilter', {
        FilterPattern: `{ $.message = "${AUDIENCE_HELD_MESSAGE}" }`,
        MetricTransformations: [
          Match.objectLike({ MetricNamespace: 'CDP', MetricName: 'audiences-held' }),
        ],
      });
      // Every alarm notifies the region's topic: directly in this stack, through the
      // parameter this stack hands it in a nested one.
      const [topicId, ...otherTopics] = Object.keys(api.findResources('AWS::SNS::Topic'));
      expect(otherTopics).toEqual([]);
      const apiStack = stackOf(app, `cdp-${region}-api`);
      if (!(apiStack instanceof ApiStack)) throw new Error('not an ApiStack');
      for (const [template, topic] of [
        [api, { Ref: topicId }],
        ...apiStack.functionStacks.map((nested) => {
          const parameters = Object.values(api.findResources('AWS::CloudFormation::Stack')).flatMap(
            (resource) =>
              Object.entries(
                (resource as { Properties: { Parameters?: Record<string, unknown> } }).Properties
                  .Parameters ?? {},
              ),
          );
          const [name] = parameters.find(
            ([, value]) => JSON.stringify(value) === JSON.stringify({ Ref: topicId }),
          ) ?? [''];
          return [Template.fromStack(nested), { Ref: name }] as const;
        }),
      ] as const) {
        for (const alarm of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
          const { AlarmActions, OKActions } = (
            alarm as { Properties: { AlarmActions: unknown; OKActions: unknown } }
          ).Properties;
          expect({ AlarmActions, OKActions }).toEqual({
            AlarmActions: [topic],
            OKActions: [topic],
          });
        }
      }
      api.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: `cdp-${region}` });
    });

    it('answers every error of the gateway itself in the error envelope', () => {
      const responses = Object.values(
        api.findResources('AWS::ApiGateway::GatewayResponse') as Record<
          string,
          { Properties: GatewayResponse }
        >,
      ).map(({ Properties }) => Properties);
      const byType = new Map(responses.map((response) => [response.ResponseType, response]));
      const expected: [string, number, string][] = [
        ['WAF_FILTERED', 413, EDGE_ERRORS.bodyRefused.message],
        ['REQUEST_TOO_LARGE', 413, EDGE_ERRORS.gatewayTooLarge.message],
        ['THROTTLED', 429, EDGE_ERRORS.throttled.message],
        ['INTEGRATION_FAILURE', 502, EDGE_ERRORS.integrationFailure.message],
        ['INTEGRATION_TIMEOUT', 504, EDGE_ERRORS.integrationTimeout.message],
      ];
      for (const [type, status, message] of expected) {
        const response = byType.get(type);
        expect(response?.StatusCode).toBe(String(status));
        const template = response?.ResponseTemplates['application/json'] ?? '';
        expect(JSON.parse(template.replace('$context.requestId', 'r-1'))).toEqual({
          request_id: 'r-1',
          code: status,
          error: message,
        });
      }
      expect(byType.get('THROTTLED')?.ResponseParameters).toMatchObject({
        'gatewayresponse.header.Retry-After': "'1'",
      });
      // Every other type keeps its own status, and says it in the envelope's code.
      const own: [string, number][] = [
        ['MISSING_AUTHENTICATION_TOKEN', 404],
        ['ACCESS_DENIED', 403],
        ['UNAUTHORIZED', 401],
        ['RESOURCE_NOT_FOUND', 404],
        ['UNSUPPORTED_MEDIA_TYPE', 415],
        ['QUOTA_EXCEEDED', 429],
        ['BAD_REQUEST_BODY', 400],
        ['API_CONFIGURATION_ERROR', 500],
      ];
      for (const [type, status] of own) {
        expect(byType.get(type)?.StatusCode).toBe(String(status));
        expect(byType.get(type)?.ResponseTemplates['application/json']).toMatch(
          new RegExp(`^\\{"request_id":"\\$context\\.requestId","code":${status},"error":`),
        );
      }
      // The catch-alls change no status (one set there would apply to every type above).
      for (const type of ['DEFAULT_4XX', 'DEFAULT_5XX']) {
        expect(byType.get(type)).toBeDefined();
        expect(byType.get(type)?.StatusCode).toBeUndefined();
      }
    });

    it("sends email through the region's configuration set, whose events reach the email-events queue", () => {
      data.hasResourceProperties('AWS::SES::ConfigurationSet', {
        Name: sesConfigurationSet(region),
        ReputationOptions: { ReputationMetricsEnabled: true },
      });
      const topics = data.findResources('AWS::SNS::Topic', {
        Properties: { TopicName: `cdp-${region}-ses-events` },
      });
      const [topicId, topic] = Object.entries(topics)[0] as [
        string,
        { Properties: { KmsMasterKeyId?: unknown } },
      ];
      expect(topic.Properties.KmsMasterKeyId).toBeDefined();
      data.hasResourceProperties('AWS::SES::ConfigurationSetEventDestination', {
        EventDestination: {
          Enabled: true,
          MatchingEventTypes: Match.arrayEquals([
            'send',
            'delivery',
            'bounce',
            'complaint',
            'reject',
          ]),
          SnsDestination: { TopicARN: { Ref: topicId } },
        },
      });
      const queues = data.findResources('AWS::SQS::Queue', {
        Properties: { QueueName: queueName(region, 'email-events') },
      });
      data.hasResourceProperties('AWS::SNS::Subscription', {
        Protocol: 'sqs',
        TopicArn: { Ref: topicId },
        Endpoint: { 'Fn::GetAtt': [Object.keys(queues)[0], 'Arn'] },
        RawMessageDelivery: false,
      });
      // SES may use the topic's key, and only the topic may send to the queue.
      data.hasResourceProperties('AWS::KMS::Key', {
        EnableKeyRotation: true,
        KeyPolicy: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Principal: { Service: 'ses.amazonaws.com' },
              Action: ['kms:GenerateDataKey*', 'kms:Decrypt'],
            }),
          ]),
        },
      });
      data.hasResourceProperties('AWS::SQS::QueuePolicy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Principal: { Service: 'sns.amazonaws.com' },
              Action: 'sqs:SendMessage',
              Condition: { ArnEquals: { 'aws:SourceArn': { Ref: topicId } } },
            }),
          ]),
        },
      });
      const fallbackDomain = (readContext().emailDomains as Record<string, string>)[region];
      data.hasResourceProperties('AWS::SES::EmailIdentity', { EmailIdentity: fallbackDomain });
      // The sender knows the fallback domain and where links point; the worker, the set.
      const variablesOf = (prefix: string) =>
        Object.entries(functions.findResources('AWS::Lambda::Function'))
          .filter(([id]) => id.startsWith(prefix))
          .map(([, fn]) => (fn as FunctionResource).Properties.Environment.Variables)[0];
      expect(variablesOf('transactionalsendfunction')).toMatchObject({
        EMAIL_FALLBACK_DOMAIN: fallbackDomain,
        PUBLIC_BASE_URL: (readContext().baseUrls as Record<string, string>)[region],
      });
      expect(JSON.stringify(variablesOf('emailworkerfunction'))).toMatch(
        /"SES_CONFIGURATION_SET":\{"Fn::ImportValue":"cdp-[a-z]+-data:ExportsOutputRefemailconfigurationset/,
      );
    });
  });
});
