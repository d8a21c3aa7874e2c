import { Stack, type Stage, type StackProps } from 'aws-cdk-lib';
import { BuildSpec, ComputeType, LinuxBuildImage } from 'aws-cdk-lib/aws-codebuild';
import { PipelineType } from 'aws-cdk-lib/aws-codepipeline';
import { PolicyStatement, Role } from 'aws-cdk-lib/aws-iam';
import { CodePipeline, CodePipelineSource, ShellStep } from 'aws-cdk-lib/pipelines';
import { NagSuppressions } from 'cdk-nag';
import { z } from 'zod';
import type { Construct } from 'constructs';

/**
 * Where the deploy pipeline lives and what it watches: CDK context `pipeline`, a JSON object
 * (`-c pipeline='{"connectionArn": ..., ...}'`) or an object in cdk.json.
 */
export const PipelineConfig = z.object({
  /** A CodeConnections (formerly CodeStar Connections) connection, authorized in the console. */
  connectionArn: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:(codeconnections|codestar-connections):[a-z0-9-]+:\d{12}:connection\/.+$/,
      'must be the ARN of a CodeConnections connection',
    ),
  /** `owner/repo` as the connection's provider spells it. */
  repository: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'must be "owner/repo"'),
  branch: z.string().min(1, 'must name a branch'),
  /** The account of the pipeline and of every regional deployment. */
  account: z.string().regex(/^\d{12}$/, 'must be a 12-digit AWS account ID'),
  /** The AWS region of the pipeline itself. */
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as us-east-1'),
});
export type PipelineConfig = z.infer<typeof PipelineConfig>;

/**
 * The example of docs/deploy.md, "The deploy pipeline": synthesizes the pipeline offline (no AWS call is
 * made), for the infra tests and `npm run lint:cfn`.
 */
export const EXAMPLE_PIPELINE: PipelineConfig = {
  connectionArn:
    'arn:aws:codeconnections:us-east-1:123456789012:connection/0a1b2c3d-1111-2222-3333-444455556666',
  repository: 'example-org/cdp-api',
  branch: 'main',
  account: '123456789012',
  region: 'us-east-1',
};

const PIPELINE_CONTEXT_SHAPE =
  '{"connectionArn": "arn:aws:codeconnections:...", "repository": "owner/repo", "branch": "main", "account": "123456789012", "region": "us-east-1"}';

const NOT_AN_OBJECT = `context "pipeline" must be a JSON object such as ${PIPELINE_CONTEXT_SHAPE}`;

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new Error(NOT_AN_OBJECT);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads context `pipeline`: absent means no pipeline (deploy the stacks directly). On the
 * command line it is a JSON string; in cdk.json or a test's App context, an object.
 */
export function pipelineConfigFrom(value: unknown): PipelineConfig | undefined {
  if (value === undefined) return undefined;
  const candidate = typeof value === 'string' ? parseJson(value) : value;
  if (!isRecord(candidate)) throw new Error(NOT_AN_OBJECT);
  const parsed = PipelineConfig.safeParse(candidate);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const member = issue.path.join('.');
    return candidate[member] === undefined
      ? `"${member}" is missing`
      : `"${member}" ${issue.message}`;
  });
  throw new Error(
    `context "pipeline": ${problems.join('; ')} (expected ${PIPELINE_CONTEXT_SHAPE})`,
  );
}

/** POSIX single quoting: the value reaches `cdk` exactly, whatever it contains. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

export interface PipelineStackProps extends StackProps {
  config: PipelineConfig;
  /** Deployed in this order, each stage after the previous one has succeeded. */
  stages: Stage[];
  /**
   * Context the pipeline's `cdk synth` is given, so it builds the app this stack was deployed
   * from. Only what cdk.json does not hold: cdk.json comes with the commit being built.
   */
  synthContext: Record<string, unknown>;
}

/**
 * A CDK Pipeline: on every push to the branch it installs, runs `npm test`, synthesizes the
 * app, updates itself, publishes the Lambda bundles and deploys the given stages one after
 * the other. One account: the artifact buckets use S3's AWS-managed KMS key, which
 * CodePipeline can use across regions within the account (a customer-managed key is only
 * needed to deploy into other accounts, `crossAccountKeys`). For every region other than
 * the pipeline's own, CodePipeline adds a support stack (`<this stack>-support-<region>`)
 * with the bucket its artifacts are replicated to.
 */
export class PipelineStack extends Stack {
  readonly pipeline: CodePipeline;

