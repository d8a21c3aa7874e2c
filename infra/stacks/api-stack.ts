import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import { FALLBACK_FUNCTION, ROUTES } from '../../shared/routes.js';
import { WORKERS } from '../../shared/workers.js';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { CdpFunction } from '../constructs/cdp-function.js';
import type { RegionData } from './data-stack.js';

export interface ApiStackProps extends StackProps {
  region: Region;
  data: RegionData;
  /** The public base address of every region, so a key of another region can be redirected. */
  baseUrls: Record<Region, string>;
}

/**
 * The stateless half of a regional deployment: an HTTP API with one Lambda function per
 * route of the routes table, and the fallback function on `$default` (404/405 in the error
 * envelope). Authentication is the API key, checked by every function.
 */
export class ApiStack extends Stack {
  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    const environment = {
      CDP_REGION: props.region,
      BASE_URL_DEFAULT: props.baseUrls.default,
      BASE_URL_AU: props.baseUrls.au,
      BASE_URL_EU: props.baseUrls.eu,
    };

    const fallback = new CdpFunction(this, 'fallback', {
      ...FALLBACK_FUNCTION,
      access: [],
      data: props.data,
      environment,
    });
    const api = new HttpApi(this, 'api', {
      apiName: `cdp-${props.region}`,
      createDefaultStage: false,
      defaultIntegration: new HttpLambdaIntegration('fallback-integration', fallback.fn),
    });
    const accessLogs = new LogGroup(this, 'access-logs', {
      retention: RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const stage = new HttpStage(this, 'stage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: 1000, burstLimit: 2000 },
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs) },
    });

    for (const route of ROUTES) {
      const name = `${route.method}${route.path}`.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase();
      const handler = new CdpFunction(this, name, {
        function: route.function,
        memoryMb: route.memoryMb,
        timeoutSeconds: route.timeoutSeconds,
        access: route.access,
        data: props.data,
        environment,
      });
      api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: new HttpLambdaIntegration(`${name}-integration`, handler.fn),
      });
    }

    // The queue workers: each fed by its queue through an SQS event source that reports
    // partial batch failures, at most `maxConcurrency` batches at once.
    for (const worker of WORKERS) {
      const consumer = new CdpFunction(this, `worker-${worker.function}`, {
        function: worker.function,
        memoryMb: worker.memoryMb,
        timeoutSeconds: worker.timeoutSeconds,
        access: worker.access,
        data: props.data,
        environment,
      });
      consumer.fn.addEventSource(
        new SqsEventSource(props.data.queues[worker.queue], {
          batchSize: worker.batchSize,
          maxConcurrency: worker.maxConcurrency,
          reportBatchItemFailures: true,
        }),
      );
    }

    NagSuppressions.addStackSuppressions(this, [
      {
        id: 'AwsSolutions-APIG4',
        reason: 'Requests are authenticated by API key inside every function (spec: X-Api-Key).',
      },
    ]);
    new CfnOutput(this, 'ApiUrl', { value: stage.url });
  }
}
