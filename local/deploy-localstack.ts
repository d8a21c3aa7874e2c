import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { LEFT_OUT_ON_LOCALSTACK, LOCALSTACK_CONTEXT } from '../infra/localstack.js';
import { UPGRADE_KEEP_DEPLOYMENT_CONTEXT } from '../infra/stacks/api-stack.js';
import { functionSpecs } from '../infra/stacks/function-groups.js';
import { routeLayout } from '../infra/stacks/route-layout.js';
import { ROUTES } from '../shared/routes.js';
import { STREAM_WORKERS, WORKERS } from '../shared/workers.js';
import { apiUpgradeOf, firstDeployRows, servedApi, templateOf } from './api-upgrade.js';
import { DEFAULT_AWS_REGIONS } from '../shared/deployment.js';
import type { Region } from '../shared/domain/regions.js';
import { TABLES, tableName } from '../shared/resources.js';
import { httpGet } from './http-get.js';
import {
  checkDeployment,
  formatRows,
  type CheckRow,
  isComplete,
  stackResources,
  stackStatus,
  type DeployClients,
} from './localstack-deploy-check.js';

/**
 * `npm run deploy:localstack`: bootstraps LocalStack and deploys the default region's data and
 * API stacks there with the project's own `aws-cdk` (no cdklocal), waits for CloudFormation,
 * checks what was created service by service (`localstack-deploy-check.ts`), prints a table
 * of it, and exits 1 unless both stacks are CREATE_COMPLETE or UPDATE_COMPLETE and every check
 * passed. The context flag `localstack` leaves out what LocalStack's free CloudFormation
 * cannot create (`infra/localstack.ts`, listed in the output); nothing else is left out.
 *
 * An API stack deployed there before the routes stacks is upgraded the way docs/stacks.md
 * says: a first deploy of the API stack alone with context `upgradeKeepDeployment` (its
 * areas' paths leave it, the stage keeps its deployment; checked), then the usual deploy.
 * `--in-place` skips the first deploy, to see what an update in place does; `--first-deploy-only`
 * stops after it (to look at the API between the two). `--synth-only` synthesizes and stops,
 * without LocalStack; `--synthesized` deploys what it made instead of synthesizing.
 *
 * LocalStack is at `$AWS_ENDPOINT_URL`, else `http://127.0.0.1:$LOCALSTACK_PORT` (4566). A
 * `localhost` address is used as 127.0.0.1: the CDK CLI's S3 client addresses buckets by
 * name under the endpoint's host unless it is an IP address, and `<bucket>.localhost` does
 * not resolve everywhere.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REGION: Region = 'default';
const ACCOUNT = '000000000000';

class DeployError extends Error {}

export function deployEndpoint(env: NodeJS.ProcessEnv): string {
  const raw = env.AWS_ENDPOINT_URL || `http://127.0.0.1:${env.LOCALSTACK_PORT || '4566'}`;
  const url = new URL(raw);
  if (url.hostname === 'localhost') url.hostname = '127.0.0.1';
  return url.toString().replace(/\/$/, '');
}

/** The AWS region the default regional deployment goes to: cdk.json's `awsRegions`. */
function awsRegion(): string {
  const cdk = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as {
    context?: { awsRegions?: Partial<Record<Region, string>> };
  };
  return cdk.context?.awsRegions?.[REGION] ?? DEFAULT_AWS_REGIONS[REGION];
}

