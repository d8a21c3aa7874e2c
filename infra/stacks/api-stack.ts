import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  EndpointType,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
  type CfnDeployment,
  type IResource,
} from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { EDGE_RESPONSE_BODIES, edgeRateRules } from '../constructs/abuse-limits.js';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import { EDGE_ERRORS, EDGE_MAX_BODY_BYTES, STAGE_NAME, numbersAbove } from '../../shared/edge.js';
import { FALLBACK_FUNCTION, ROUTES, type RouteDefinition } from '../../shared/routes.js';
import {
  STREAM_WORKERS,
  WORKERS,
  type StreamWorkerDefinition,
  type WorkerDefinition,
} from '../../shared/workers.js';
import { QUEUES, TABLES } from '../../shared/resources.js';
import { ConsoleHosting } from '../constructs/console-hosting.js';
import { ConsoleAppClient, type ConsoleSignIn } from '../constructs/console-users.js';
import { Operations, type MonitoredFunction } from '../constructs/operations.js';
import { leftOutOnLocalstack } from '../localstack.js';
import type { RegionData } from './data-stack.js';
import { functionSpecs, groupsOf, isConsoleGroup, type FunctionSpec } from './function-groups.js';
import { FunctionStack } from './function-stack.js';
import { apiShapeOf, parentPath, routeLayout } from './route-layout.js';
import { LAMBDA_PROXY, RouteStack, lambdaProxy } from './route-stack.js';

/**
 * Context for the first of the two deploys that upgrade an API stack made before the routes
 * stacks (docs/stacks.md, "Upgrading"): the logical ID of the deployment its stage serves.
 * With it the API stack holds no routes stacks, so the areas' paths leave the REST API, and
 * keeps that deployment as it is, so the stage goes on serving every route meanwhile.
 */
export const UPGRADE_KEEP_DEPLOYMENT_CONTEXT = 'upgradeKeepDeployment';

export interface ApiStackProps extends StackProps {
  region: Region;
  data: RegionData;
  /** The public base address of every region, so a key of another region can be redirected. */
  baseUrls: Record<Region, string>;
  /** The routes and workers to deploy: the tables of `shared/` (other sets in infra tests). */
  routes?: readonly RouteDefinition[];
  workers?: readonly WorkerDefinition[];
  streamWorkers?: readonly StreamWorkerDefinition[];
  /** The handler module of a function, when not its folder's (infra tests only). */
  entryOf?: (spec: FunctionSpec) => string | undefined;
}

