import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/bin/app.js';
import { CONSOLE_HSTS_SECONDS, PAGE_ROUTING_CODE } from '../../infra/constructs/console-hosting.js';
import { runInNewContext } from 'node:vm';
import { ApiStack } from '../../infra/stacks/api-stack.js';

/**
 * The console's hosting on AWS (infra/constructs/console-hosting.ts): a private bucket read by
 * CloudFront through an origin access control, HTTPS only, the console's CSP and security
 * headers, the page's paths routed by a function (not by error responses, which would reach
 * the API's answers), the API forwarded on the same origin, and the app client sending people
 * back to the distribution.
 */
let api: Template;
let data: Template;
let apiStack: ApiStack;

beforeAll(() => {
  const { context } = JSON.parse(readFileSync('cdk.json', 'utf8')) as {
    context: Record<string, unknown>;
  };
  const app = new App({
    context: { ...context, regions: 'au', 'aws:cdk:bundling-stacks': [] },
  });
  buildApp(app);
  app.synth();
  const apiChild = app.node.findChild('cdp-au-api');
  const dataChild = app.node.findChild('cdp-au-data');
  if (!(apiChild instanceof ApiStack) || !Stack.isStack(dataChild)) throw new Error('no au stacks');
  apiStack = apiChild;
  api = Template.fromStack(apiStack);
  data = Template.fromStack(dataChild);
});

function only(template: Template, type: string): [string, { Properties: Record<string, unknown> }] {
  const found = Object.entries(
    template.findResources(type) as Record<string, { Properties: Record<string, unknown> }>,
  );
  expect(found).toHaveLength(1);
  return found[0] as [string, { Properties: Record<string, unknown> }];
}

/** The page routing function's answer to a viewer request for `uri`. */
function routed(uri: string): { uri?: string; statusCode?: number; location?: string } {
  // The function's own source, run as CloudFront runs it: `handler(event)`.
  const handler = runInNewContext(`${PAGE_ROUTING_CODE}; handler`) as (event: unknown) => {
    uri?: string;
    statusCode?: number;
    headers?: { location?: { value: string } };
  };
  const answer = handler({ request: { uri, headers: {} } });
  return {
    ...(answer.uri === undefined ? {} : { uri: answer.uri }),
    ...(answer.statusCode === undefined ? {} : { statusCode: answer.statusCode }),
    ...(answer.headers?.location ? { location: answer.headers.location.value } : {}),
  };
}

