import { App, Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { REGIONS, isRegion, type Region } from '../../shared/domain/regions.js';
import { DEFAULT_AWS_REGIONS } from '../../shared/deployment.js';
import { ApiStack } from '../stacks/api-stack.js';
import { DataStack } from '../stacks/data-stack.js';

/**
 * One independent stack pair per region (data, then API). Which regions, which AWS region
 * hosts each, and the public base address of each come from the CDK context (cdk.json).
 */
export function buildApp(app: App = new App()): App {
  const awsRegions = {
    ...DEFAULT_AWS_REGIONS,
    ...(app.node.tryGetContext('awsRegions') as Partial<Record<Region, string>> | undefined),
  };
  const baseUrls = app.node.tryGetContext('baseUrls') as Record<Region, string> | undefined;
  if (!baseUrls || !REGIONS.every((region) => typeof baseUrls[region] === 'string')) {
    throw new Error('cdk.json context "baseUrls" must give the base address of every region');
  }
  const requested = (app.node.tryGetContext('regions') as string | undefined)?.split(',');
  const regions = requested ? requested.filter(isRegion) : [...REGIONS];
  const account = process.env.CDK_DEFAULT_ACCOUNT;

  for (const region of regions) {
    const env = { region: awsRegions[region], ...(account ? { account } : {}) };
    const data = new DataStack(app, `cdp-${region}-data`, { env, region });
    const api = new ApiStack(app, `cdp-${region}-api`, { env, region, data: data.data, baseUrls });
    api.addStackDependency(data);
  }
  Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  return app;
}

if (process.argv[1]?.endsWith('app.ts')) buildApp().synth();
