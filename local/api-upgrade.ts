import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  GetDeploymentCommand,
  GetResourcesCommand,
  GetStageCommand,
  type APIGatewayClient,
} from '@aws-sdk/client-api-gateway';
import {
  ListStackResourcesCommand,
  type CloudFormationClient,
} from '@aws-sdk/client-cloudformation';
import { STAGE_NAME } from '../shared/edge.js';
import { stackResources, type CheckRow } from './localstack-deploy-check.js';

/**
 * The upgrade of an API stack deployed before the routes stacks (docs/stacks.md,
 * "Upgrading"): its areas' paths move to nested stacks, and API Gateway refuses a second
 * resource on a path, which CloudFormation would create before it deletes the first. So the
 * paths leave first, in a deploy that keeps the deployment the stage serves (context
 * `upgradeKeepDeployment`), and come back in the routes stacks in the usual deploy after it.
 */
export interface ApiUpgrade {
  /** The logical ID of the deployment the stage serves, to keep through the first deploy. */
  keepDeployment: string;
  /** The paths' resources and methods of the deployed API stack that leave it. */
  leaving: { type: string; logicalId: string }[];
}

const PATH_TYPES = new Set(['AWS::ApiGateway::Resource', 'AWS::ApiGateway::Method']);

/** The resources of a stack itself (not of its nested stacks): type and logical ID. */
async function topLevelResources(
  cloudFormation: CloudFormationClient,
  stackName: string,
): Promise<{ type: string; logicalId: string }[]> {
  const found: { type: string; logicalId: string }[] = [];
  let NextToken: string | undefined;
  do {
    const page = await cloudFormation.send(
      new ListStackResourcesCommand({ StackName: stackName, NextToken }),
    );
    for (const summary of page.StackResourceSummaries ?? []) {
      found.push({ type: summary.ResourceType ?? '', logicalId: summary.LogicalResourceId ?? '' });
    }
    NextToken = page.NextToken;
  } while (NextToken);
  return found;
}

/**
 * Whether deploying this template over the deployed stack moves paths out of it, and so
 * needs the first deploy: the stack holds path resources or methods the new template does
 * not, while the new template holds routes stacks. Nothing to do for a stack not deployed.
 */
export async function apiUpgradeOf(
  cloudFormation: CloudFormationClient,
  stackName: string,
  templateFile: string,
): Promise<ApiUpgrade | undefined> {
  const template = JSON.parse(readFileSync(templateFile, 'utf8')) as {
    Resources: Record<string, { Type: string }>;
  };
  const routeStacks = Object.entries(template.Resources).filter(
    ([id, resource]) => resource.Type === 'AWS::CloudFormation::Stack' && id.startsWith('routes'),
  );
  if (routeStacks.length === 0) return undefined;
  const deployed = await topLevelResources(cloudFormation, stackName).catch(() => undefined);
  if (!deployed) return undefined;
  // Older still: the functions in the API stack itself. Their methods would go with the
  // paths, and the kept deployment would invoke functions deleted by the same deploy.
  if (deployed.some((resource) => resource.type === 'AWS::Lambda::Function')) {
    throw new Error(
      `${stackName} holds its functions itself (deployed before the functions stacks): deploy ` +
        'commit d2d3013 over it first (docs/stacks.md, "Upgrading")',
    );
  }
  const leaving = deployed.filter(
    (resource) => PATH_TYPES.has(resource.type) && !(resource.logicalId in template.Resources),
  );
  const deployment = deployed.find((resource) => resource.type === 'AWS::ApiGateway::Deployment');
  if (leaving.length === 0 || !deployment) return undefined;
  return { keepDeployment: deployment.logicalId, leaving };
}

export interface ServedApi {
  restApiId: string;
  /** The deployment the stage serves (empty without a stage). */
  deploymentId: string;
  /** The paths of the API's resources now (not what the stage serves). */
  paths: string[];
  /** `METHOD /path` of the stage's deployment, if the service describes it. */
  served?: string[];
}

/** What the REST API of a deployed API stack holds, and what its stage serves. */
export async function servedApi(
  apiGateway: APIGatewayClient,
  cloudFormation: CloudFormationClient,
  stackName: string,
): Promise<ServedApi | undefined> {
  const resources = await stackResources(cloudFormation, stackName);
  const restApiId = resources.find((r) => r.type === 'AWS::ApiGateway::RestApi')?.physicalId;
  if (!restApiId) return undefined;
  const stage = await apiGateway
    .send(new GetStageCommand({ restApiId, stageName: STAGE_NAME }))
    .catch(() => undefined);
  const paths: string[] = [];
  let position: string | undefined;
  do {
    const page = await apiGateway.send(
      new GetResourcesCommand({ restApiId, limit: 500, position }),
    );
    paths.push(...(page.items ?? []).map((item) => item.path ?? '?'));
    position = page.position;
  } while (position);
  const deploymentId = stage?.deploymentId ?? '';
  // The deployment's own summary of its methods (`embed=apisummary`), where the service has it.
  const summary = await apiGateway
    .send(new GetDeploymentCommand({ restApiId, deploymentId, embed: ['apisummary'] }))
    .then((deployment) => deployment.apiSummary)
    .catch(() => undefined);
  const served = summary
    ? Object.entries(summary).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method} ${path}`),
      )
    : undefined;
  return { restApiId, deploymentId, paths: paths.sort(), ...(served ? { served } : {}) };
}

/**
 * The checks after the first deploy: the stage still serves the deployment it served, and
 * the REST API now holds only what the API stack keeps (its areas' paths are gone).
 */
export function firstDeployRows(
  before: ServedApi,
  after: ServedApi | undefined,
  kept: readonly string[],
): CheckRow[] {
  const rows: CheckRow[] = [
    {
      what: 'upgrade',
      name: 'stage deployment kept',
      detail: `${before.deploymentId} → ${after?.deploymentId ?? 'missing'}`,
      ok: after?.deploymentId === before.deploymentId,
    },
    {
      what: 'upgrade',
      name: 'paths left the API stack',
      detail: `${before.paths.length} resources → ${after?.paths.length ?? 0}: ${after?.paths.join(' ') ?? ''}`,
      ok: after !== undefined && after.paths.join(' ') === [...kept].sort().join(' '),
    },
  ];
  if (after?.served) {
    rows.push({
      what: 'upgrade',
      name: 'stage still serves',
      detail: `${after.served.length} methods in its deployment (${before.served?.length ?? '?'} before)`,
      ok: after.served.length === before.served?.length,
    });
  }
  return rows;
}

/** The template of a stack in a cloud assembly. */
export function templateOf(assembly: string, stackName: string): string {
  return join(assembly, `${stackName}.template.json`);
}