/** The deployment to keep (context `upgradeKeepDeployment`), if this is the first deploy. */
function deploymentToKeep(scope: Construct): string | undefined {
  const value = scope.node.tryGetContext(UPGRADE_KEEP_DEPLOYMENT_CONTEXT) as unknown;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^apiDeployment[0-9A-Za-z]+$/.test(value)) {
    throw new Error(
      `Context ${UPGRADE_KEEP_DEPLOYMENT_CONTEXT} must be the logical ID of the API stack's ` +
        `AWS::ApiGateway::Deployment (apiDeployment…), not ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** The stage's own throttle, before any function runs (per API key limits are the functions'). */
export const STAGE_THROTTLE = { rateLimit: 1000, burstLimit: 2000 } as const;

/**
 * The stateless half of a regional deployment: a REST API whose routes are those of the
 * routes table, each served by the Lambda function of its folder, the fallback function
 * behind every other path and method (404/405 in the error envelope), the queue workers, and
 * the edge of `shared/edge.ts`: a WAF rule that refuses bodies a Lambda invocation could not
 * carry, and gateway responses that answer every error of the gateway's own in the error
 * envelope. Authentication is the API key, checked by every function.
 *
 * Each group of the API (`function-groups.ts`) has two nested stacks: `functions-<group>`,
 * its functions with their roles, log groups, permissions and alarms, and `routes-<group>`,
 * its path resources and methods (`route-layout.ts`). This stack keeps the REST API, the
 * paths several groups share (`/v1`) with the root's and the unknown paths' fallback, the
 * deployment and stage, the edge, and the region's operations (alarm topic, dashboard,
 * queue, table, API and SES alarms). A route adds to its group's two stacks, a new area of
 * the API two nested stacks, and this stack grows only by those.
 */
export class ApiStack extends Stack {
  readonly api: RestApi;
  readonly functions: MonitoredFunction[] = [];
  readonly functionStacks: FunctionStack[] = [];
  readonly routeStacks: RouteStack[] = [];
  /** The console's pages and their distribution (absent on LocalStack: no CloudFront there). */
  readonly consoleHosting?: ConsoleHosting;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    const alarmEmail = this.node.tryGetContext('alarmEmail') as string | undefined;
    const environment = {
      CDP_REGION: props.region,
      BASE_URL_DEFAULT: props.baseUrls.default,
      BASE_URL_AU: props.baseUrls.au,
      BASE_URL_EU: props.baseUrls.eu,
    };

    const accessLogs = new LogGroup(this, 'access-logs', {
      retention: RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.api = new RestApi(this, 'api', {
      restApiName: `cdp-${props.region}`,
      description: `Customer data platform API, ${props.region} region`,
      endpointTypes: [EndpointType.REGIONAL],
      // Every body reaches the functions base64-encoded: 4/3 of its size whatever it holds,
      // so the edge limit (shared/edge.ts) always fits a Lambda invocation.
      binaryMediaTypes: ['*/*'],
      // API Gateway's logging role is one setting per account and region: context
      // `apiGatewayCloudWatchRole: false` leaves it to whatever already manages it.
      cloudWatchRole: !['false', false].includes(
        this.node.tryGetContext('apiGatewayCloudWatchRole') as string | boolean,
      ),
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: STAGE_NAME,
        throttlingRateLimit: STAGE_THROTTLE.rateLimit,
        throttlingBurstLimit: STAGE_THROTTLE.burstLimit,
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        tracingEnabled: true,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
      },
    });
    this.addGatewayResponses();

    const routes = props.routes ?? ROUTES;
    const workers = props.workers ?? WORKERS;
    const specs = functionSpecs(routes, workers, props.streamWorkers ?? STREAM_WORKERS);
    const operations = new Operations(this, 'operations', {
      region: props.region,
      api: { restApiName: this.api.restApiName, stageName: this.api.deploymentStage.stageName },
      queues: QUEUES.map(({ name }) => ({
        name,
        queue: props.data.queues[name],
        deadLetters: props.data.deadLetters[name],
      })),
      tables: TABLES.map(({ name, indexes }) => ({
        name,
        table: props.data.tables[name],
        indexes: indexes.map((index) => index.name),
      })),
      streamFailures: props.data.streamFailures,
      sesConfigurationSet: props.data.email.configurationSet,
      ...(alarmEmail ? { alarmEmail } : {}),
    });

    // The console: its pages behind CloudFront, and the app client that sends people back to
    // them. Both here, not in the data stack: the distribution forwards to this REST API, the
    // client names the distribution, and the console's functions are told the client's ID,
    // so every reference stays within this stack or points back at the data stack.
    let consoleSignIn: ConsoleSignIn | undefined;
    if (props.data.console && !leftOutOnLocalstack(this, 'AWS::CloudFront::Distribution')) {
      const hosting = new ConsoleHosting(this, 'console-hosting', {
        region: props.region,
        restApiId: this.api.restApiId,
        identityOrigins: [
          `https://cognito-idp.${this.region}.amazonaws.com`,
          props.data.console.signInDomain,
        ],
      });
      const client = new ConsoleAppClient(this, 'console-client', {
        pool: props.data.console,
        consoleUrl: hosting.url,
      });
      hosting.attachConfig({ ...client.signIn, region: props.region });
      this.consoleHosting = hosting;
      consoleSignIn = client.signIn;
    }

    const deployed = new Map<string, IFunction>();
    for (const group of groupsOf(specs)) {
      const stack = new FunctionStack(this, `functions-${group}`, {
        region: props.region,
        group,
        specs: specs.filter((spec) => spec.group === group),
        data: props.data,
        // The console's functions are told its sign-in (docs/console.md).
        environment:
          isConsoleGroup(group) && consoleSignIn
            ? {
                ...environment,
                CONSOLE_ISSUER: consoleSignIn.issuer,
                CONSOLE_CLIENT_ID: consoleSignIn.clientId,
              }
            : environment,
        publicBaseUrl: props.baseUrls[props.region],
        alarmTopic: operations.topic,
        api: this.api,
        ...(props.entryOf ? { entryOf: props.entryOf } : {}),
      });
      this.functionStacks.push(stack);
      for (const [name, fn] of stack.functions) {
        deployed.set(name, fn);
        this.functions.push({
          name,
          fn,
          streamWorker: stack.streamWorkers.has(name),
          logAlarms: stack.logAlarms.get(name) ?? [],
        });
      }
    }
    // Nothing refers to the dashboard, so the LocalStack deploy can leave it out whole.
    if (!leftOutOnLocalstack(this, 'AWS::CloudWatch::Dashboard')) {
      operations.addDashboard(this.functions);
    }
    const functionOf = (name: string): IFunction => {
      const fn = deployed.get(name);
      if (!fn) throw new Error(`No function ${name} was deployed`);
      return fn;
    };

    const fallback = functionOf(FALLBACK_FUNCTION.function);
    const fallbackIntegration = lambdaProxy(fallback);
    const layout = routeLayout(routes, specs);
    // The shared paths, each after its parent: the other methods of each (405), and of the
    // root; every unknown path (404).
    const shared = new Map<string, IResource>([['/', this.api.root]]);
    for (const path of layout.shared) {
      const parent = shared.get(parentPath(path));
      if (!parent) throw new Error(`No resource for the parent of ${path}`);
      shared.set(path, parent.addResource(path.slice(path.lastIndexOf('/') + 1)));
    }
    for (const resource of shared.values()) resource.addMethod('ANY', fallbackIntegration);
    this.api.root.addProxy({ defaultIntegration: fallbackIntegration, anyMethod: true });

    const deployment = this.api.latestDeployment;
    if (!deployment) throw new Error('The REST API has no deployment');
    const keep = deploymentToKeep(this);
    if (keep) {
      // The first deploy of the upgrade: no routes stacks, and the stage's deployment kept.
      (deployment.node.defaultChild as CfnDeployment).overrideLogicalId(keep);
    } else {
      for (const area of layout.areas) {
        const stack = new RouteStack(this, `routes-${area.group}`, {
          region: props.region,
          area,
          api: this.api,
          shared,
          functionOf,
          fallback,
        });
        this.routeStacks.push(stack);
        // The stage's deployment is a snapshot of the API: taken once every area is in place.
        if (stack.nestedStackResource) deployment.node.addDependency(stack.nestedStackResource);
      }
      // CDK names the deployment after the methods of this stack only: the routes stacks'
      // part of the API (every path, method and function, and how methods invoke them) is
      // added, so that a change to any route makes a new deployment and the stage moves to it.
      deployment.addToLogicalId({
        routes: apiShapeOf(layout),
        fallback: FALLBACK_FUNCTION.function,
        integration: LAMBDA_PROXY,
      });
    }

    this.addBodyLimitRule(props.region);

    NagSuppressions.addStackSuppressions(this, [
      {
        id: 'AwsSolutions-APIG2',
        reason:
          'Every function validates its body with its zod schema and answers 400 in the error envelope naming the member; a gateway validator would answer another shape.',
      },
      {
        id: 'AwsSolutions-APIG4',
        reason: 'Requests are authenticated by API key inside every function (spec: X-Api-Key).',
      },
      {
        id: 'AwsSolutions-COG4',
        reason: 'The API authenticates callers by the spec’s X-Api-Key, not Cognito users.',
      },
      {
        id: 'AwsSolutions-IAM4',
        reason:
          'API Gateway’s account-level role for CloudWatch logs uses the AWS managed policy made for it.',
        appliesTo: [
          'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs',
        ],
      },
    ]);
    new CfnOutput(this, 'ApiUrl', {
      description: `The ${props.region} region's API address (before a custom domain)`,
      value: this.api.url,
    });
  }

  /**
   * Every error API Gateway answers itself is the error envelope, with the request ID its
   * access logs carry; the statuses and texts are the local adapter's too (shared/edge.ts).
   */
  private addGatewayResponses(): void {
    const envelope = (status: number, error: string) =>
      `{"request_id":"$context.requestId","code":${status},"error":${error}}`;
    const quoted = (text: string) => JSON.stringify(text);
    const fromEdge: [ResponseType, keyof typeof EDGE_ERRORS, Record<string, string>?][] = [
      [ResponseType.WAF_FILTERED, 'bodyRefused'],
      [ResponseType.REQUEST_TOO_LARGE, 'gatewayTooLarge'],
      [ResponseType.THROTTLED, 'throttled', { 'Retry-After': "'1'" }],
      [ResponseType.INTEGRATION_FAILURE, 'integrationFailure'],
      [ResponseType.INTEGRATION_TIMEOUT, 'integrationTimeout'],
    ];
    type Response = [ResponseType, number, string, Record<string, string>?];
    const responses: Response[] = [
      ...fromEdge.map(([type, name, headers]): Response => [
        type,
        EDGE_ERRORS[name].status,
        quoted(EDGE_ERRORS[name].message),
        headers,
      ]),
      // Every path and method has a function behind it; should one not, it is a 404.
      [ResponseType.MISSING_AUTHENTICATION_TOKEN, 404, quoted('No such endpoint')],
      // The other types, each with its own status (a status set on DEFAULT_4XX/5XX would
      // replace the status of every type not set here): API Gateway's message in the envelope.
      ...(
        [
          [ResponseType.ACCESS_DENIED, 403],
          [ResponseType.UNAUTHORIZED, 401],
          [ResponseType.INVALID_API_KEY, 403],
          [ResponseType.INVALID_SIGNATURE, 403],
          [ResponseType.EXPIRED_TOKEN, 403],
          [ResponseType.RESOURCE_NOT_FOUND, 404],
          [ResponseType.UNSUPPORTED_MEDIA_TYPE, 415],
          [ResponseType.QUOTA_EXCEEDED, 429],
          [ResponseType.BAD_REQUEST_BODY, 400],
          [ResponseType.BAD_REQUEST_PARAMETERS, 400],
          [ResponseType.API_CONFIGURATION_ERROR, 500],
          [ResponseType.AUTHORIZER_CONFIGURATION_ERROR, 500],
          [ResponseType.AUTHORIZER_FAILURE, 500],
        ] as const
      ).map(([type, status]): Response => [type, status, '$context.error.messageString']),
    ];
    for (const [type, status, error, headers] of responses) {
      this.api.addGatewayResponse(`response-${type.responseType.toLowerCase()}`, {
        type,
        statusCode: String(status),
        responseHeaders: { 'Content-Type': "'application/json'", ...headers },
        templates: { 'application/json': envelope(status, error) },
      });
    }
    // A type API Gateway may add later keeps its own status; every type known today is above.
    for (const [type, code] of [
      [ResponseType.DEFAULT_4XX, 400],
      [ResponseType.DEFAULT_5XX, 500],
    ] as const) {
      this.api.addGatewayResponse(`response-${type.responseType.toLowerCase()}`, {
        type,
        responseHeaders: { 'Content-Type': "'application/json'" },
        templates: { 'application/json': envelope(code, '$context.error.messageString') },
      });
    }
  }

  /**
   * The WAF rule of the edge: a body over the limit by its `Content-Length`, or one sent
   * chunked (no length to check), is refused before API Gateway invokes anything; the
   * `WAF_FILTERED` gateway response answers it as a 413 in the envelope.
   */
  private addBodyLimitRule(region: Region): void {
    if (leftOutOnLocalstack(this, 'AWS::WAFv2::WebACL')) return;
    const header = (name: string) => ({ singleHeader: { Name: name } });
    // No sampled requests: WAF would keep whole requests, X-Api-Key included, for hours.
    const visibility = (metricName: string) => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: false,
    });
    const acl = new CfnWebACL(this, 'edge', {
      name: `cdp-${region}-edge`,
      scope: 'REGIONAL',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`cdp-${region}-edge`),
      customResponseBodies: EDGE_RESPONSE_BODIES,
      rules: [
        {
          name: 'body-limit',
          priority: 0,
          action: { block: {} },
          visibilityConfig: visibility(`cdp-${region}-body-limit`),
          statement: {
            orStatement: {
              statements: [
                {
                  regexMatchStatement: {
                    fieldToMatch: header('content-length'),
                    regexString: numbersAbove(EDGE_MAX_BODY_BYTES),
                    textTransformations: [{ priority: 0, type: 'NONE' }],
                  },
                },
                {
                  byteMatchStatement: {
                    fieldToMatch: header('transfer-encoding'),
                    positionalConstraint: 'CONTAINS',
                    searchString: 'chunked',
                    textTransformations: [{ priority: 0, type: 'LOWERCASE' }],
                  },
                },
              ],
            },
          },
        },
        ...edgeRateRules(region, visibility, 1),
      ],
    });
    new CfnWebACLAssociation(this, 'edge-association', {
      resourceArn: this.api.deploymentStage.stageArn,
      webAclArn: acl.attrArn,
    });
  }
}
