import type { LogAlarm } from '../../shared/workers.js';
import { NestedStack, type NestedStackProps } from 'aws-cdk-lib';
import type { IRestApi } from 'aws-cdk-lib/aws-apigateway';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, StartingPosition, type IFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import { streamFilterPattern, type StreamWorkerDefinition } from '../../shared/workers.js';
import { STAGE_NAME } from '../../shared/edge.js';
import { reserveConcurrency } from '../constructs/abuse-limits.js';
import { CdpFunction } from '../constructs/cdp-function.js';
import { FunctionAlarms } from '../constructs/operations.js';
import type { RegionData } from './data-stack.js';
import type { FunctionGroup, FunctionSpec } from './function-groups.js';

export interface FunctionStackProps extends NestedStackProps {
  region: Region;
  group: FunctionGroup;
  /** The functions of this group (`functionSpecs`). */
  specs: readonly FunctionSpec[];
  data: RegionData;
  /** What every function of the region is told (its region, every region's address). */
  environment: Record<string, string>;
  /** The region's public address: the links of the emails a function builds point there. */
  publicBaseUrl: string;
  alarmTopic: ITopic;
  /** The REST API whose methods invoke these functions. */
  api: IRestApi;
  /** The handler module of a function, when not its folder's (infra tests only). */
  entryOf?: (spec: FunctionSpec) => string | undefined;
}

/**
 * One group of a regional API's functions (`function-groups.ts`), each with its role, policy,
 * log group, alarms and the permissions that let API Gateway invoke it (one per route it
 * serves), and for a worker the event source that feeds it. The group's routes stack
 * (`RouteStack`) binds the routes' methods to these functions.
 */
export class FunctionStack extends NestedStack {
  readonly functions = new Map<string, IFunction>();
  /** The functions fed by a table's stream. */
  readonly streamWorkers = new Set<string>();
  /** The alarms on messages of the functions' logs, by function. */
  readonly logAlarms = new Map<string, readonly LogAlarm[]>();

  constructor(scope: Construct, id: string, props: FunctionStackProps) {
    super(scope, id, {
      ...props,
      description: `Customer data platform API, ${props.region} region: the ${props.group} functions`,
    });
    const apiGateway = new ServicePrincipal('apigateway.amazonaws.com');
    for (const spec of props.specs) {
      const entry = props.entryOf?.(spec);
      const { fn, logGroup } = new CdpFunction(this, spec.name, {
        function: spec.name,
        memoryMb: spec.memoryMb,
        timeoutSeconds: spec.timeoutSeconds,
        access: spec.access,
        data: props.data,
        environment: props.environment,
        publicBaseUrl: props.publicBaseUrl,
        ...(spec.packageFiles ? { packageFiles: spec.packageFiles } : {}),
        ...(entry ? { entry } : {}),
      });
      reserveConcurrency(fn, spec);
      new FunctionAlarms(this, `${spec.name}-alarms`, {
        region: props.region,
        name: spec.name,
        fn,
        topic: props.alarmTopic,
        streamWorker: spec.streamWorker !== undefined,
        logGroup,
        logAlarms: spec.streamWorker?.logAlarms ?? [],
      });
      if (spec.streamWorker?.logAlarms) this.logAlarms.set(spec.name, spec.streamWorker.logAlarms);
      for (const route of spec.routes) {
        fn.addPermission(`invoke-${route.method}-${route.path}`, {
          principal: apiGateway,
          sourceArn: props.api.arnForExecuteApi(route.method, route.path, STAGE_NAME),
        });
      }
      // Every method and path of the API that no route serves.
      if (spec.fallback) {
        fn.addPermission('invoke-fallback', {
          principal: apiGateway,
          sourceArn: props.api.arnForExecuteApi('*', '/*', STAGE_NAME),
        });
      }
      if (spec.worker) {
        const queue = props.data.queues[spec.worker.queue];
        // A mapping named here, not by `SqsEventSource` after the queue's path from the app:
        // that path differs inside a pipeline stage, and a second mapping of the same function
        // and queue would be refused when switching between a direct and a pipeline deploy.
        fn.addEventSourceMapping(`${spec.worker.queue}-source`, {
          eventSourceArn: queue.queueArn,
          batchSize: spec.worker.batchSize,
          maxConcurrency: spec.worker.maxConcurrency,
          reportBatchItemFailures: true,
        });
        queue.grantConsumeMessages(fn);
      }
      if (spec.streamWorker) {
        this.feedFromStream(fn, spec.streamWorker, props.data);
        this.streamWorkers.add(spec.name);
      }
      this.functions.set(spec.name, fn);
    }
  }

  /**
   * A stream worker's event source: from the stream's oldest record on a new mapping, only
   * the items it handles (filtered before Lambda is billed), failed batches bisected and
   * retried, then described to the stream-failures queue rather than blocking the shard.
   */
  private feedFromStream(fn: IFunction, worker: StreamWorkerDefinition, data: RegionData): void {
    const table = data.tables[worker.table];
    if (!table.tableStreamArn) throw new Error(`The ${worker.table} table has no stream`);
    fn.addEventSourceMapping(`${worker.table}-stream`, {
      eventSourceArn: table.tableStreamArn,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: worker.batchSize,
      // No batching window: a change is handed on as soon as the shard has it (the lag).
      parallelizationFactor: worker.parallelization,
      bisectBatchOnError: true,
      retryAttempts: worker.maxRetryAttempts,
      reportBatchItemFailures: true,
      onFailure: new SqsDlq(data.streamFailures),
      filters: [FilterCriteria.filter(streamFilterPattern(worker))],
    });
    table.grantStreamRead(fn);
    data.streamFailures.grantSendMessages(fn);
  }
}
