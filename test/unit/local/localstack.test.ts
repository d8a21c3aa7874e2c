import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import {
  LOCALSTACK_VERSION,
  localstackEnv,
  localstackPaths,
  localstackPort,
  pythonCandidates,
} from '../../../local/localstack.js';
import { deployEndpoint } from '../../../local/deploy-localstack.js';
import {
  apiMethods,
  compareWithTemplates,
  folderRow,
  stackResources,
} from '../../../local/localstack-deploy-check.js';
import { offersSesV2 } from '../../../local/settings.js';
import { ROUTES, routeKey } from '../../../shared/routes.js';

/** `npm run localstack`, `npm run deploy:localstack` and the choice of SES v2 endpoint. */
describe('npm run localstack', () => {
  const paths = localstackPaths('/project');

  it('keeps LocalStack on the loopback address, offline, with its files under .localstack', () => {
    const env = localstackEnv(
      { PATH: '/usr/bin', AWS_ENDPOINT_URL: 'http://elsewhere:1', AWS_ENDPOINT_URL_SQS: 'x' },
      paths,
      6566,
    );
    expect(env).toMatchObject({
      GATEWAY_LISTEN: '127.0.0.1:6566',
      FILESYSTEM_ROOT: '/project/.localstack/filesystem',
      OVERRIDE_IN_DOCKER: '0',
      DNS_ADDRESS: '0',
      DISABLE_EVENTS: '1',
      SKIP_SSL_CERT_DOWNLOAD: '1',
      PATH: '/project/.localstack/venv/bin:/usr/bin',
      JDK_JAVA_OPTIONS: '-XX:TieredStopAtLevel=1',
      // Its streams in memory only: kinesis-mock's state file took most of a core.
      KINESIS_PERSISTENCE: '0',
    });
    expect(env.AWS_ENDPOINT_URL).toBeUndefined();
    expect(env.AWS_ENDPOINT_URL_SQS).toBeUndefined();
    expect(paths.libraries).toBe('/project/.localstack/filesystem/var/lib/localstack/lib');
    expect(LOCALSTACK_VERSION).toBe('4.14.0');
  });

  it('listens on $LOCALSTACK_PORT, 4566 by default, and names a bad one', () => {
    expect(localstackPort({})).toBe(4566);
    expect(localstackPort({ LOCALSTACK_PORT: '6566' })).toBe(6566);
    expect(() => localstackPort({ LOCALSTACK_PORT: '65536' })).toThrow(
      'LOCALSTACK_PORT=65536 is not a port number',
    );
  });

  it('builds its environment with $LOCALSTACK_PYTHON, else the newest pyenv 3.13', () => {
    expect(pythonCandidates({ LOCALSTACK_PYTHON: '/opt/py/bin/python' }, ['3.13.0'])).toEqual([
      '/opt/py/bin/python',
    ]);
    expect(
      pythonCandidates({ PYENV_ROOT: '/p' }, ['3.12.1', '3.13.0', '3.13.11', '3.11.7']),
    ).toEqual(['/p/versions/3.13.11/bin/python', '/p/versions/3.13.0/bin/python', 'python3.13']);
  });

  it("writes a Java agent that the JVM loads in place of LocalStack's download", () => {
    const jar = join(mkdtempSync(join(tmpdir(), 'agent-')), 'agent.jar');
    const written = spawnSync('python3', ['local/localstack/noop_agent.py', jar], {
      encoding: 'utf8',
    });
    expect(written.status).toBe(0);
    const java = spawnSync('java', [`-javaagent:${jar}`, '-version'], { encoding: 'utf8' });
    expect({ status: java.status, stderr: java.stderr }).toMatchObject({
      status: 0,
      stderr: expect.stringContaining('version') as unknown,
    });
  });
});

describe('SES v2 of an external endpoint', () => {
  const health = (services: Record<string, string>) => ({
    status: 200,
    body: JSON.stringify({ services, version: '4.14.0' }),
  });

  it("goes to the project's stand-in when LocalStack lists no sesv2", () => {
    expect(offersSesV2(health({ ses: 'available', sqs: 'running' }))).toBe(false);
  });

  it('stays at the endpoint when it lists sesv2, or is not LocalStack', () => {
    expect(offersSesV2(health({ ses: 'available', sesv2: 'available' }))).toBe(true);
    expect(offersSesV2({ status: 404, body: 'Not Found' })).toBe(true);
    expect(offersSesV2(undefined)).toBe(true);
  });
});