  constructor(scope: Construct, id: string, props: PipelineStackProps) {
    const { config, stages, synthContext, ...stackProps } = props;
    super(scope, id, stackProps);

    const contextArguments = Object.entries(synthContext).map(
      ([key, value]) =>
        `-c ${shellQuote(`${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)}`,
    );
    this.pipeline = new CodePipeline(this, 'pipeline', {
      pipelineName: id,
      pipelineType: PipelineType.V2,
      crossAccountKeys: false,
      // One CodeBuild project publishes every Lambda bundle: a project (and a pipeline
      // action) per asset would pass CodePipeline's 50 actions per stage as routes grow.
      publishAssetsInParallel: false,
      synth: new ShellStep('synth', {
        input: CodePipelineSource.connection(config.repository, config.branch, {
          connectionArn: config.connectionArn,
        }),
        commands: [
          // Not `npm ci`: it refuses a lockfile made where other platforms' optional
          // binaries were unavailable (docs/deploy.md, "The deploy pipeline").
          'npm install --no-audit --no-fund',
          'npm test',
          ['npx cdk synth', ...contextArguments].join(' '),
        ],
      }),
      codeBuildDefaults: {
        buildEnvironment: { buildImage: LinuxBuildImage.STANDARD_7_0 },
        partialBuildSpec: BuildSpec.fromObject({
          phases: { install: { 'runtime-versions': { nodejs: 22 } } },
        }),
      },
      synthCodeBuildDefaults: {
        // `npm test` runs the integration tests against DynamoDB Local, which needs Java 17,
        // and the suite starts several processes: MEDIUM is 4 vCPUs and 7 GB.
        buildEnvironment: { computeType: ComputeType.MEDIUM },
        partialBuildSpec: BuildSpec.fromObject({
          phases: { install: { 'runtime-versions': { java: 'corretto17' } } },
        }),
      },
    });
    for (const stage of stages) this.pipeline.addStage(stage);
    // Built now rather than just before synthesis, so that its resources exist for what
    // follows and for the cdk-nag checks.
    this.pipeline.buildPipeline();
    this.allowConnection(config.connectionArn);
    this.explainFindings();
  }

  /**
   * The source action is granted `codestar-connections:UseConnection`, but IAM matches the
   * service prefix to the resource's ARN, and connections made since July 2024 are
   * `arn:aws:codeconnections:...`: those need `codeconnections:UseConnection`.
   */
  private allowConnection(connectionArn: string): void {
    if (!connectionArn.split(':')[2]?.startsWith('codeconnections')) return;
    const sourceRoles =
      this.pipeline.pipeline.node
        .tryFindChild('Source')
        ?.node.findAll()
        .filter((construct) => construct instanceof Role) ?? [];
    if (sourceRoles.length === 0) throw new Error('The pipeline has no source action role');
    for (const role of sourceRoles) {
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['codeconnections:UseConnection'],
          resources: [connectionArn],
        }),
      );
    }
  }

  /** cdk-nag findings on what CDK Pipelines generates, each with the reason it stands. */
  private explainFindings(): void {
    const codePipeline = this.pipeline.pipeline;
    const artifactBuckets = [
      codePipeline.artifactBucket,
      ...Object.values(codePipeline.crossRegionSupport).map((s) => s.replicationBucket),
    ];
    NagSuppressions.addResourceSuppressions(artifactBuckets, [
      {
        id: 'AwsSolutions-S1',
        reason:
          "Holds only the pipeline's own artifacts (source archive, cloud assembly), written and read by the pipeline's roles; who changed what is in the pipeline's execution history and CloudTrail. Public access is blocked and TLS enforced.",
      },
    ]);
    NagSuppressions.addResourceSuppressions(
      this.pipeline,
      [
        {
          id: 'AwsSolutions-CB4',
          reason:
            'Build artifacts go to the artifact buckets, encrypted with the AWS-managed KMS key; a customer-managed key is needed only to deploy into other accounts, which this pipeline does not.',
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "CDK Pipelines' grants on the pipeline's artifact buckets: every object (artifacts have generated keys), with the S3 action families CodePipeline and CodeBuild use to read and write them.",
          appliesTo: [
            { regex: '/^Action::s3:(GetObject|GetBucket|List|DeleteObject|Abort|PutObject)\\*$/' },
            { regex: '/^Resource::<pipelinePipelineArtifactsBucket[0-9A-F]+\\.Arn>\\/\\*$/' },
            {
              regex: `/^Resource::arn:<AWS::Partition>:s3:::${this.stackName}-support-[a-z0-9-]+\\/\\*$/`,
            },
          ],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "CodeBuild projects' own log streams and test reports, whose names CodeBuild generates per build.",
          appliesTo: [
            {
              regex: `/^Resource::arn:<AWS::Partition>:logs:${this.region}:${this.account}:log-group:\\/aws\\/codebuild\\/.*$/`,
            },
            {
              regex: `/^Resource::arn:<AWS::Partition>:codebuild:${this.region}:${this.account}:report-group\\/.*$/`,
            },
          ],
        },
      ],
      true,
    );
    const selfMutation = this.pipeline.node.tryFindChild('UpdatePipeline');
    if (selfMutation) {
      NagSuppressions.addResourceSuppressions(
        selfMutation,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              "`cdk deploy` of this stack assumes the CDK bootstrap roles of each region it reaches (the condition on the aws-cdk:bootstrap-role tag admits no other role), and reads stacks' state and lists buckets, which change nothing.",
            appliesTo: [`Resource::arn:*:iam::${this.account}:role/*`, 'Resource::*'],
          },
        ],
        true,
      );
    }
    const assets = this.pipeline.node.tryFindChild('Assets');
    if (assets) {
      NagSuppressions.addResourceSuppressions(
        assets,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              'CDK Pipelines lets the asset publishing role start, watch and stop its CodeBuild builds; it assumes only the named file-publishing roles of the CDK bootstrap.',
            appliesTo: ['Resource::*'],
          },
        ],
        true,
      );
    }
  }
}
