import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import {
  AssetHashType,
  Aws,
  CfnOutput,
  DockerImage,
  Duration,
  RemovalPolicy,
  Stack,
} from 'aws-cdk-lib';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  Function as CloudFrontFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestPolicy,
  PriceClass,
  ResponseHeadersPolicy,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { HttpOrigin, S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, CacheControl, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import { consoleContentSecurityPolicy } from '../../shared/console-csp.js';
import { STAGE_NAME } from '../../shared/edge.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CONSOLE_DIR = join(ROOT, 'console');

/** The path the pages are served under, as Vite builds them (`base` in console/vite.config.ts). */
export const CONSOLE_PATH = '/console/';

/** HSTS for two years, subdomains included (the distribution's own name has none of its own). */
export const CONSOLE_HSTS_SECONDS = 63_072_000;

/**
 * Builds the pages with Vite into CDK's asset folder, during `cdk synth` (and so `cdk deploy`
 * and the pipeline's synth): no Docker, no step to remember. A failed build fails the synth
 * rather than falling back to Docker. Stacks whose bundling is skipped (the infra tests'
 * `aws:cdk:bundling-stacks: []`) do not build them.
 */
function pagesSource() {
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin');
  return Source.asset(CONSOLE_DIR, {
    // By what was built, not by `console/` alone: the pages also import the API's schemas from
    // `shared/`, and a change there must reach the bucket.
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never used: the local build below always answers, or throws.
      image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22-slim'),
      local: {
        tryBundle(outputDir: string): boolean {
          const built = spawnSync(
            process.execPath,
            [join(vite, 'vite.js'), 'build', CONSOLE_DIR, '--outDir', outputDir, '--emptyOutDir'],
            { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
          );
          if (built.status !== 0) {
            throw new Error(`The console's pages did not build (vite exit ${built.status})`);
          }
          return true;
        },
      },
    },
  });
}

/**
 * The function that routes a page's own paths to the page (it routes in the browser): a path
 * under `/console/` without a file extension is answered with `index.html`, and `/` and
 * `/console` are sent to `/console/`. Files (the hashed assets, `config.json`) are looked up as
 * they are, so a missing one is an error, not the page; the API's paths never reach it.
 */
export const PAGE_ROUTING_CODE = `function handler(event) {
  var request = event.request;
  var uri = request.uri;
  if (uri === '/' || uri === '/console') {
    return { statusCode: 301, statusDescription: 'Moved Permanently',
      headers: { location: { value: '${CONSOLE_PATH}' }, 'cache-control': { value: 'max-age=3600' } } };
  }
  var last = uri.slice(uri.lastIndexOf('/') + 1);
  if (uri.indexOf('${CONSOLE_PATH}') === 0 && last.indexOf('.') === -1) {
    request.uri = '${CONSOLE_PATH}index.html';
  }
  return request;
}`;

export interface ConsoleHostingProps {
  region: Region;
  /** The region's REST API: the distribution forwards `/console/v1/*` to its stage. */
  restApiId: string;
  /** The origins the sign-in talks to (the user pool's issuer and managed login domain). */
  identityOrigins: string[];
}

/**
 * The console's pages on AWS, served the way the local stack serves them (local/console-site.ts):
 * one origin for the pages and the console's API, so the pages call `/console/v1/` as they do
 * locally (no CORS), under the same Content-Security-Policy.
 *
 * - The pages (`console/dist`) in a private bucket: public access blocked, encrypted, TLS
 *   only, no website hosting; CloudFront reads it through an origin access control.
 * - A CloudFront distribution, HTTPS only (HTTP is redirected): `/console/…` from the bucket,
 *   routed to the page by a CloudFront function; `/console/v1/*` from the region's API,
 *   uncached, every header but Host forwarded (the ID token), every method.
 * - A response headers policy: the console's CSP, HSTS, nosniff, no referrer, no framing.
 *
 * `config.json` (the app client and issuer the pages sign in with, and the region) is written
 * beside the pages at deploy, from the stack's own values, by `attachConfig`, once the app
 * client exists (it names this distribution's address).
 */
export class ConsoleHosting extends Construct {
  readonly bucket: Bucket;
  readonly distribution: Distribution;
  /** `https://<distribution>.cloudfront.net/console/`: where the console is reached. */
  readonly url: string;
  readonly contentSecurityPolicy: string;

  constructor(scope: Construct, id: string, props: ConsoleHostingProps) {
    super(scope, id);
    this.bucket = new Bucket(this, 'pages', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // The pages are a build output: the deployment puts them back, and removes them (so the
      // bucket can go) when the stack goes.
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.contentSecurityPolicy = consoleContentSecurityPolicy(props.identityOrigins);
    const headers = new ResponseHeadersPolicy(this, 'headers', {
      responseHeadersPolicyName: `cdp-${props.region}-console-${Aws.REGION}`,
      comment: "The console's security headers (docs/console.md)",
      securityHeadersBehavior: {
        contentSecurityPolicy: {
          contentSecurityPolicy: this.contentSecurityPolicy,
          override: true,
        },
        strictTransportSecurity: {
          accessControlMaxAge: Duration.seconds(CONSOLE_HSTS_SECONDS),
          includeSubdomains: true,
          override: true,
        },
        contentTypeOptions: { override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
      },
    });
    const routing = new CloudFrontFunction(this, 'page-routing', {
      comment: "Routes the console's page paths to its page",
      runtime: FunctionRuntime.JS_2_0,
      code: FunctionCode.fromInline(PAGE_ROUTING_CODE),
    });

    const api = new HttpOrigin(`${props.restApiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`, {
      originPath: `/${STAGE_NAME}`,
      protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
    });
    this.distribution = new Distribution(this, 'distribution', {
      comment: `cdp ${props.region} console`,
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_ALL,
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
        functionAssociations: [{ function: routing, eventType: FunctionEventType.VIEWER_REQUEST }],
      },
      additionalBehaviors: {
        [`${CONSOLE_PATH}v1/*`]: {
          origin: api,
          // An API call is never redirected: its method and body would not survive it.
          viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
          allowedMethods: AllowedMethods.ALLOW_ALL,
          cachePolicy: CachePolicy.CACHING_DISABLED,
          originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
          responseHeadersPolicy: headers,
        },
      },
      // No error responses: they would apply to the API's answers too (a 404 of the API must
      // stay its JSON). The page's own paths are routed by the function above instead.
    });
    this.url = `https://${this.distribution.distributionDomainName}${CONSOLE_PATH}`;

    NagSuppressions.addResourceSuppressions(this.bucket, [
      {
        id: 'AwsSolutions-S1',
        reason:
          'The bucket holds only the built pages, read by CloudFront alone; the distribution is where requests arrive.',
      },
    ]);
    NagSuppressions.addResourceSuppressions(this.distribution, [
      {
        id: 'AwsSolutions-CFR1',
        reason: 'The console is for the operators of the region, wherever they are.',
      },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          "The pages are static files; the console's API behind it keeps the regional API's WAF web ACL, and every call needs a valid ID token.",
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          "Access logs would hold only page loads; every change made through the console is in the instance's audit log, and the API's own access logs hold each API call.",
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          "The distribution's default *.cloudfront.net certificate; CloudFront negotiates TLS 1.2 or later with current browsers. A custom domain with its own certificate and TLSv1.2_2021 is the operator's choice.",
      },
    ]);
    new CfnOutput(Stack.of(this), 'ConsoleUrl', {
      description: `The ${props.region} region's console`,
      value: this.url,
    });
  }

  /**
   * Uploads the pages and writes `config.json` beside them from the stack's own values. The
   * hashed assets are kept a year; `index.html` and `config.json` are revalidated, and
   * invalidated at each deploy, so a new build is seen at once.
   */
  attachConfig(config: { issuer: string; clientId: string; region: Region }): void {
    const pages = pagesSource();
    const prefix = CONSOLE_PATH.slice(1);
    const always = ['index.html', 'config.json'];
    new BucketDeployment(this, 'assets', {
      sources: [pages],
      destinationBucket: this.bucket,
      destinationKeyPrefix: prefix,
      exclude: always,
      prune: true,
      retainOnDelete: false,
      cacheControl: [CacheControl.fromString('public, max-age=31536000, immutable')],
    });
    new BucketDeployment(this, 'entry', {
      sources: [
        pages,
        Source.jsonData('config.json', {
          issuer: config.issuer,
          client_id: config.clientId,
          region: config.region,
        }),
      ],
      destinationBucket: this.bucket,
      destinationKeyPrefix: prefix,
      exclude: ['*'],
      include: always,
      prune: false,
      retainOnDelete: false,
      cacheControl: [CacheControl.noCache()],
      distribution: this.distribution,
      distributionPaths: always.map((name) => `${CONSOLE_PATH}${name}`),
    });
    // The uploads' one handler (a singleton of the stack), as aws-cdk-lib makes it.
    const handlers = Stack.of(this)
      .node.findAll()
      .filter((construct) => construct.node.id.startsWith('Custom::CDKBucketDeployment'));
    NagSuppressions.addResourceSuppressions(
      handlers,
      [
        {
          id: 'AwsSolutions-L1',
          reason:
            "The pages' upload handler is aws-cdk-lib's BucketDeployment, on the runtime that release of aws-cdk-lib pins and tests it with.",
        },
        {
          id: 'AwsSolutions-IAM4',
          reason:
            "aws-cdk-lib's BucketDeployment handler writes its logs with the AWS managed AWSLambdaBasicExecutionRole.",
          appliesTo: [
            'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
          ],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "BucketDeployment's own grants: reading the pages' asset in the CDK bootstrap bucket, writing and pruning the objects of the console's pages bucket only, and invalidating its distribution's paths.",
        },
      ],
      true,
    );
  }
}