describe('npm run deploy:localstack', () => {
  it('talks to LocalStack by IP address, so that the CDK CLI addresses buckets by path', () => {
    expect(deployEndpoint({})).toBe('http://127.0.0.1:4566');
    expect(deployEndpoint({ LOCALSTACK_PORT: '6566' })).toBe('http://127.0.0.1:6566');
    expect(deployEndpoint({ AWS_ENDPOINT_URL: 'http://localhost:4566/' })).toBe(
      'http://127.0.0.1:4566',
    );
  });

  it('walks every nested stack, whatever the logical IDs', async () => {
    const pages: Record<
      string,
      { ResourceType: string; LogicalResourceId: string; PhysicalResourceId: string }[]
    > = {
      root: [
        { ResourceType: 'AWS::SQS::Queue', LogicalResourceId: 'q', PhysicalResourceId: 'url' },
        {
          ResourceType: 'AWS::CloudFormation::Stack',
          LogicalResourceId: 'fns',
          PhysicalResourceId: 'nested-1',
        },
      ],
      'nested-1': [
        {
          ResourceType: 'AWS::CloudFormation::Stack',
          LogicalResourceId: 'alarms',
          PhysicalResourceId: 'nested-2',
        },
        {
          ResourceType: 'AWS::Lambda::Function',
          LogicalResourceId: 'f',
          PhysicalResourceId: 'fn-1',
        },
      ],
      'nested-2': [
        {
          ResourceType: 'AWS::CloudWatch::Alarm',
          LogicalResourceId: 'a',
          PhysicalResourceId: 'alarm-1',
        },
      ],
    };
    const client = {
      send: (command: { input: { StackName: string } }) =>
        Promise.resolve({
          StackResourceSummaries: (pages[command.input.StackName] ?? []).map((r) => ({
            ...r,
            ResourceStatus: 'CREATE_COMPLETE',
          })),
        }),
    } as unknown as CloudFormationClient;
    const found = await stackResources(client, 'root');
    expect(found.map((r) => [r.stack, r.type, r.physicalId])).toEqual([
      ['root', 'AWS::SQS::Queue', 'url'],
      ['root', 'AWS::CloudFormation::Stack', 'nested-1'],
      ['root/fns', 'AWS::CloudFormation::Stack', 'nested-2'],
      ['root/fns/alarms', 'AWS::CloudWatch::Alarm', 'alarm-1'],
      ['root/fns', 'AWS::Lambda::Function', 'fn-1'],
    ]);
  });

  it('fails a declared type deployed fewer times, a failed resource, and a left-out type', () => {
    const deployed = [
      {
        stack: 's',
        type: 'AWS::SQS::Queue',
        logicalId: 'a',
        physicalId: 'a',
        status: 'CREATE_COMPLETE',
      },
      {
        stack: 's',
        type: 'AWS::SNS::Topic',
        logicalId: 't',
        physicalId: 't',
        status: 'CREATE_FAILED',
      },
    ];
    const rows = compareWithTemplates(
      [
        { Type: 'AWS::SQS::Queue' },
        { Type: 'AWS::SQS::Queue' },
        { Type: 'AWS::SNS::Topic' },
        { Type: 'AWS::WAFv2::WebACL' },
      ],
      deployed,
    );
    expect(rows.map((r) => [r.name, r.detail, r.ok])).toEqual([
      ['AWS::SNS::Topic', '1 of 1 deployed', true],
      ['AWS::SQS::Queue', '1 of 2 deployed', false],
      ['AWS::WAFv2::WebACL', '0 of 1 deployed', false],
      ['s/t', 'AWS::SNS::Topic CREATE_FAILED', false],
    ]);
  });

  it("reads each route's method and function from the REST API", () => {
    const methods = apiMethods([
      {
        path: '/v1/person/merge',
        resourceMethods: {
          POST: {
            methodIntegration: {
              uri: 'arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:aws:lambda:us-east-1:000000000000:function:merge-fn/invocations',
            },
          },
          ANY: {},
        },
      },
    ]);
    expect([...methods]).toEqual([
      ['POST /v1/person/merge', 'merge-fn'],
      ['ANY /v1/person/merge', undefined],
    ]);
  });

  it('wants one deployed function per folder of the routes table', () => {
    const byFolder = new Map<string, string | undefined>(
      ROUTES.map((route) => [routeKey(route), `fn-${route.function}`]),
    );
    const folders = new Set(ROUTES.map((route) => route.function)).size;
    expect(folderRow(byFolder)).toMatchObject({
      name: `${folders} folders, ${folders} functions`,
      detail: 'one function per folder',
      ok: true,
    });

    // The two delete routes share organizations-delete: deployed apart, they are split.
    const split = new Map(byFolder).set('DELETE /v1/accounts/delete', 'another-fn');
    expect(folderRow(split)).toMatchObject({
      detail: 'split over functions: organizations-delete',
      ok: false,
    });

    // Two folders behind one function, or a route without one, fail too.
    const merged = new Map(byFolder).set('POST /v1/person/merge', 'fn-organizations-delete');
    expect(folderRow(merged).ok).toBe(false);
    const missing = new Map(byFolder).set('POST /v1/person/merge', undefined);
    expect(folderRow(missing).ok).toBe(false);
  });
});
