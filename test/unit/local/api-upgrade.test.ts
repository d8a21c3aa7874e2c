import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { apiUpgradeOf, firstDeployRows } from '../../../local/api-upgrade.js';

/** The upgrade `npm run deploy:localstack` makes of an API stack from before the routes stacks. */

type Summary = { ResourceType: string; LogicalResourceId: string; PhysicalResourceId: string };

/** A CloudFormation client that knows one stack (or none). */
function cloudFormation(resources: Summary[] | undefined): CloudFormationClient {
  return {
    send: () =>
      resources
        ? Promise.resolve({
            StackResourceSummaries: resources.map((r) => ({
              ...r,
              ResourceStatus: 'CREATE_COMPLETE',
            })),
          })
        : Promise.reject(new Error('Stack with id cdp-default-api does not exist')),
  } as unknown as CloudFormationClient;
}

function templateFile(resources: Record<string, string>): string {
  const file = join(mkdtempSync(join(tmpdir(), 'cdp-upgrade-')), 'api.template.json');
  const entries = Object.entries(resources).map(([id, Type]): [string, { Type: string }] => [
    id,
    { Type },
  ]);
  writeFileSync(file, JSON.stringify({ Resources: Object.fromEntries(entries) }));
  return file;
}

const resource = (type: string, id: string): Summary => ({
  ResourceType: `AWS::${type}`,
  LogicalResourceId: id,
  PhysicalResourceId: `${id}-physical`,
});

/** An API stack as deployed before the routes stacks: every path in it. */
const BEFORE = [
  resource('ApiGateway::RestApi', 'apiC8550315'),
  resource('ApiGateway::Resource', 'apiv1A'),
  resource('ApiGateway::Method', 'apiv1ANYB'),
  resource('ApiGateway::Resource', 'apiv1personC'),
  resource('ApiGateway::Method', 'apiv1personmergePOSTD'),
  resource('ApiGateway::Deployment', 'apiDeployment149F1294aaaa'),
  resource('ApiGateway::Stage', 'apiDeploymentStageapi659E6E8B'),
  resource('CloudFormation::Stack', 'functionspeopleNestedStackResource'),
];

/** The template of this branch: /v1 stays, the rest in routes stacks, a new deployment. */
const AFTER = templateFile({
  apiC8550315: 'AWS::ApiGateway::RestApi',
  apiv1A: 'AWS::ApiGateway::Resource',
  apiv1ANYB: 'AWS::ApiGateway::Method',
  apiDeployment149F1294bbbb: 'AWS::ApiGateway::Deployment',
  apiDeploymentStageapi659E6E8B: 'AWS::ApiGateway::Stage',
  functionspeopleNestedStackResource: 'AWS::CloudFormation::Stack',
  routespeopleNestedStackResource: 'AWS::CloudFormation::Stack',
});

describe('the upgrade of an API stack from before the routes stacks', () => {
  it('is needed when paths leave the API stack: the deployment the stage serves is kept', async () => {
    const upgrade = await apiUpgradeOf(cloudFormation(BEFORE), 'cdp-default-api', AFTER);
    expect(upgrade?.keepDeployment).toBe('apiDeployment149F1294aaaa');
    expect(upgrade?.leaving.map((r) => r.logicalId)).toEqual([
      'apiv1personC',
      'apiv1personmergePOSTD',
    ]);
  });

  it('is not needed for a stack not deployed, one already upgraded, or a template without routes stacks', async () => {
    expect(await apiUpgradeOf(cloudFormation(undefined), 'cdp-default-api', AFTER)).toBeUndefined();
    const upgraded = BEFORE.filter((r) => !r.LogicalResourceId.startsWith('apiv1person'));
    expect(await apiUpgradeOf(cloudFormation(upgraded), 'cdp-default-api', AFTER)).toBeUndefined();
    const older = templateFile({ apiC8550315: 'AWS::ApiGateway::RestApi' });
    expect(await apiUpgradeOf(cloudFormation(BEFORE), 'cdp-default-api', older)).toBeUndefined();
  });

  it('refuses a stack that still holds its functions: the kept deployment would invoke deleted ones', async () => {
    const oldest = [...BEFORE, resource('Lambda::Function', 'postv1personmergefunction')];
    await expect(apiUpgradeOf(cloudFormation(oldest), 'cdp-default-api', AFTER)).rejects.toThrow(
      /holds its functions itself .* deploy commit d2d3013 over it first/,
    );
  });

  it('checks after the first deploy that the stage kept its deployment and the paths left', () => {
    const before = { restApiId: 'a1', deploymentId: 'd1', paths: ['/', '/v1', '/v1/person'] };
    const kept = ['/', '/v1', '/{proxy+}'];
    const good = firstDeployRows(before, { ...before, paths: ['/', '/v1', '/{proxy+}'] }, kept);
    expect(good.map((r) => r.ok)).toEqual([true, true]);
    const moved = firstDeployRows(before, { ...before, deploymentId: 'd2', paths: kept }, kept);
    expect(moved.map((r) => [r.name, r.ok])).toEqual([
      ['stage deployment kept', false],
      ['paths left the API stack', true],
    ]);
    const stayed = firstDeployRows(before, before, kept);
    expect(stayed.map((r) => r.ok)).toEqual([true, false]);
    expect(firstDeployRows(before, undefined, kept).every((r) => !r.ok)).toBe(true);
  });
});