describe("the console's hosting", () => {
  it('keeps the pages in a private, encrypted, TLS-only bucket with no website hosting', () => {
    const [id, bucket] = only(api, 'AWS::S3::Bucket');
    expect(bucket.Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          { ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } },
        ],
      },
    });
    expect(bucket.Properties).not.toHaveProperty('WebsiteConfiguration');
    const [, policy] = only(api, 'AWS::S3::BucketPolicy');
    const statements = (policy.Properties.PolicyDocument as { Statement: unknown[] }).Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Action: 's3:*',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    );
    // Only CloudFront, only for this distribution, only reads: nobody else is allowed anything.
    const allows = statements.filter(
      (statement) => (statement as { Effect: string }).Effect === 'Allow',
    );
    expect(allows).toEqual([
      expect.objectContaining({
        Action: 's3:GetObject',
        Principal: { Service: 'cloudfront.amazonaws.com' },
        Condition: {
          StringEquals: { 'AWS:SourceArn': expect.anything() as unknown },
        },
      }),
    ]);
    expect(id).toMatch(/^consolehostingpages/);
  });

  it('reads the bucket through an origin access control, not an origin access identity', () => {
    const [oac, control] = only(api, 'AWS::CloudFront::OriginAccessControl');
    expect(control.Properties).toMatchObject({
      OriginAccessControlConfig: {
        OriginAccessControlOriginType: 's3',
        SigningBehavior: 'always',
        SigningProtocol: 'sigv4',
      },
    });
    expect(api.findResources('AWS::CloudFront::CloudFrontOriginAccessIdentity')).toEqual({});
    const [, distribution] = only(api, 'AWS::CloudFront::Distribution');
    const config = distribution.Properties.DistributionConfig as {
      Origins: {
        OriginAccessControlId?: unknown;
        S3OriginConfig?: { OriginAccessIdentity: string };
      }[];
    };
    const s3 = config.Origins.filter((origin) => origin.S3OriginConfig);
    expect(s3).toEqual([
      expect.objectContaining({
        OriginAccessControlId: { 'Fn::GetAtt': [oac, 'Id'] },
        S3OriginConfig: { OriginAccessIdentity: '' },
      }),
    ]);
  });

  it('answers over HTTPS only: pages redirected, API calls refused over HTTP', () => {
    api.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        DefaultCacheBehavior: Match.objectLike({
          ViewerProtocolPolicy: 'redirect-to-https',
          AllowedMethods: ['GET', 'HEAD'],
        }),
        CacheBehaviors: [
          Match.objectLike({
            PathPattern: '/console/v1/*',
            ViewerProtocolPolicy: 'https-only',
            // CloudFront's managed CachingDisabled and AllViewerExceptHostHeader.
            CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
            OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
          }),
        ],
      }),
    });
    const [, distribution] = only(api, 'AWS::CloudFront::Distribution');
    const config = distribution.Properties.DistributionConfig as Record<string, unknown>;
    // No error responses: they would turn the API's own 403 and 404 answers into the page.
    expect(config).not.toHaveProperty('CustomErrorResponses');
    const origins = config.Origins as { CustomOriginConfig?: unknown; OriginPath?: string }[];
    expect(origins.filter((origin) => origin.CustomOriginConfig)).toEqual([
      expect.objectContaining({
        CustomOriginConfig: expect.objectContaining({
          OriginProtocolPolicy: 'https-only',
        }) as unknown,
        OriginPath: '/api',
      }),
    ]);
  });

  it("sends the console's strict CSP, HSTS, nosniff, no referrer and no framing", () => {
    const [, policy] = only(api, 'AWS::CloudFront::ResponseHeadersPolicy');
    const headers = (
      policy.Properties.ResponseHeadersPolicyConfig as {
        SecurityHeadersConfig: Record<string, Record<string, unknown>>;
      }
    ).SecurityHeadersConfig;
    const hosting = apiStack.consoleHosting;
    if (!hosting) throw new Error('the API stack has no console hosting');
    const csp = apiStack.resolve(hosting.contentSecurityPolicy) as {
      'Fn::Join': [string, unknown[]];
    };
    expect(headers.ContentSecurityPolicy).toEqual({ ContentSecurityPolicy: csp, Override: true });
    // The pool's domain prefix is the data stack's: shown here as <domain>.
    const text = csp['Fn::Join'][1]
      .map((part) => (typeof part === 'string' ? part : '<domain>'))
      .join('');
    expect(text).toBe(
      [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: https:",
        "font-src 'self'",
        "connect-src 'self' https://cognito-idp.ap-southeast-2.amazonaws.com https://<domain>.auth.ap-southeast-2.amazoncognito.com",
        "form-action 'self' https://cognito-idp.ap-southeast-2.amazonaws.com https://<domain>.auth.ap-southeast-2.amazoncognito.com",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "object-src 'none'",
      ].join('; '),
    );
    expect(headers).toMatchObject({
      StrictTransportSecurity: {
        AccessControlMaxAgeSec: CONSOLE_HSTS_SECONDS,
        IncludeSubdomains: true,
        Override: true,
      },
      ContentTypeOptions: { Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
      FrameOptions: { FrameOption: 'DENY', Override: true },
    });
    expect(CONSOLE_HSTS_SECONDS).toBeGreaterThanOrEqual(31_536_000);
  });

  it("routes the page's own paths to the page, and nothing else", () => {
    expect(routed('/')).toEqual({ statusCode: 301, location: '/console/' });
    expect(routed('/console')).toEqual({ statusCode: 301, location: '/console/' });
    expect(routed('/console/')).toEqual({ uri: '/console/index.html' });
    expect(routed('/console/people/123')).toEqual({ uri: '/console/index.html' });
    expect(routed('/console/assets/index-abc.js')).toEqual({ uri: '/console/assets/index-abc.js' });
    expect(routed('/console/config.json')).toEqual({ uri: '/console/config.json' });
    expect(routed('/other')).toEqual({ uri: '/other' });
  });

  it('sends people back to the distribution, and writes config.json from the real values', () => {
    const [distributionId] = only(api, 'AWS::CloudFront::Distribution');
    const url = {
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }, '/console/']],
    };
    const [clientId, client] = only(api, 'AWS::Cognito::UserPoolClient');
    expect(client.Properties).toMatchObject({
      CallbackURLs: [url],
      LogoutURLs: [url],
      AllowedOAuthFlows: ['code'],
      GenerateSecret: false,
    });
    expect(data.findResources('AWS::Cognito::UserPoolClient')).toEqual({});
    api.hasOutput('ConsoleUrl', { Value: url });
    // The entry deployment writes config.json with the client's ID and the pool's issuer.
    const deployments = Object.values(
      api.findResources('Custom::CDKBucketDeployment') as Record<
        string,
        { Properties: Record<string, unknown> }
      >,
    );
    expect(deployments).toHaveLength(2);
    const markers = JSON.stringify(deployments.map((d) => d.Properties.SourceMarkers ?? null));
    expect(markers).toContain(clientId);
    // The issuer's pool: the data stack's (the rest of config.json is literal in its asset).
    expect(markers).toContain('cdp-au-data:ExportsOutputRefconsoleuserspool');
  });

  it('has no unsuppressed cdk-nag finding', () => {
    const errors = Annotations.fromStack(apiStack).findError(
      '*',
      Match.stringLikeRegexp('AwsSolutions-.*'),
    );
    expect(errors.map((error) => `${error.id}: ${JSON.stringify(error.entry.data)}`)).toEqual([]);
  });
});