/** LocalStack's credentials for every AWS client and the CDK CLI, never the caller's own. */
function deployEnv(endpoint: string, region: string): NodeJS.ProcessEnv {
  const kept = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !name.startsWith('AWS_') && !name.startsWith('CDK_'),
    ),
  );
  return {
    ...kept,
    AWS_ENDPOINT_URL: endpoint,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

function cdk(args: string[], env: NodeJS.ProcessEnv): number {
  console.log(`\n$ cdk ${args.join(' ')}`);
  const result = spawnSync(join(root, 'node_modules', '.bin', 'cdk'), args, {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  return result.status ?? 1;
}

/**
 * A table of the stack's names that CloudFormation does not own (left by `npm run
 * test:localstack` in the same AWS region, say) would make the deploy fail on it: said first.
 */
async function checkNamesFree(clients: DeployClients, stack: string, region: string) {
  // A stack rolled back on LocalStack keeps what it retained (tables are RETAIN) without
  // owning it: a new deploy would fail on those names.
  const status = await stackStatus(clients.cloudFormation, stack);
  const owns = isComplete(status) || status === 'UPDATE_ROLLBACK_COMPLETE';
  const owned = new Set(
    owns ? (await stackResources(clients.cloudFormation, stack)).map((r) => r.physicalId) : [],
  );
  const { TableNames = [] } = await clients.dynamodb.send(new ListTablesCommand({}));
  const taken = TABLES.map((table) => tableName(REGION, table.name)).filter(
    (name) => TableNames.includes(name) && !owned.has(name),
  );
  if (taken.length > 0) {
    throw new DeployError(
      `${taken.join(', ')} already exist in ${region} outside the stack ${stack} (left by ` +
        '`npm run test:localstack`, or by a deploy that failed?): restart LocalStack (its state ' +
        'is in memory), and run the tests with another AWS_REGION than the deploy.',
    );
  }
}

async function waitForStacks(cloudFormation: CloudFormationClient, stacks: string[]) {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    const statuses = await Promise.all(stacks.map((name) => stackStatus(cloudFormation, name)));
    if (!statuses.some((status) => status?.endsWith('_IN_PROGRESS'))) return;
    if (Date.now() > deadline) return;
    await new Promise((done) => setTimeout(done, 2_000));
  }
}

/** The assembly deployed: the default region's stacks, with the LocalStack context. */
const assembly = join(root, '.localstack', 'cdk.out');
const context = ['-c', `regions=${REGION}`, '-c', `${LOCALSTACK_CONTEXT}=true`];

function synthesize(env: NodeJS.ProcessEnv): void {
  mkdirSync(dirname(assembly), { recursive: true });
  if (cdk(['synth', ...context, '-o', assembly, '-q'], env) !== 0) {
    throw new DeployError('cdk synth failed');
  }
}

async function main(): Promise<number> {
  const endpoint = deployEndpoint(process.env);
  // `--synth-only`: the assembly alone (its functions bundled), which `--synthesized` then
  // deploys: CI synthesizes while the LocalStack suite runs, and deploys after it.
  if (process.argv.includes('--synth-only')) {
    synthesize(deployEnv(endpoint, awsRegion()));
    console.log(`\ndeploy:localstack: synthesized into ${assembly}.`);
    return 0;
  }
  const health = await httpGet(`${endpoint}/_localstack/health`, 5_000).catch(() => undefined);
  if (health?.status !== 200) {
    throw new DeployError(
      `nothing answers as LocalStack at ${endpoint}/_localstack/health: start it ` +
        '(`npm run localstack`) or set AWS_ENDPOINT_URL (or LOCALSTACK_PORT).',
    );
  }
  const { version } = JSON.parse(health.body) as { version?: string };
  const region = awsRegion();
  const env = deployEnv(endpoint, region);
  Object.assign(process.env, env);
  const stacks = [
    { name: `cdp-${REGION}-data`, template: `cdp-${REGION}-data.template.json` },
    { name: `cdp-${REGION}-api`, template: `cdp-${REGION}-api.template.json` },
  ];
  console.log(
    `Deploying ${stacks.map((s) => s.name).join(' and ')} to LocalStack ${version ?? '?'} at ` +
      `${endpoint} (${region}, account ${ACCOUNT}).`,
  );
  const clients: DeployClients = {
    cloudFormation: new CloudFormationClient({}),
    dynamodb: new DynamoDBClient({}),
    sqs: new SQSClient({ useQueueUrlAsEndpoint: false }),
    sns: new SNSClient({}),
    s3: new S3Client({ forcePathStyle: true }),
    apiGateway: new APIGatewayClient({}),
    lambda: new LambdaClient({}),
    cloudWatch: new CloudWatchClient({}),
  };
  await checkNamesFree(clients, stacks[0]?.name ?? '', region);

  if (!process.argv.includes('--synthesized')) synthesize(env);
  else if (!existsSync(join(assembly, 'manifest.json'))) {
    throw new DeployError(`--synthesized: no assembly in ${assembly} (--synth-only makes it)`);
  } else console.log(`\nThe assembly synthesized before (--synthesized): ${assembly}`);
  if (cdk(['bootstrap', `aws://${ACCOUNT}/${region}`, '--app', assembly], env) !== 0) {
    throw new DeployError('cdk bootstrap failed');
  }
  const apiStack = stacks[1]?.name ?? '';
  const upgradeRows: CheckRow[] = [];
  const upgrade = process.argv.includes('--in-place')
    ? undefined
    : await apiUpgradeOf(clients.cloudFormation, apiStack, templateOf(assembly, apiStack));
  const before = upgrade
    ? await servedApi(clients.apiGateway, clients.cloudFormation, apiStack)
    : undefined;
  if (upgrade && before) {
    console.log(
      `\n${apiStack} was deployed before the routes stacks: its areas' ${upgrade.leaving.length} ` +
        `path resources and methods leave it first, its stage keeping ${upgrade.keepDeployment} ` +
        `(${before.deploymentId}); then the usual deploy (docs/stacks.md, "Upgrading").`,
    );
    const first = join(root, '.localstack', 'cdk.out-upgrade');
    const keep = ['-c', `${UPGRADE_KEEP_DEPLOYMENT_CONTEXT}=${upgrade.keepDeployment}`];
    if (cdk(['synth', ...context, ...keep, '-o', first, '-q'], env) !== 0) {
      throw new DeployError('cdk synth of the first deploy failed');
    }
    const detached = cdk(
      ['deploy', apiStack, '--exclusively', '--app', first, '--require-approval', 'never'],
      env,
    );
    await waitForStacks(clients.cloudFormation, [apiStack]);
    const after = await servedApi(clients.apiGateway, clients.cloudFormation, apiStack);
    const layout = routeLayout(ROUTES, functionSpecs(ROUTES, WORKERS, STREAM_WORKERS));
    upgradeRows.push(...firstDeployRows(before, after, ['/', ...layout.shared, '/{proxy+}']));
    console.log(`\nAfter the first deploy (cdk deploy exit ${detached}):\n`);
    console.log(formatRows(upgradeRows));
    if (detached !== 0 || upgradeRows.some((r) => !r.ok)) {
      throw new DeployError('the first deploy of the upgrade failed: the usual deploy is not run');
    }
    if (process.argv.includes('--first-deploy-only')) {
      console.log(
        '\ndeploy:localstack: first deploy done (--first-deploy-only); run again for the rest.',
      );
      return 0;
    }
  }
  const deployed = cdk(
    [
      'deploy',
      ...stacks.map((s) => s.name),
      '--app',
      assembly,
      '--require-approval',
      'never',
      '--progress',
      'events',
    ],
    env,
  );
  await waitForStacks(
    clients.cloudFormation,
    stacks.map((s) => s.name),
  );

  const rows = [...upgradeRows, ...(await checkDeployment(clients, REGION, stacks, assembly))];
  if (before) {
    const after = await servedApi(clients.apiGateway, clients.cloudFormation, apiStack);
    rows.push({
      what: 'upgrade',
      name: 'stage moved to a new deployment',
      detail: `${before.deploymentId} → ${after?.deploymentId ?? 'missing'} (REST API ${after?.restApiId ?? '?'}, was ${before.restApiId})`,
      ok: after?.restApiId === before.restApiId && after.deploymentId !== before.deploymentId,
    });
  }
  console.log(
    `\nWhat LocalStack ${version ?? '?'} holds of ${stacks.map((s) => s.name).join(' and ')}:\n`,
  );
  console.log(formatRows(rows));
  console.log('\nLeft out of this deploy (context `localstack`, infra/localstack.ts):');
  for (const [type, reason] of Object.entries(LEFT_OUT_ON_LOCALSTACK)) {
    console.log(`  ${type}: ${reason}`);
  }
  const failed = rows.filter((r) => !r.ok);
  const stacksComplete = await Promise.all(
    stacks.map(async (s) => isComplete(await stackStatus(clients.cloudFormation, s.name))),
  );
  if (deployed !== 0 || failed.length > 0 || !stacksComplete.every(Boolean)) {
    console.error(
      `\ndeploy:localstack: FAILED (cdk deploy exit ${deployed}; ${failed.length} check(s) failed).`,
    );
    return 1;
  }
  console.log(`\ndeploy:localstack: both stacks complete, ${rows.length} checks passed.`);
  return 0;
}

if (process.argv[1]?.endsWith('deploy-localstack.ts')) {
  main()
    .then((code) => process.exit(code))
    .catch((error: unknown) => {
      console.error(
        `deploy:localstack: ${error instanceof DeployError ? error.message : String(error)}`,
      );
      process.exit(1);
    });
}
