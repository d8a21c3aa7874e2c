import {
  DefaultStackSynthesizer,
  Stage,
  type Environment,
  type IStackSynthesizer,
} from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import { ApiStack } from '../stacks/api-stack.js';
import { DataStack } from '../stacks/data-stack.js';

/** What every regional deployment needs, whichever way it is deployed. */
export interface RegionStacksOptions {
  /** The AWS account (if known) and region that host this regional deployment. */
  env: Environment;
  /** The public base address of every region, so a key of another region can be redirected. */
  baseUrls: Record<Region, string>;
  /** How the stacks name their bootstrap roles and assets (CDK's default when absent). */
  synthesizer?: () => IStackSynthesizer;
}

export interface RegionStacks {
  data: DataStack;
  api: ApiStack;
}

/**
 * The data and API stacks of one region. The only place they are created, so a direct
 * deploy (`cdk deploy cdp-au-api`) and the pipeline's stage build the same stacks. The
 * CloudFormation names are set explicitly: inside a stage they would otherwise take the
 * stage's prefix, and the two ways of deploying must manage the same stacks.
 */
export function addRegionStacks(
  scope: Construct,
  region: Region,
  options: RegionStacksOptions,
): RegionStacks {
  const { env, baseUrls } = options;
  const dataName = `cdp-${region}-data`;
  const apiName = `cdp-${region}-api`;
  const synthesizer = () => (options.synthesizer ? { synthesizer: options.synthesizer() } : {});
  const data = new DataStack(scope, dataName, {
    stackName: dataName,
    env,
    region,
    ...synthesizer(),
  });
  const api = new ApiStack(scope, apiName, {
    stackName: apiName,
    env,
    ...synthesizer(),
    region,
    data: data.data,
    baseUrls,
  });
  api.addStackDependency(data);
  return { data, api };
}

/**
 * The bootstrap's CloudFormation execution role, as CDK names it, in the `aws` partition (the
 * only one `cdk.json` targets). The pipeline's change-set actions carry this ARN in their
 * configuration: with CDK's `${AWS::Partition}` it becomes an `Fn::Join` there, which
 * CloudFormation's linter refuses in a pipeline action (E3703); a literal partition makes it
 * a plain string. The deploy and publishing roles are left to CDK.
 */
const EXECUTION_ROLE =
  'arn:aws:iam::${AWS::AccountId}:role/cdk-${Qualifier}-cfn-exec-role-${AWS::AccountId}-${AWS::Region}';

/** A stage deploys to a known account, so its environment names both. */
export interface RegionStageProps extends RegionStacksOptions {
  region: Region;
  env: { account: string; region: string };
}

/**
 * One region's stacks as the unit the deploy pipeline deploys (`cdp-<region>`). Its props
 * are the stacks' options, passed through whole, so a new option reaches both ways of
 * deploying.
 */
export class RegionStage extends Stage {
  readonly stacks: RegionStacks;

  constructor(scope: Construct, id: string, props: RegionStageProps) {
    super(scope, id, { env: props.env });
    this.stacks = addRegionStacks(this, props.region, {
      synthesizer: () =>
        new DefaultStackSynthesizer({ cloudFormationExecutionRole: EXECUTION_ROLE }),
      ...props,
    });
  }
}
