import { App, Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { REGIONS, type Region } from '../../shared/domain/regions.js';
import { DEFAULT_AWS_REGIONS } from '../../shared/deployment.js';
import { PipelineStack, pipelineConfigFrom } from '../stacks/pipeline-stack.js';
import { RegionStage, addRegionStacks } from '../stages/region-stage.js';
import { STACK_RESOURCE_BUDGET } from '../stack-budget.js';

/** CDK refuses to synthesize a stack with more resources than this context says. */
const STACK_RESOURCE_LIMIT_CONTEXT = '@aws-cdk/core:stackResourceLimit';

/** The name of the pipeline stack, the pipeline, and the prefix of its support stacks. */
export const PIPELINE_STACK = 'cdp-pipeline';

/**
 * One independent stack pair per region (data, then API). Which regions, which AWS region
 * hosts each, and the public base address of each come from the CDK context (cdk.json).
 *
 * Without context `pipeline` the pairs are top-level stacks (`cdp-<region>-data|api`) to
 * deploy with `cdk deploy`. With it, the same pairs are stages (`cdp-<region>`, in the order
 * of REGIONS) of a deploy pipeline (`cdp-pipeline`), which deploys them on every push; the
 * CloudFormation stack names are the same either way.
 */
export function buildApp(app: App = new App()): App {
  // Our budget, not CloudFormation's 500: a stack must keep room for the routes to come.
  if (app.node.tryGetContext(STACK_RESOURCE_LIMIT_CONTEXT) === undefined) {
    app.node.setContext(STACK_RESOURCE_LIMIT_CONTEXT, STACK_RESOURCE_BUDGET);
  }
  const awsRegions = {
    ...DEFAULT_AWS_REGIONS,
    ...(app.node.tryGetContext('awsRegions') as Partial<Record<Region, string>> | undefined),
  };
  const baseUrls = app.node.tryGetContext('baseUrls') as Record<Region, string> | undefined;
  if (!baseUrls || !REGIONS.every((region) => typeof baseUrls[region] === 'string')) {
    throw new Error('cdk.json context "baseUrls" must give the base address of every region');
  }
  const requestedContext = app.node.tryGetContext('regions') as string | undefined;
  const requested = requestedContext?.split(',');
  // Kept in REGIONS order whatever the order asked for: the pipeline deploys in this order.
  const regions = requested ? REGIONS.filter((region) => requested.includes(region)) : REGIONS;
  const pipeline = pipelineConfigFrom(app.node.tryGetContext('pipeline'));
  const checks = () => new AwsSolutionsChecks({ verbose: true });

  if (pipeline) {
    const stages = regions.map((region) => {
      const stage = new RegionStage(app, `cdp-${region}`, {
        region,
        env: { account: pipeline.account, region: awsRegions[region] },
        baseUrls,
      });
      // Aspects stop at a stage's boundary, and the pipeline synthesizes each stage as it
      // is added: the checks go on the stage itself, before that.
      Aspects.of(stage).add(checks());
      return stage;
    });
    new PipelineStack(app, PIPELINE_STACK, {
      env: { account: pipeline.account, region: pipeline.region },
      config: pipeline,
      stages,
      synthContext: {
        pipeline,
        ...(requestedContext === undefined ? {} : { regions: requestedContext }),
      },
    });
  } else {
    const account = process.env.CDK_DEFAULT_ACCOUNT;
    for (const region of regions) {
      const env = { region: awsRegions[region], ...(account ? { account } : {}) };
      addRegionStacks(app, region, { env, baseUrls });
    }
  }
  Aspects.of(app).add(checks());
  return app;
}

if (process.argv[1]?.endsWith('app.ts')) buildApp().synth();
