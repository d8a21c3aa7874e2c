import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/bin/app.js';
import { REGIONS } from '../../shared/domain/regions.js';
import { QUEUES, TABLES, queueName, tableName } from '../../shared/resources.js';
import { ROUTES, routeKey } from '../../shared/routes.js';
import { WORKERS } from '../../shared/workers.js';

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
    beforeAll(() => {
      data = Template.fromStack(stackOf(app, `cdp-${region}-data`));
      api = Template.fromStack(stackOf(app, `cdp-${region}-api`));
    });

    it('keeps every table, with point-in-time recovery and deletion protection', () => {
      for (const table of TABLES) {
        data.hasResource('AWS::DynamoDB::Table', {
          DeletionPolicy: 'Retain',
          Properties: Match.objectLike({
            TableName: tableName(region, table.name),
            BillingMode: 'PAY_PER_REQUEST',
            DeletionProtectionEnabled: true,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
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

    it('routes every entry of the routes table to its own Node.js 22 ARM64 function', () => {
      for (const route of ROUTES) {
        api.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: routeKey(route) });
      }
      api.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default' });
      const functions = api.findResources('AWS::Lambda::Function', {
        Properties: { Runtime: 'nodejs22.x', Architectures: ['arm64'] },
      });
      expect(Object.keys(functions)).toHaveLength(ROUTES.length + 1 + WORKERS.length);
    });

    it('feeds every worker from its queue, reporting partial batch failures, with bounded concurrency', () => {
      for (const worker of WORKERS) {
        api.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
          BatchSize: worker.batchSize,
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          ScalingConfig: { MaximumConcurrency: worker.maxConcurrency },
        });
      }
      // The worker may read claim-check payloads and delay failed messages; it cannot send.
      const statements = statementsOf(api, 'workeringestworker');
      const actions = actionsOf(statements);
      expect(actions).toEqual(
        expect.arrayContaining([
          's3:GetObject',
          'sqs:ChangeMessageVisibility',
          'sqs:ReceiveMessage',
        ]),
      );
      expect(actions).not.toContain('sqs:SendMessage');
      expect(actions).not.toContain('s3:PutObject');
    });

    it('tells every function its region and the base address of every region', () => {
      const functions = api.findResources('AWS::Lambda::Function');
      for (const fn of Object.values(functions)) {
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
      const health = actionsOf(statementsOf(api, 'gethealth'));
      expect(health.filter((action) => action.startsWith('dynamodb:'))).toEqual([]);
      const fallback = actionsOf(statementsOf(api, 'fallback'));
      expect(fallback.filter((action) => action.startsWith('dynamodb:'))).toEqual([]);

      // Listing only reads, but for its idempotency records (the requests table).
      const listingStatements = statementsOf(api, 'postv1personget');
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
      const merge = actionsOf(statementsOf(api, 'postv1personmerge'));
      expect(merge).toEqual(
        expect.arrayContaining(['dynamodb:UpdateItem', 'geo:SearchPlaceIndexForText']),
      );
      expect(listing).not.toContain('geo:SearchPlaceIndexForText');
    });

    it('throttles and logs access on the stage', () => {
      api.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        AutoDeploy: true,
        DefaultRouteSettings: Match.objectLike({
          ThrottlingRateLimit: 1000,
          ThrottlingBurstLimit: 2000,
        }),
        AccessLogSettings: Match.objectLike({ DestinationArn: Match.anyValue() }),
      });
    });
  });
});
