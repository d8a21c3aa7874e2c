import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  AlarmStatusWidgetSortBy,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
  type IAlarm,
  type IMetric,
  type IWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { FilterPattern, MetricFilter, type ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { LogAlarm } from '../../shared/workers.js';
import { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import type { QueueName, TableName } from '../../shared/resources.js';

/**
 * Alarms and a dashboard for one regional deployment (docs/operations.md is the runbook).
 * Every alarm notifies one SNS topic when it fires and when it clears; every name is
 * `cdp-<region>-<what>`.
 */

export interface MonitoredFunction {
  /** The function's folder under `functions/` (`person-merge`, `ingest-worker`). */
  name: string;
  fn: IFunction;
  /** Fed by a table's stream: it has an iterator-age alarm too. */
  streamWorker?: boolean;
  /** Alarms on messages of its log. */
  logAlarms?: readonly LogAlarm[];
}

export interface MonitoredQueue {
  name: QueueName;
  queue: IQueue;
  deadLetters: IQueue;
  /** Oldest message age that means the backlog is not draining (default: MAX_MESSAGE_AGE). */
  maxMessageAge?: Duration;
}

export interface MonitoredTable {
  name: TableName;
  table: ITable;
  /** Its global secondary indexes: their throttles hold back the table's writes. */
  indexes?: readonly string[];
}

export interface OperationsProps {
  region: Region;
  /**
   * The REST API's metrics are read with the dimensions `ApiName` + `Stage` (namespace
   * AWS/ApiGateway): the aggregate of every resource and method of that one stage, which is
   * what CDK's own `Stage.metric*` read, published without detailed metrics. `ApiName`
   * alone would sum every stage of the API; adding `Resource` + `Method` needs detailed
   * metrics (charged per metric) and is not needed to alarm.
   */
  api: { restApiName: string; stageName: string };
  queues: readonly MonitoredQueue[];
  tables: readonly MonitoredTable[];
  /** Where the stream workers' batches go after their last attempt (their dead letters). */
  streamFailures?: IQueue;
  /** `sesConfigurationSet(region)`: its reputation rates are graphed next to the account's. */
  sesConfigurationSet: string;
  /** Subscribed to the alarm topic (the address must confirm the subscription). */
  alarmEmail?: string;
}

/**
 * How old the oldest message of a queue may get before its backlog counts as stuck.
 * A failed message is retried with backoff and stops counting towards the queue's oldest
 * age after its third receive (SQS moves it behind the others), so the age measures
 * messages nobody has taken yet: workers stopped, throttled or outpaced.
 * - ingest and email: 15 minutes. Both are asynchronous by contract (202 and a request ID);
 *   a burst of 100-record requests or a send-rate-paced batch of emails legitimately takes
 *   minutes, a quarter of an hour without progress does not.
 * - email-events: 5 minutes. Each event is one small update, and a bounce or complaint must
 *   suppress its address before the next email to it goes out (sender reputation).
 * - audience-jobs: 15 minutes. A build or the daily re-evaluation queues pages of people one after
 *   the other; a page waiting a quarter of an hour means the worker is not running.
 * - webhooks: 3 days. A delivery to an endpoint that is down legitimately waits on its retry
 *   schedule (docs/webhooks.md) for up to 3.2 days; older means the schedule is not running.
 * - webhooks-slow: 3 days, as webhooks (the same schedule, for endpoints that answer slowly).
 * - webhook-replays: 15 minutes. Each slice of a replay queues the next as it ends; a slice
 *   waiting a quarter of an hour means the replay worker is not running.
 */
export const MAX_MESSAGE_AGE: Record<QueueName, Duration> = {
  ingest: Duration.minutes(15),
  email: Duration.minutes(15),
  'email-events': Duration.minutes(5),
  'audience-jobs': Duration.minutes(15),
  webhooks: Duration.days(3),
  'webhooks-slow': Duration.days(3),
  'webhook-replays': Duration.minutes(15),
};

/** Thresholds, in one place so the runbook and the tests read the same numbers. */
export const THRESHOLDS = {
  /** 5xx answers as a share of requests in 5 minutes, in 2 of 3 consecutive windows. */
  api5xxRate: 0.01,
  /** Fewer requests than this in 5 minutes never count as a 5xx spike. */
  api5xxMinRequests: 20,
  /** Unhandled function errors (crashes, timeouts) in 5 minutes. */
  functionErrors: 5,
  /**
   * A stream worker reading this far behind its stream (ms, the maximum of 5 minutes), three
   * windows in a row: its effects (memberships, last seen, webhook events) are that late, and
   * a stream keeps its records 24 hours.
   */
  streamIteratorAgeMs: 10 * 60 * 1000,
  /** SES account rates: AWS reviews at 5 % / 0.1 % and may pause at 10 % / 0.5 %. */
  sesBounceRate: 0.04,
  sesComplaintRate: 0.0008,
} as const;

/** The CloudWatch limit of metrics one alarm expression may read. */
const MAX_METRICS_PER_ALARM = 10;

/** The names of the alarms, so that tests, the runbook and the construct agree. */
export const alarmName = {
  deadLetters: (region: Region, queue: QueueName) => `cdp-${region}-${queue}-dlq-depth`,
  oldestMessage: (region: Region, queue: QueueName) => `cdp-${region}-${queue}-oldest-message-age`,
  api5xxRate: (region: Region) => `cdp-${region}-api-5xx-rate`,
  streamFailures: (region: Region) => `cdp-${region}-stream-failures-depth`,
  functionErrors: (region: Region, fn: string) => `cdp-${region}-${fn}-errors`,
  functionThrottles: (region: Region, fn: string) => `cdp-${region}-${fn}-throttles`,
  streamIteratorAge: (region: Region, fn: string) => `cdp-${region}-${fn}-iterator-age`,
  /** Part `n` (from 1) of a table's throttle alarms; more than one only past 4 indexes. */
  tableThrottles: (region: Region, table: TableName, part = 1) =>
    `cdp-${region}-${table}-table-throttles${part > 1 ? `-${part}` : ''}`,
  sesBounceRate: (region: Region) => `cdp-${region}-ses-bounce-rate`,
  sesComplaintRate: (region: Region) => `cdp-${region}-ses-complaint-rate`,
  /** An alarm on a message a function logs (`LogAlarm`). */
  logged: (region: Region, id: string) => `cdp-${region}-${id}`,
};

/** The read and write throttle events of a table and of each of its indexes. */
function throttleMetrics(table: MonitoredTable): { key: string; metric: Metric }[] {
  const scopes = [
    { suffix: '', dimensions: {} },
    ...(table.indexes ?? []).map((index) => ({
      suffix: ` ${index}`,
      dimensions: { GlobalSecondaryIndexName: index },
    })),
  ];
  return scopes.flatMap(({ suffix, dimensions }, position) =>
    (['Read', 'Write'] as const).map((kind) => ({
      // Ids are unique across tables too: the dashboard graphs every table's sum together.
      key: `${table.name.replace(/[^a-z0-9]/g, '_')}_${kind.toLowerCase()}${position}`,
      metric: new Metric({
        namespace: 'AWS/DynamoDB',
        metricName: `${kind}ThrottleEvents`,
        dimensionsMap: { TableName: table.table.tableName, ...dimensions },
        statistic: 'Sum',
        period: Duration.minutes(5),
        label: `${table.name}${suffix} ${kind.toLowerCase()}`,
      }),
    })),
  );
}

/** The table's throttle metrics, in groups that each fit one alarm. */
function throttleGroups(table: MonitoredTable): { key: string; metric: Metric }[][] {
  const metrics = throttleMetrics(table);
  const groups: { key: string; metric: Metric }[][] = [];
  for (let start = 0; start < metrics.length; start += MAX_METRICS_PER_ALARM) {
    groups.push(metrics.slice(start, start + MAX_METRICS_PER_ALARM));
  }
  return groups;
}

/** The alarms `FunctionAlarms` creates for one function. */
export function functionAlarmNames(
  region: Region,
  fn: string,
  streamWorker = false,
  logAlarms: readonly LogAlarm[] = [],
): string[] {
  return [
    alarmName.functionErrors(region, fn),
    alarmName.functionThrottles(region, fn),
    ...(streamWorker ? [alarmName.streamIteratorAge(region, fn)] : []),
    ...logAlarms.map((alarm) => alarmName.logged(region, alarm.id)),
  ];
}

/**
 * Every alarm name the construct creates for these resources, in creation order (the
 * functions' own alarms are `functionAlarmNames`, made beside each function).
 */
export function operationsAlarmNames(
  props: Pick<OperationsProps, 'region' | 'queues' | 'tables' | 'streamFailures'>,
): string[] {
  const { region } = props;
  return [
    alarmName.api5xxRate(region),
    ...(props.streamFailures ? [alarmName.streamFailures(region)] : []),
    ...props.queues.flatMap((queue) => [
      alarmName.deadLetters(region, queue.name),
      alarmName.oldestMessage(region, queue.name),
    ]),
    ...props.tables.flatMap((table) =>
      throttleGroups(table).map((_group, index) =>
        alarmName.tableThrottles(region, table.name, index + 1),
      ),
    ),
    alarmName.sesBounceRate(region),
    alarmName.sesComplaintRate(region),
  ];
}

const FIVE_MINUTES = Duration.minutes(5);

/** Alarms are named after the resources they watch: two of one name would collide. */
function checkUniqueNames(resources: readonly { name: string }[]): void {
  const names = resources.map((resource) => resource.name);
  const repeated = names.filter((name, index) => names.indexOf(name) !== index);
  if (repeated.length > 0) {
    throw new Error(`Operations: names must be unique, repeated: ${repeated.join(', ')}`);
  }
}

interface AlarmOptions {
  metric: IMetric;
  threshold: number;
  description: string;
  /** The section of docs/operations.md that says what to do. */
  runbook: string;
  treatMissingData: TreatMissingData;
  comparisonOperator?: ComparisonOperator;
  evaluationPeriods?: number;
  datapointsToAlarm?: number;
}

/** An alarm that notifies the topic when it fires and when it clears. */
function notifyingAlarm(
  scope: Construct,
  id: string,
  name: string,
  topic: ITopic,
  options: AlarmOptions,
): Alarm {
  const alarm = new Alarm(scope, id, {
    alarmName: name,
    alarmDescription: `${options.description} Runbook: docs/operations.md#${options.runbook}`,
    metric: options.metric,
    threshold: options.threshold,
    comparisonOperator: options.comparisonOperator ?? ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: options.evaluationPeriods ?? 1,
    datapointsToAlarm: options.datapointsToAlarm ?? options.evaluationPeriods ?? 1,
    treatMissingData: options.treatMissingData,
  });
  const action = new SnsAction(topic);
  alarm.addAlarmAction(action);
  alarm.addOkAction(action);
  return alarm;
}

export interface FunctionAlarmsProps {
  region: Region;
  /** The function's folder under `functions/` (`person-merge`), which names its alarms. */
  name: string;
  fn: IFunction;
  /** The region's alarm topic (`Operations.topic`). */
  topic: ITopic;
  /** Fed by a table's stream: alarms when it reads far behind it too. */
  streamWorker?: boolean;
  /** Its log group, and the messages of it that alarm. */
  logGroup?: ILogGroup;
  logAlarms?: readonly LogAlarm[];
}

/**
 * The alarms of one function (two, three for a stream worker), made beside it (in the nested
 * stack of its group), so that a new function brings its alarms into the stack that has room
 * for it.
 */
export class FunctionAlarms extends Construct {
  constructor(
    scope: Construct,
    id: string,
    { region, name, fn, topic, streamWorker, logGroup, logAlarms = [] }: FunctionAlarmsProps,
  ) {
    super(scope, id);
    for (const alarm of logGroup ? logAlarms : []) {
      const filter = new MetricFilter(this, `${alarm.id}-filter`, {
        logGroup: logGroup as ILogGroup,
        filterPattern: FilterPattern.stringValue('$.message', '=', alarm.message),
        metricNamespace: 'CDP',
        metricName: alarm.id,
        metricValue: '1',
      });
      notifyingAlarm(this, alarm.id, alarmName.logged(region, alarm.id), topic, {
        metric: filter.metric({ statistic: 'Sum', period: FIVE_MINUTES }),
        threshold: 0,
        description: alarm.description,
        runbook: alarm.runbook,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    }
    // HTTP handlers turn every error into a response and workers report failed messages
    // instead of throwing, so Errors counts crashes: timeouts, out of memory, init failures.
    notifyingAlarm(this, 'errors', alarmName.functionErrors(region, name), topic, {
      metric: fn.metricErrors({ statistic: 'Sum', period: FIVE_MINUTES }),
      threshold: THRESHOLDS.functionErrors,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      description: `The ${name} function crashed (timeout, out of memory, init failure) ${THRESHOLDS.functionErrors} times or more in 5 minutes.`,
      runbook: 'function-errors',
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    // Workers are bounded by their event source's maximum concurrency, not throttled, so
    // any throttle means the account's concurrency is exhausted.
    notifyingAlarm(this, 'throttles', alarmName.functionThrottles(region, name), topic, {
      metric: fn.metricThrottles({ statistic: 'Sum', period: FIVE_MINUTES }),
      threshold: 0,
      description: `Invocations of the ${name} function were throttled (the account's concurrency is exhausted).`,
      runbook: 'function-throttles',
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (!streamWorker) return;
    // Lambda's IteratorAge: the age of the last record of each batch it hands the function.
    notifyingAlarm(this, 'iterator-age', alarmName.streamIteratorAge(region, name), topic, {
      metric: fn.metric('IteratorAge', { statistic: 'Maximum', period: FIVE_MINUTES }),
      threshold: THRESHOLDS.streamIteratorAgeMs,
      evaluationPeriods: 3,
      description: `The ${name} function read its stream more than ${THRESHOLDS.streamIteratorAgeMs / 60_000} minutes behind the writes for 15 minutes (its effects are that late; records go after 24 hours).`,
      runbook: 'stream-lag',
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
  }
}

/**
 * The operations of one regional deployment: an encrypted SNS topic for alarms (with an
 * optional email subscription), the alarms of docs/operations.md and the `cdp-<region>`
 * dashboard. Built in the API stack, which holds the functions and the API.
 */
export class Operations extends Construct {
  readonly topic: ITopic;
  readonly alarms: Alarm[] = [];

  private readonly region: Region;
  private readonly props: OperationsProps;
  private readonly apiRate: { rate: MathExpression; alarm: Alarm };
  private readonly tableThrottles: {
    table: MonitoredTable;
    alarms: { throttles: MathExpression }[];
  }[];

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    this.region = props.region;
    this.props = props;
    checkUniqueNames([...props.queues, ...props.tables]);

    this.topic = this.alarmTopic(props.alarmEmail);

    this.apiRate = this.apiAlarm(props.api);
    if (props.streamFailures) this.streamFailuresAlarm(props.streamFailures);
    for (const queue of props.queues) this.queueAlarms(queue);
    this.tableThrottles = props.tables.map((table) => ({
      table,
      alarms: this.tableAlarms(table),
    }));
    this.sesAlarms();
  }

  /**
   * The `cdp-<region>` dashboard, once the functions exist: they are made after this
   * construct, in the nested stacks of their groups, whose alarms notify its topic.
   */
  addDashboard(functions: readonly MonitoredFunction[]): Dashboard {
    const { props } = this;
    checkUniqueNames([...functions, ...props.queues, ...props.tables]);
    const dashboard = new Dashboard(this, 'dashboard', {
      dashboardName: `cdp-${props.region}`,
      defaultInterval: Duration.hours(6),
    });
    dashboard.addWidgets(...this.alarmStatusWidgets(functions));
    dashboard.addWidgets(heading('API', `${props.api.restApiName}, stage ${props.api.stageName}`));
    dashboard.addWidgets(...this.apiWidgets(props.api, this.apiRate));
    dashboard.addWidgets(heading('Functions', 'every route and worker'));
    dashboard.addWidgets(...functionWidgets(functions));
    dashboard.addWidgets(heading('Queues', 'depth, oldest message, dead letters'));
    dashboard.addWidgets(...queueWidgets(props.queues));
    dashboard.addWidgets(heading('DynamoDB', 'consumed capacity and throttles'));
    dashboard.addWidgets(...tableWidgets(this.tableThrottles));
    dashboard.addWidgets(
      heading('SES', `account-wide, and configuration set ${props.sesConfigurationSet}`),
    );
    dashboard.addWidgets(...sesWidgets(props.sesConfigurationSet));
    return dashboard;
  }

  /**
   * The topic is encrypted with its own customer managed key: the AWS managed SNS key does
   * not let CloudWatch encrypt, and then alarm notifications silently fail.
   */
  private alarmTopic(email: string | undefined): ITopic {
    const stack = Stack.of(this);
    const key = new Key(this, 'alarm-key', {
      description: `Encrypts the cdp-${this.region} alarm notifications`,
      enableKeyRotation: true,
      // Notifications are transient: nothing encrypted with this key outlives the stack.
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    // CloudWatch publishes alarm state changes to the topic, and must use its key to do so.
    // The key serves this topic only; which alarms may publish is the topic policy's say.
    key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );
    const topic = new Topic(this, 'alarm-topic', {
      topicName: `cdp-${this.region}-alarms`,
      displayName: `CDP ${this.region} alarms`,
      masterKey: key,
      enforceSSL: true,
    });
    // The topic has its own policy (TLS only), so CloudWatch needs to be allowed explicitly,
    // and only for this deployment's alarms.
    topic.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': stack.formatArn({
              service: 'cloudwatch',
              resource: 'alarm',
              resourceName: `cdp-${this.region}-*`,
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          },
        },
      }),
    );
    if (email) topic.addSubscription(new EmailSubscription(email));
    return topic;
  }

  /** An alarm of this construct, notifying the topic. */
  private alarm(id: string, name: string, options: AlarmOptions): Alarm {
    const alarm = notifyingAlarm(this, id, name, this.topic, options);
    this.alarms.push(alarm);
    return alarm;
  }

  private apiAlarm(api: OperationsProps['api']): { rate: MathExpression; alarm: Alarm } {
    const apiMetric = (metricName: string) =>
      new Metric({
        namespace: 'AWS/ApiGateway',
        metricName,
        dimensionsMap: { ApiName: api.restApiName, Stage: api.stageName },
        statistic: 'Sum',
        period: FIVE_MINUTES,
      });
    // Below the minimum count the rate reads 0: one failure among three requests at night is
    // not an incident (the function's own errors alarm still sees a crash).
    const rate = new MathExpression({
      expression: `IF(requests >= ${THRESHOLDS.api5xxMinRequests}, errors / requests, 0)`,
      usingMetrics: { requests: apiMetric('Count'), errors: apiMetric('5XXError') },
      period: FIVE_MINUTES,
      label: '5xx rate',
    });
    const alarm = this.alarm('api-5xx-rate', alarmName.api5xxRate(this.region), {
      metric: rate,
      threshold: THRESHOLDS.api5xxRate,
      description: `More than 1 % of API requests answered 5xx in 2 of 3 five-minute windows (at least ${THRESHOLDS.api5xxMinRequests} requests).`,
      runbook: 'api-5xx-rate',
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      // No requests, no data: nothing is failing.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    return { rate, alarm };
  }

  private streamFailuresAlarm(queue: IQueue): void {
    this.alarm('stream-failures-depth', alarmName.streamFailures(this.region), {
      metric: queue.metricApproximateNumberOfMessagesVisible({
        statistic: 'Maximum',
        period: FIVE_MINUTES,
      }),
      threshold: 0,
      description:
        'A batch of a table stream failed every attempt of its worker (audiences): the changes it describes were not applied.',
      runbook: 'stream-failures',
      treatMissingData: TreatMissingData.IGNORE,
    });
  }

  private queueAlarms(queue: MonitoredQueue): void {
    this.alarm(`${queue.name}-dlq-depth`, alarmName.deadLetters(this.region, queue.name), {
      metric: queue.deadLetters.metricApproximateNumberOfMessagesVisible({
        statistic: 'Maximum',
        period: FIVE_MINUTES,
      }),
      threshold: 0,
      description: `Messages of the ${queue.name} queue failed every attempt and wait in its dead-letter queue.`,
      runbook: 'dead-letters',
      // SQS stops publishing for a queue nobody calls, even with letters in it: keep the
      // last state rather than report OK while they wait (listing them revives the metric).
      treatMissingData: TreatMissingData.IGNORE,
    });
    const maxAge = queue.maxMessageAge ?? MAX_MESSAGE_AGE[queue.name];
    this.alarm(
      `${queue.name}-oldest-message-age`,
      alarmName.oldestMessage(this.region, queue.name),
      {
        metric: queue.queue.metricApproximateAgeOfOldestMessage({
          statistic: 'Maximum',
          period: FIVE_MINUTES,
        }),
        threshold: maxAge.toSeconds(),
        description: `The oldest message of the ${queue.name} queue waited more than ${maxAge.toHumanString()}: its backlog is not draining.`,
        runbook: 'oldest-message-age',
        // An empty queue publishes no age.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      },
    );
  }

  /**
   * Read and write throttle events of the table and of each index (an index that cannot
   * keep up throttles the table's writes). Events, not ThrottledRequests: that one needs an
   * Operation dimension and misses throttles inside batches that partly succeed.
   */
  private tableAlarms(table: MonitoredTable): { throttles: MathExpression; alarm: Alarm }[] {
    return throttleGroups(table).map((group, index) => {
      const part = index + 1;
      const throttles = new MathExpression({
        expression: group.map(({ key }) => key).join(' + '),
        usingMetrics: Object.fromEntries(group.map(({ key, metric }) => [key, metric])),
        period: FIVE_MINUTES,
        label: `${table.name} throttle events${part > 1 ? ` (${part})` : ''}`,
      });
      const alarm = this.alarm(
        `${table.name}-table-throttles${part > 1 ? `-${part}` : ''}`,
        alarmName.tableThrottles(this.region, table.name, part),
        {
          metric: throttles,
          threshold: 0,
          description: `DynamoDB throttled reads or writes of the ${table.name} table or its indexes in 2 of 3 five-minute windows.`,
          runbook: 'table-throttles',
          // The SDK retries a throttle: one burst is absorbed, throttling that persists is not.
          evaluationPeriods: 3,
          datapointsToAlarm: 2,
          // DynamoDB publishes throttle events only when there are some.
          treatMissingData: TreatMissingData.NOT_BREACHING,
        },
      );
      return { throttles, alarm };
    });
  }

  /**
   * The account-level reputation rates (AWS/SES, no dimensions): AWS reviews and pauses the
   * account on these, whatever configuration set the mail went through.
   */
  private sesAlarms(): void {
    // SES publishes the rates irregularly (none at all before the first bounce): keep the
    // last state between points, so a rate that went up stays red until SES reports it lower.
    this.alarm('ses-bounce-rate', alarmName.sesBounceRate(this.region), {
      metric: sesAccountRate('Reputation.BounceRate'),
      threshold: THRESHOLDS.sesBounceRate,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      description:
        'The SES account bounce rate reached 4 % (AWS reviews the account at 5 %, may pause sending at 10 %).',
      runbook: 'ses-bounce-rate',
      treatMissingData: TreatMissingData.IGNORE,
    });
    this.alarm('ses-complaint-rate', alarmName.sesComplaintRate(this.region), {
      metric: sesAccountRate('Reputation.ComplaintRate'),
      threshold: THRESHOLDS.sesComplaintRate,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      description:
        'The SES account complaint rate reached 0.08 % (AWS reviews the account at 0.1 %, may pause sending at 0.5 %).',
      runbook: 'ses-complaint-rate',
      treatMissingData: TreatMissingData.IGNORE,
    });
  }

  /** One alarm status widget shows at most 100 alarms. */
  /**
   * The functions' alarms are in other stacks: they are listed by name (an alarm's ARN is made
   * of its name), which needs no reference across stacks.
   */
  private alarmStatusWidgets(functions: readonly MonitoredFunction[]): IWidget[] {
    const all: IAlarm[] = [
      ...this.alarms,
      ...functions.flatMap(({ name, streamWorker, logAlarms }) =>
        functionAlarmNames(this.region, name, streamWorker, logAlarms).map((alarm) =>
          Alarm.fromAlarmName(this, `function-alarm-${alarm}`, alarm),
        ),
      ),
    ];
    const widgets: IWidget[] = [];
    for (let start = 0; start < all.length; start += 100) {
      const alarms = all.slice(start, start + 100);
      widgets.push(
        new AlarmStatusWidget({
          title: start === 0 ? `Alarms (cdp-${this.region})` : 'Alarms (continued)',
          alarms,
          sortBy: AlarmStatusWidgetSortBy.STATE_UPDATED_TIMESTAMP,
          width: 24,
          height: Math.min(12, 2 + Math.ceil(alarms.length / 6)),
        }),
      );
    }
    return widgets;
  }

  private apiWidgets(
    api: OperationsProps['api'],
    { rate }: { rate: MathExpression; alarm: Alarm },
  ): IWidget[] {
    const metric = (metricName: string, statistic: string, label: string) =>
      new Metric({
        namespace: 'AWS/ApiGateway',
        metricName,
        dimensionsMap: { ApiName: api.restApiName, Stage: api.stageName },
        statistic,
        period: FIVE_MINUTES,
        label,
      });
    return [
      new GraphWidget({
        title: 'API requests',
        left: [metric('Count', 'Sum', 'requests')],
        width: 6,
      }),
      new GraphWidget({
        title: 'API 4xx and 5xx',
        left: [metric('4XXError', 'Sum', '4xx'), metric('5XXError', 'Sum', '5xx')],
        right: [rate],
        rightYAxis: { min: 0, max: 0.1, showUnits: false },
        rightAnnotations: [{ value: THRESHOLDS.api5xxRate, label: '5xx rate alarm' }],
        width: 6,
      }),
      new GraphWidget({
        title: 'API latency (ms)',
        left: ['p50', 'p90', 'p99'].map((p) => metric('Latency', p, `latency ${p}`)),
        right: [metric('IntegrationLatency', 'p99', 'integration p99')],
        width: 12,
      }),
    ];
  }
}

function heading(title: string, detail: string): TextWidget {
  return new TextWidget({ markdown: `### ${title}\n${detail}`, width: 24, height: 2 });
}

/** All functions in each graph, one line each: a few graphs rather than one per function. */
function functionWidgets(functions: readonly MonitoredFunction[]): IWidget[] {
  const each = (metric: (fn: IFunction) => Metric, label: (name: string) => string) =>
    functions.map(({ name, fn }) => metric(fn).with({ label: label(name) }));
  const sum = { statistic: 'Sum', period: FIVE_MINUTES };
  return [
    new GraphWidget({
      title: 'Invocations',
      left: each(
        (fn) => fn.metricInvocations(sum),
        (name) => name,
      ),
      width: 8,
      height: 8,
    }),
    new GraphWidget({
      title: 'Errors (crashes)',
      left: each(
        (fn) => fn.metricErrors(sum),
        (name) => name,
      ),
      leftAnnotations: [{ value: THRESHOLDS.functionErrors, label: 'alarm' }],
      width: 8,
      height: 8,
    }),
    new GraphWidget({
      title: 'Throttles',
      left: each(
        (fn) => fn.metricThrottles(sum),
        (name) => name,
      ),
      width: 8,
      height: 8,
    }),
    new GraphWidget({
      title: 'Duration p99 (ms)',
      left: each(
        (fn) => fn.metricDuration({ statistic: 'p99', period: FIVE_MINUTES }),
        (name) => name,
      ),
      width: 12,
      height: 8,
    }),
    new GraphWidget({
      title: 'Concurrent executions (max)',
      left: each(
        (fn) => fn.metric('ConcurrentExecutions', { statistic: 'Maximum', period: FIVE_MINUTES }),
        (name) => name,
      ),
      width: 12,
      height: 8,
    }),
  ];
}

function queueWidgets(queues: readonly MonitoredQueue[]): IWidget[] {
  const max = { statistic: 'Maximum', period: FIVE_MINUTES };
  return [
    new GraphWidget({
      title: 'Queue depth (visible / in flight)',
      left: queues.flatMap(({ name, queue }) => [
        queue.metricApproximateNumberOfMessagesVisible({ ...max, label: `${name} visible` }),
        queue.metricApproximateNumberOfMessagesNotVisible({ ...max, label: `${name} in flight` }),
      ]),
      width: 8,
    }),
    new GraphWidget({
      title: 'Oldest message (s)',
      left: queues.map(({ name, queue }) =>
        queue.metricApproximateAgeOfOldestMessage({ ...max, label: name }),
      ),
      leftAnnotations: queues.map(({ name, maxMessageAge }) => ({
        value: (maxMessageAge ?? MAX_MESSAGE_AGE[name]).toSeconds(),
        label: `${name} alarm`,
      })),
      width: 8,
    }),
    new GraphWidget({
      title: 'Dead letters',
      left: queues.map(({ name, deadLetters }) =>
        deadLetters.metricApproximateNumberOfMessagesVisible({ ...max, label: `${name} DLQ` }),
      ),
      width: 8,
    }),
  ];
}

function tableWidgets(
  tables: readonly { table: MonitoredTable; alarms: { throttles: MathExpression }[] }[],
): IWidget[] {
  const sum = { statistic: 'Sum', period: FIVE_MINUTES };
  return [
    new GraphWidget({
      title: 'Consumed read capacity',
      left: tables.map(({ table }) =>
        table.table.metricConsumedReadCapacityUnits({ ...sum, label: table.name }),
      ),
      width: 8,
    }),
    new GraphWidget({
      title: 'Consumed write capacity',
      left: tables.map(({ table }) =>
        table.table.metricConsumedWriteCapacityUnits({ ...sum, label: table.name }),
      ),
      width: 8,
    }),
    new GraphWidget({
      title: 'Throttle events (tables and indexes)',
      left: tables.flatMap(({ alarms }) => alarms.map(({ throttles }) => throttles)),
      width: 8,
    }),
  ];
}

/** An account-level SES reputation rate (AWS/SES, no dimensions), as its alarm reads it. */
function sesAccountRate(metricName: string, label?: string): Metric {
  return new Metric({
    namespace: 'AWS/SES',
    metricName,
    statistic: 'Maximum',
    period: Duration.minutes(15),
    ...(label ? { label } : {}),
  });
}

function sesWidgets(configurationSet: string): IWidget[] {
  const count = (metricName: string) =>
    new Metric({
      namespace: 'AWS/SES',
      metricName,
      statistic: 'Sum',
      period: FIVE_MINUTES,
      label: metricName.toLowerCase(),
    });
  // Per configuration set, only once reputation metrics are enabled on the set.
  const setRate = (metricName: string, label: string) =>
    new Metric({
      namespace: 'AWS/SES',
      metricName,
      dimensionsMap: { 'ses:configuration-set': configurationSet },
      statistic: 'Maximum',
      period: Duration.minutes(15),
      label,
    });
  return [
    new GraphWidget({
      title: 'SES sends, deliveries, bounces, complaints (account)',
      left: [count('Send'), count('Delivery')],
      right: [count('Bounce'), count('Complaint'), count('Reject')],
      width: 8,
    }),
    new GraphWidget({
      title: 'SES bounce rate',
      left: [
        sesAccountRate('Reputation.BounceRate', 'account'),
        setRate('Reputation.BounceRate', configurationSet),
      ],
      leftYAxis: { min: 0, showUnits: false },
      leftAnnotations: [
        { value: THRESHOLDS.sesBounceRate, label: 'alarm (4 %)' },
        { value: 0.05, label: 'AWS review (5 %)' },
      ],
      width: 8,
    }),
    new GraphWidget({
      title: 'SES complaint rate',
      left: [
        sesAccountRate('Reputation.ComplaintRate', 'account'),
        setRate('Reputation.ComplaintRate', configurationSet),
      ],
      leftYAxis: { min: 0, showUnits: false },
      leftAnnotations: [
        { value: THRESHOLDS.sesComplaintRate, label: 'alarm (0.08 %)' },
        { value: 0.001, label: 'AWS review (0.1 %)' },
      ],
      width: 8,
    }),
  ];
}
