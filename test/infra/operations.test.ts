import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { App, Aspects, Duration, Stack, type CfnElement } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { AwsSolutionsChecks } from 'cdk-nag';
import {
  FunctionAlarms,
  Operations,
  alarmName,
  functionAlarmNames,
  operationsAlarmNames,
  type MonitoredFunction,
  type OperationsProps,
} from '../../infra/constructs/operations.js';

/**
 * The operations construct in a bare stack, next to stand-ins of what the API stack hands
 * it: two queues with their dead-letter queues, a table without indexes, one with four (one
 * alarm) and one with five (two alarms: CloudWatch reads at most 10 metrics per alarm); and
 * two functions with their own alarms (made in the same stack here, in the nested stacks of
 * their groups in the API stack), shown on its dashboard.
 */
interface Fixture {
  app: App;
  stack: Stack;
  template: Template;
  props: OperationsProps;
  functions: MonitoredFunction[];
  operations: Operations;
}

function build(alarmEmail?: string): Fixture {
  const app = new App();
  const stack = new Stack(app, 'ops');
  const fn = (name: string) =>
    new LambdaFunction(stack, name, {
      runtime: Runtime.NODEJS_LATEST,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => {};'),
      role: new Role(stack, `${name}-role`, {
        assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      }),
    });
  const queue = (name: string) => {
    const deadLetters = new Queue(stack, `${name}-dlq`, {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    const main = new Queue(stack, `${name}-queue`, {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: 5 },
    });
    return { queue: main, deadLetters };
  };
  const table = (name: string, indexes: string[]) => {
    const created = new Table(stack, `${name}-table`, {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
    for (const index of indexes) {
      created.addGlobalSecondaryIndex({
        indexName: index,
        partitionKey: { name: `${index}pk`, type: AttributeType.STRING },
      });
    }
    return created;
  };

  const props: OperationsProps = {
    region: 'eu',
    api: { restApiName: 'cdp-eu', stageName: 'v1' },
    queues: [
      { name: 'ingest', ...queue('ingest') },
      { name: 'email-events', ...queue('email-events') },
    ],
    tables: [
      { name: 'config', table: table('config', []) },
      {
        name: 'people',
        table: table('people', ['list', 'email', 'first', 'last']),
        indexes: ['list', 'email', 'first', 'last'],
      },
      {
        name: 'organizations',
        table: table('organizations', ['ia1', 'ib2', 'ic3', 'id4', 'ie5']),
        indexes: ['ia1', 'ib2', 'ic3', 'id4', 'ie5'],
      },
    ],
    sesConfigurationSet: 'cdp-eu',
    ...(alarmEmail ? { alarmEmail } : {}),
  };
  const operations = new Operations(stack, 'operations', props);
  const functions = [
    { name: 'person-merge', fn: fn('person-merge') },
    { name: 'ingest-worker', fn: fn('ingest-worker') },
    { name: 'audience-worker', fn: fn('audience-worker'), streamWorker: true },
  ];
  for (const { name, fn: monitored, streamWorker } of functions) {
    new FunctionAlarms(stack, `${name}-alarms`, {
      region: props.region,
      name,
      fn: monitored,
      topic: operations.topic,
      ...(streamWorker ? { streamWorker } : {}),
    });
  }
  operations.addDashboard(functions);
  Aspects.of(app).add(new AwsSolutionsChecks());
  app.synth();
  return { app, stack, template: Template.fromStack(stack), props, functions, operations };
}

function logicalId(stack: Stack, construct: IConstruct): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

type AlarmProperties = {
  AlarmName: string;
  AlarmActions?: unknown[];
  OKActions?: unknown[];
  Threshold: number;
  Metrics?: {
    Id: string;
    Expression?: string;
    ReturnData?: boolean;
    MetricStat?: {
      Metric: { MetricName: string; Namespace: string; Dimensions?: unknown[] };
      Stat: string;
    };
  }[];
};

function alarmsOf(template: Template): Map<string, AlarmProperties> {
  const alarms = template.findResources('AWS::CloudWatch::Alarm');
  return new Map(
    Object.values(alarms).map((alarm) => {
      const properties = (alarm as { Properties: AlarmProperties }).Properties;
      return [properties.AlarmName, properties];
    }),
  );
}

/**
 * The dashboard body as JSON: a Fn::Join of strings and references, each reference rendered
 * as `{ref:<logical id>}` (it always sits inside a JSON string).
 */
function dashboardOf(template: Template): {
  name: string;
  widgets: { type: string; properties: Record<string, unknown> }[];
} {
  const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
  expect(dashboards).toHaveLength(1);
  const { DashboardName, DashboardBody } = (
    dashboards[0] as {
      Properties: { DashboardName: string; DashboardBody: { 'Fn::Join': [string, unknown[]] } };
    }
  ).Properties;
  const body = DashboardBody['Fn::Join'][1]
    .map((part) => {
      if (typeof part === 'string') return part;
      const reference = part as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
      return `{ref:${reference.Ref ?? reference['Fn::GetAtt']?.join('.') ?? '?'}}`;
    })
    .join('');
  return {
    name: DashboardName,
    ...(JSON.parse(body) as { widgets: { type: string; properties: Record<string, unknown> }[] }),
  };
}

describe('the operations construct', () => {
  let fixture: Fixture;
  let alarms: Map<string, AlarmProperties>;
  beforeAll(() => {
    fixture = build('oncall@example.com');
    alarms = alarmsOf(fixture.template);
  });

  it('creates exactly the alarms it lists, named cdp-<region>-<what>', () => {
    expect([...alarms.keys()].sort()).toEqual(
      [
        ...operationsAlarmNames(fixture.props),
        ...fixture.functions.flatMap(({ name, streamWorker }) =>
          functionAlarmNames('eu', name, streamWorker),
        ),
      ].sort(),
    );
    expect([...alarms.keys()].sort()).toEqual(
      [
        'cdp-eu-api-5xx-rate',
        'cdp-eu-ingest-dlq-depth',
        'cdp-eu-ingest-oldest-message-age',
        'cdp-eu-email-events-dlq-depth',
        'cdp-eu-email-events-oldest-message-age',
        'cdp-eu-person-merge-errors',
        'cdp-eu-person-merge-throttles',
        'cdp-eu-ingest-worker-errors',
        'cdp-eu-ingest-worker-throttles',
        'cdp-eu-audience-worker-errors',
        'cdp-eu-audience-worker-throttles',
        'cdp-eu-audience-worker-iterator-age',
        'cdp-eu-config-table-throttles',
        'cdp-eu-people-table-throttles',
        'cdp-eu-organizations-table-throttles',
        'cdp-eu-organizations-table-throttles-2',
        'cdp-eu-ses-bounce-rate',
        'cdp-eu-ses-complaint-rate',
      ].sort(),
    );
    expect(fixture.operations.alarms).toHaveLength(alarms.size - 2 * fixture.functions.length - 1);
  });

  it('sends every alarm, and its recovery, to the alarm topic', () => {
    const topic = logicalId(fixture.stack, fixture.operations.topic);
    for (const [name, alarm] of alarms) {
      expect({ name, actions: alarm.AlarmActions, ok: alarm.OKActions }).toEqual({
        name,
        actions: [{ Ref: topic }],
        ok: [{ Ref: topic }],
      });
    }
  });

  it('encrypts the topic with a rotated key CloudWatch may use, and accepts TLS only', () => {
    const { template } = fixture;
    const keys = template.findResources('AWS::KMS::Key', {
      Properties: { EnableKeyRotation: true },
    });
    const [keyId] = Object.keys(keys);
    expect(Object.keys(keys)).toHaveLength(1);
    template.hasResourceProperties('AWS::SNS::Topic', {
      TopicName: 'cdp-eu-alarms',
      KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Condition: Match.objectLike({
              ArnLike: {
                'aws:SourceArn': {
                  'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp(':alarm:cdp-eu-\\*$')])],
                },
              },
            }),
          }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
  });

  it('subscribes no one without an alarm email', () => {
    const { template } = build();
    expect(Object.keys(template.findResources('AWS::SNS::Subscription'))).toEqual([]);
  });

  it('alarms on any message in a dead-letter queue, keeping its state when SQS goes quiet', () => {
    const { stack, props } = fixture;
    for (const queue of props.queues) {
      const alarm = alarms.get(alarmName.deadLetters('eu', queue.name));
      expect(alarm).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Statistic: 'Maximum',
        Period: 300,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'ignore',
        Dimensions: [
          {
            Name: 'QueueName',
            Value: { 'Fn::GetAtt': [logicalId(stack, queue.deadLetters), 'QueueName'] },
          },
        ],
      });
    }
  });

  it("alarms when a queue's oldest message is older than that queue allows", () => {
    const { stack, props } = fixture;
    const limits = { ingest: 15 * 60, 'email-events': 5 * 60 } as const;
    for (const queue of props.queues) {
      const alarm = alarms.get(alarmName.oldestMessage('eu', queue.name));
      expect(alarm).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Statistic: 'Maximum',
        Threshold: limits[queue.name as keyof typeof limits],
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
        Dimensions: [
          {
            Name: 'QueueName',
            Value: { 'Fn::GetAtt': [logicalId(stack, queue.queue), 'QueueName'] },
          },
        ],
      });
    }
  });

  it('lets a queue set its own age limit', () => {
    const app = new App();
    const stack = new Stack(app, 'ops');
    const deadLetters = new Queue(stack, 'dlq');
    const queue = new Queue(stack, 'queue', {
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: 5 },
    });
    new Operations(stack, 'operations', {
      region: 'au',
      api: { restApiName: 'cdp-au', stageName: 'v1' },
      queues: [{ name: 'email', queue, deadLetters, maxMessageAge: Duration.minutes(3) }],
      tables: [],
      sesConfigurationSet: 'cdp-au',
    });
    Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'cdp-au-email-oldest-message-age',
      Threshold: 180,
    });
  });

  it('reads queues and tables of another stack, as the API stack does of the data stack', () => {
    const app = new App();
    const data = new Stack(app, 'data');
    const deadLetters = new Queue(data, 'dlq');
    const queue = new Queue(data, 'queue', {
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: 5 },
    });
    const table = new Table(data, 'table', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
    });
    const api = new Stack(app, 'api');
    new Operations(api, 'operations', {
      region: 'au',
      api: { restApiName: 'cdp-au', stageName: 'v1' },
      queues: [{ name: 'ingest', queue, deadLetters }],
      tables: [{ name: 'people', table }],
      sesConfigurationSet: 'cdp-au',
    });
    app.synth();
    Template.fromStack(api).hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'cdp-au-ingest-dlq-depth',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: {
            'Fn::ImportValue': Match.stringLikeRegexp(`${logicalId(data, deadLetters)}QueueName`),
          },
        },
      ],
    });
  });

  it('alarms on the 5xx share of API requests, only above a minimum of requests', () => {
    const alarm = alarms.get('cdp-eu-api-5xx-rate');
    expect(alarm).toMatchObject({
      Threshold: 0.01,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: 'notBreaching',
    });
    const metrics = alarm?.Metrics ?? [];
    const expression = metrics.find((metric) => metric.Expression !== undefined);
    expect(expression).toMatchObject({
      Expression: 'IF(requests >= 20, errors / requests, 0)',
      ReturnData: true,
    });
    const read = Object.fromEntries(
      metrics.filter((metric) => metric.MetricStat).map((metric) => [metric.Id, metric.MetricStat]),
    );
    const dimensions = [
      { Name: 'ApiName', Value: 'cdp-eu' },
      { Name: 'Stage', Value: 'v1' },
    ];
    expect(read).toEqual({
      requests: {
        Metric: { Namespace: 'AWS/ApiGateway', MetricName: 'Count', Dimensions: dimensions },
        Period: 300,
        Stat: 'Sum',
      },
      errors: {
        Metric: { Namespace: 'AWS/ApiGateway', MetricName: '5XXError', Dimensions: dimensions },
        Period: 300,
        Stat: 'Sum',
      },
    });
  });

  it('alarms on the errors and the throttles of every function', () => {
    const { stack, functions } = fixture;
    for (const { name, fn } of functions) {
      const dimensions = [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, fn) } }];
      expect(alarms.get(`cdp-eu-${name}-errors`)).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Statistic: 'Sum',
        Period: 300,
        Threshold: 5,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        Dimensions: dimensions,
      });
      expect(alarms.get(`cdp-eu-${name}-throttles`)).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Throttles',
        Statistic: 'Sum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        Dimensions: dimensions,
      });
    }
  });

  it('alarms when a stream worker reads its stream more than 10 minutes behind for 15 minutes', () => {
    const { stack, functions } = fixture;
    for (const { name, fn, streamWorker } of functions) {
      const alarm = alarms.get(`cdp-eu-${name}-iterator-age`);
      if (!streamWorker) {
        expect(alarm).toBeUndefined();
        continue;
      }
      expect(alarm).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Statistic: 'Maximum',
        Period: 300,
        Threshold: 600_000,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack, fn) } }],
      });
    }
  });

  it('alarms on the throttle events of every table and each of its indexes', () => {
    const { stack, props } = fixture;
    /** `read`/`write` + index (or `table`) of every metric an alarm reads. */
    const readsOf = (name: string) => {
      const alarm = alarms.get(name);
      expect(alarm).toMatchObject({
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 2,
        TreatMissingData: 'notBreaching',
      });
      const metrics = alarm?.Metrics ?? [];
      const ids = metrics.filter((m) => m.MetricStat).map((m) => m.Id);
      expect(metrics.find((m) => m.ReturnData)?.Expression).toBe(ids.join(' + '));
      return metrics.flatMap(({ MetricStat }) => {
        if (!MetricStat) return [];
        const dimensions = (MetricStat.Metric.Dimensions ?? []) as {
          Name: string;
          Value: unknown;
        }[];
        const tableName = dimensions.find((d) => d.Name === 'TableName')?.Value;
        const index = dimensions.find((d) => d.Name === 'GlobalSecondaryIndexName')?.Value;
        expect(['string', 'undefined']).toContain(typeof index);
        expect(MetricStat.Metric.Namespace).toBe('AWS/DynamoDB');
        expect(MetricStat.Stat).toBe('Sum');
        return [
          {
            tableName,
            read: `${MetricStat.Metric.MetricName} ${(index as string | undefined) ?? 'table'}`,
          },
        ];
      });
    };
    const both = (scope: string) => [`ReadThrottleEvents ${scope}`, `WriteThrottleEvents ${scope}`];
    const expected = {
      'cdp-eu-config-table-throttles': both('table'),
      'cdp-eu-people-table-throttles': ['table', 'list', 'email', 'first', 'last'].flatMap(both),
      'cdp-eu-organizations-table-throttles': ['table', 'ia1', 'ib2', 'ic3', 'id4'].flatMap(both),
      'cdp-eu-organizations-table-throttles-2': both('ie5'),
    };
    for (const [name, reads] of Object.entries(expected)) {
      const table = props.tables.find((t) => name.startsWith(`cdp-eu-${t.name}-`));
      const found = readsOf(name);
      expect({ name, reads: found.map((f) => f.read) }).toEqual({ name, reads });
      for (const { tableName } of found) {
        expect(tableName).toEqual({ Ref: logicalId(stack, table?.table as IConstruct) });
      }
    }
  });

  it('alarms on the account SES bounce and complaint rates before AWS reviews the account', () => {
    for (const [name, metricName, threshold] of [
      ['cdp-eu-ses-bounce-rate', 'Reputation.BounceRate', 0.04],
      ['cdp-eu-ses-complaint-rate', 'Reputation.ComplaintRate', 0.0008],
    ] as const) {
      const alarm = alarms.get(name);
      expect(alarm).toMatchObject({
        Namespace: 'AWS/SES',
        MetricName: metricName,
        Statistic: 'Maximum',
        Threshold: threshold,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'ignore',
      });
      // Account-level: the rates AWS enforces on carry no dimension.
      expect(alarm).not.toHaveProperty('Dimensions');
    }
  });

  it('points every alarm at its runbook section', () => {
    const runbook = readFileSync('docs/operations.md', 'utf8');
    for (const [name, alarm] of alarms) {
      const section = /#([a-z0-9-]+)$/.exec(
        (alarm as { AlarmDescription?: string }).AlarmDescription ?? '',
      )?.[1];
      expect({ name, documented: runbook.includes(`<a id="${section ?? '?'}"></a>`) }).toEqual({
        name,
        documented: true,
      });
      expect({
        name,
        description: (alarm as { AlarmDescription?: string }).AlarmDescription,
      }).toEqual({
        name,
        description: expect.stringMatching(/Runbook: docs\/operations\.md#[a-z0-9-]+$/),
      });
    }
  });

  it('builds the cdp-<region> dashboard with the alarm status and every metric group', () => {
    const { stack, props } = fixture;
    const dashboard = dashboardOf(fixture.template);
    expect(dashboard.name).toBe('cdp-eu');

    const alarmWidgets = dashboard.widgets.filter((w) => w.type === 'alarm');
    const shown = alarmWidgets.flatMap((w) => w.properties.alarms as string[]);
    expect(shown).toHaveLength(alarms.size);
    for (const alarm of fixture.operations.alarms) {
      expect(shown).toContain(`{ref:${logicalId(stack, alarm)}.Arn}`);
    }
    // The functions' alarms are in other stacks on the API: shown by the ARN of their name.
    for (const { name, streamWorker } of fixture.functions) {
      for (const alarm of functionAlarmNames('eu', name, streamWorker)) {
        expect(shown).toContainEqual(expect.stringMatching(new RegExp(`:alarm:${alarm}$`)));
      }
    }

    const graphs = new Map(
      dashboard.widgets
        .filter((w) => w.type === 'metric')
        .map((w) => [w.properties.title as string, w.properties.metrics as unknown[][]]),
    );
    expect([...graphs.keys()]).toEqual([
      'API requests',
      'API 4xx and 5xx',
      'API latency (ms)',
      'Invocations',
      'Errors (crashes)',
      'Throttles',
      'Duration p99 (ms)',
      'Concurrent executions (max)',
      'Queue depth (visible / in flight)',
      'Oldest message (s)',
      'Dead letters',
      'Consumed read capacity',
      'Consumed write capacity',
      'Throttle events (tables and indexes)',
      'SES sends, deliveries, bounces, complaints (account)',
      'SES bounce rate',
      'SES complaint rate',
    ]);
    /** `namespace metric stat` of each plain metric line of a graph. */
    const lines = (title: string) =>
      (graphs.get(title) ?? []).flatMap((line) => {
        if (typeof line[0] !== 'string' || typeof line[1] !== 'string') return [];
        const options = line.at(-1) as { stat?: string };
        return [`${line[0]} ${line[1]} ${options.stat ?? ''}`.trim()];
      });
    const apiLines = lines('API latency (ms)');
    expect(apiLines).toEqual([
      'AWS/ApiGateway Latency p50',
      'AWS/ApiGateway Latency p90',
      'AWS/ApiGateway Latency p99',
      'AWS/ApiGateway IntegrationLatency p99',
    ]);
    expect(lines('API 4xx and 5xx')).toEqual(
      expect.arrayContaining(['AWS/ApiGateway 4XXError Sum', 'AWS/ApiGateway 5XXError Sum']),
    );
    for (const [title, metric] of [
      ['Invocations', 'AWS/Lambda Invocations Sum'],
      ['Errors (crashes)', 'AWS/Lambda Errors Sum'],
      ['Throttles', 'AWS/Lambda Throttles Sum'],
      ['Duration p99 (ms)', 'AWS/Lambda Duration p99'],
      ['Concurrent executions (max)', 'AWS/Lambda ConcurrentExecutions Maximum'],
    ] as const) {
      expect({ title, lines: lines(title) }).toEqual({
        title,
        lines: fixture.functions.map(() => metric),
      });
    }
    expect(lines('Oldest message (s)')).toEqual([
      'AWS/SQS ApproximateAgeOfOldestMessage Maximum',
      'AWS/SQS ApproximateAgeOfOldestMessage Maximum',
    ]);
    expect(lines('Dead letters')).toHaveLength(props.queues.length);
    expect(lines('Consumed read capacity')).toEqual(
      props.tables.map(() => 'AWS/DynamoDB ConsumedReadCapacityUnits Sum'),
    );
    expect(lines('SES sends, deliveries, bounces, complaints (account)')).toEqual([
      'AWS/SES Send Sum',
      'AWS/SES Delivery Sum',
      'AWS/SES Bounce Sum',
      'AWS/SES Complaint Sum',
      'AWS/SES Reject Sum',
    ]);
    const bounceRates = JSON.stringify(graphs.get('SES bounce rate'));
    expect(bounceRates).toContain('Reputation.BounceRate');
    expect(bounceRates).toContain('"ses:configuration-set","cdp-eu"');
    const throttles = JSON.stringify(graphs.get('Throttle events (tables and indexes)'));
    expect(throttles).toContain('WriteThrottleEvents');
    expect(throttles).toContain('"GlobalSecondaryIndexName","email"');
  });

  it('refuses two resources with the same name (their alarms would collide)', () => {
    const { props, functions } = fixture;
    const stack = new Stack(new App(), 'other');
    const [first] = functions;
    if (!first) throw new Error('fixture has functions');
    const operations = new Operations(stack, 'operations', props);
    expect(() => operations.addDashboard([first, { ...first }])).toThrow(/person-merge/);
    expect(
      () =>
        new Operations(new Stack(new App(), 'again'), 'operations', {
          ...props,
          queues: [...props.queues, ...props.queues.slice(0, 1)],
        }),
    ).toThrow(/ingest/);
  });

  it('passes the cdk-nag AWS Solutions checks', () => {
    const errors = Annotations.fromStack(fixture.stack).findError(
      '*',
      Match.stringLikeRegexp('AwsSolutions-.*'),
    );
    expect(errors.map((e) => `${e.id}: ${JSON.stringify(e.entry.data)}`)).toEqual([]);
  });
});
