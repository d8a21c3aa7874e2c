import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack, Stage } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { PIPELINE_STACK, buildApp } from '../../infra/bin/app.js';
import { RegionStage } from '../../infra/stages/region-stage.js';
import { ApiStack } from '../../infra/stacks/api-stack.js';
import {
  EXAMPLE_PIPELINE,
  pipelineConfigFrom,
  type PipelineConfig,
} from '../../infra/stacks/pipeline-stack.js';
import { REGIONS, type Region } from '../../shared/domain/regions.js';

const CONFIG: PipelineConfig = EXAMPLE_PIPELINE;

const { context: CDK_JSON_CONTEXT } = JSON.parse(readFileSync('cdk.json', 'utf8')) as {
  context: Record<string, unknown> & { awsRegions: Record<Region, string> };
};

/** The app as `cdk synth -c pipeline=...` builds it (cdk.json context), without bundling. */
function synthesize(extraContext: Record<string, unknown> = {}): App {
  const app = new App({
    context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [], ...extraContext },
  });
  buildApp(app);
  app.synth();
  return app;
}

function pipelineStackOf(app: App): Stack {
  const child = app.node.findChild(PIPELINE_STACK);
  if (!Stack.isStack(child)) throw new Error(`${PIPELINE_STACK} is not a stack`);
  return child;
}

function stageOf(app: App, region: Region): RegionStage {
  const child = app.node.findChild(`cdp-${region}`);
  if (!(child instanceof RegionStage)) throw new Error(`cdp-${region} is not a region stage`);
  return child;
}

interface PipelineAction {
  Name: string;
  RunOrder: number;
  Region?: string;
  ActionTypeId: { Provider: string };
  Configuration: Record<string, unknown>;
}
interface PipelineStage {
  Name: string;
  Actions: PipelineAction[];
}

function pipelineStagesOf(template: Template): PipelineStage[] {
  const pipelines = Object.values(template.findResources('AWS::CodePipeline::Pipeline'));
  expect(pipelines).toHaveLength(1);
  return (pipelines[0] as { Properties: { Stages: PipelineStage[] } }).Properties.Stages;
}

interface Resources {
  Resources: Record<string, { Type: string }>;
}

interface BuildSpec {
  phases: {
    install?: { 'runtime-versions'?: Record<string, unknown>; commands?: string[] };
    build: { commands: string[] };
  };
}

/** The CodeBuild project of the synth step: the one whose build runs `cdk synth`. */
function synthProjectOf(template: Template): { spec: BuildSpec; environment: unknown } {
  const projects = Object.values(template.findResources('AWS::CodeBuild::Project')).map(
    (project) =>
      (project as { Properties: { Source: { BuildSpec: string }; Environment: unknown } })
        .Properties,
  );
  const synth = projects.filter((project) => project.Source.BuildSpec.includes('cdk synth'));
  expect(synth).toHaveLength(1);
  const [project] = synth;
  if (!project) throw new Error('no synth project');
  return {
    spec: JSON.parse(project.Source.BuildSpec) as BuildSpec,
    environment: project.Environment,
  };
}

/** What `sh` hands to the program for the arguments of a command line. */
function shellWords(commandLine: string): string[] {
  const output = execFileSync('sh', ['-c', `printf '%s\\0' ${commandLine}`], { encoding: 'utf8' });
  return output.split('\0').slice(0, -1);
}

function nagErrorsOf(stack: Stack): string[] {
  return Annotations.fromStack(stack)
    .findError('*', Match.stringLikeRegexp('AwsSolutions-.*'))
    .map((e) => `${e.id}: ${JSON.stringify(e.entry.data)}`);
}

describe('the deploy pipeline (context "pipeline")', () => {
  let app: App;
  let pipeline: Template;
  let stages: PipelineStage[];
  beforeAll(() => {
    app = synthesize({ pipeline: CONFIG });
    pipeline = Template.fromStack(pipelineStackOf(app));
    stages = pipelineStagesOf(pipeline);
  });

  it('lives in the given account and region, beside the regions it deploys', () => {
    const stack = pipelineStackOf(app);
    expect([stack.stackName, stack.account, stack.region]).toEqual([
      'cdp-pipeline',
      '123456789012',
      'us-east-1',
    ]);
    // No region is deployed outside its stage: a direct stack would be a second owner.
    const topLevel = app.node.children.filter((child) => Stack.isStack(child));
    expect(topLevel.map((stack) => stack.stackName).sort()).toEqual([
      'cdp-pipeline',
      'cdp-pipeline-support-ap-southeast-2',
      'cdp-pipeline-support-eu-central-1',
    ]);
  });

  it('watches the branch of the repository through the CodeConnections connection', () => {
    const source = stages[0];
    expect(source?.Name).toBe('Source');
    expect(source?.Actions).toHaveLength(1);
    expect(source?.Actions[0]?.ActionTypeId.Provider).toBe('CodeStarSourceConnection');
    expect(source?.Actions[0]?.Configuration).toMatchObject({
      ConnectionArn: CONFIG.connectionArn,
      FullRepositoryId: 'example-org/cdp-api',
      BranchName: 'main',
    });
    // A codeconnections ARN needs the codeconnections action (IAM matches the prefix).
    pipeline.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'codeconnections:UseConnection',
            Effect: 'Allow',
            Resource: CONFIG.connectionArn,
          }),
        ]),
      },
    });
  });

  it('installs, runs the test suite, then synthesizes with the same pipeline context', () => {
    const { spec, environment } = synthProjectOf(pipeline);
    expect(environment).toMatchObject({ Image: 'aws/codebuild/standard:7.0' });
    expect(spec.phases.install?.['runtime-versions']).toEqual({ nodejs: 22, java: 'corretto17' });
    const commands = spec.phases.build.commands;
    expect(commands.slice(0, 2)).toEqual(['npm install --no-audit --no-fund', 'npm test']);
    const synth = commands[2] ?? '';
    expect(commands).toHaveLength(3);
    const words = shellWords(synth);
    expect(words.slice(0, 3)).toEqual(['npx', 'cdk', 'synth']);
    expect(words.slice(3)).toEqual(['-c', `pipeline=${JSON.stringify(CONFIG)}`]);
    const given = words[4]?.slice('pipeline='.length);
    expect(pipelineConfigFrom(given)).toEqual(CONFIG);
  });

  it('builds, updates itself, publishes assets, then deploys default, au and eu in turn', () => {
    expect(stages.map((stage) => stage.Name)).toEqual([
      'Source',
      'Build',
      'UpdatePipeline',
      'Assets',
      'cdp-default',
      'cdp-au',
      'cdp-eu',
    ]);
  });

  it.each(REGIONS)(
    'deploys the data stack, then the API stack, of region %s in its AWS region',
    (region) => {
      const stage = stages.find((candidate) => candidate.Name === `cdp-${region}`);
      const actions = stage?.Actions ?? [];
      const awsRegion = CDK_JSON_CONTEXT.awsRegions[region];
      const deployments = actions.map((action) => ({
        stack: action.Configuration.StackName,
        mode: action.Configuration.ActionMode,
        region: action.Region ?? CONFIG.region,
        runOrder: action.RunOrder,
      }));
      expect(deployments).toEqual([
        {
          stack: `cdp-${region}-data`,
          mode: 'CHANGE_SET_REPLACE',
          region: awsRegion,
          runOrder: 1,
        },
        {
          stack: `cdp-${region}-data`,
          mode: 'CHANGE_SET_EXECUTE',
          region: awsRegion,
          runOrder: 2,
        },
        { stack: `cdp-${region}-api`, mode: 'CHANGE_SET_REPLACE', region: awsRegion, runOrder: 3 },
        { stack: `cdp-${region}-api`, mode: 'CHANGE_SET_EXECUTE', region: awsRegion, runOrder: 4 },
      ]);
      // CloudFormation runs as that region's CDK bootstrap execution role.
      expect(JSON.stringify(actions[0]?.Configuration.RoleArn)).toContain(
        `cdk-hnb659fds-cfn-exec-role-123456789012-${awsRegion}`,
      );
    },
  );

  it.each(REGIONS)(
    'names the stacks of stage cdp-%s as a direct deploy does, in the pipeline account',
    (region) => {
      const { data, api } = stageOf(app, region).stacks;
      const awsRegion = CDK_JSON_CONTEXT.awsRegions[region];
      expect(
        [data, api].map((stack) => `${stack.stackName}@${stack.account}/${stack.region}`),
      ).toEqual([
        `cdp-${region}-data@123456789012/${awsRegion}`,
        `cdp-${region}-api@123456789012/${awsRegion}`,
      ]);
    },
  );

  it('builds the same resources (logical IDs) in a stage as the direct deploy does', () => {
    const direct = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    buildApp(direct);
    const resourcesOf = (stack: Stack) =>
      (Template.fromStack(stack).toJSON() as Resources).Resources;
    for (const kind of ['data', 'api'] as const) {
      const directStack = direct.node.findChild(`cdp-default-${kind}`);
      if (!Stack.isStack(directStack)) throw new Error(`cdp-default-${kind} is not a stack`);
      const stageStack = stageOf(app, 'default').stacks[kind];
      // The API stack's functions and routes are in nested stacks: those must match too, one
      // by one.
      const pairs: [Stack, Stack][] = [[directStack, stageStack]];
      if (directStack instanceof ApiStack && stageStack instanceof ApiStack) {
        const nestedOf = (stack: ApiStack): Stack[] => [
          ...stack.functionStacks,
          ...stack.routeStacks,
        ];
        expect(nestedOf(directStack).map((nested) => nested.node.id)).toEqual(
          nestedOf(stageStack).map((nested) => nested.node.id),
        );
        expect(directStack.routeStacks.length).toBeGreaterThan(0);
        nestedOf(directStack).forEach((nested, index) => {
          pairs.push([nested, nestedOf(stageStack)[index] as Stack]);
        });
      }
      for (const [inDirectStack, inStageStack] of pairs) {
        const inDirect = resourcesOf(inDirectStack);
        const inStage = resourcesOf(inStageStack);
        const differing = [
          ...Object.keys(inDirect).filter((id) => !(id in inStage)),
          ...Object.keys(inStage).filter((id) => !(id in inDirect)),
        ].map((id) => (inDirect[id] ?? inStage[id])?.Type);
        // The REST API's deployment takes its ID from a hash of its methods, whose
        // integrations name the nested stacks' outputs by their path, which a stage
        // lengthens; harmless: a deployment is replaced whenever the API changes anyway.
        expect({
          stack: inDirectStack.node.path,
          differing: differing.filter((type) => type !== 'AWS::ApiGateway::Deployment'),
        }).toEqual({ stack: inDirectStack.node.path, differing: [] });
      }
    }
  });

  it('passes the cdk-nag AWS Solutions checks: pipeline and its support stacks', () => {
    const stacks = app.node.children.filter((child) => Stack.isStack(child));
    expect(stacks).toHaveLength(3);
    for (const stack of stacks) expect(nagErrorsOf(stack)).toEqual([]);
  });

  it.each(REGIONS)('runs and passes the cdk-nag AWS Solutions checks in stage cdp-%s', (region) => {
    for (const kind of ['data', 'api'] as const) {
      const stack = stageOf(app, region).stacks[kind];
      expect(nagErrorsOf(stack)).toEqual([]);
      // App aspects stop at a stage: the report shows the checks did reach this stack.
      const report = readFileSync(
        join(app.outdir, `AwsSolutions-cdp-${region}-cdp-${region}-${kind}-NagReport.csv`),
        'utf8',
      );
      const rows = report.trim().split('\n').slice(1);
      expect(rows.length).toBeGreaterThan(0);
      expect(
        rows.filter((row) => row.includes('"Non-Compliant"') && row.includes('"Error"')),
      ).toEqual([]);
    }
  });
});

describe('the pipeline of a subset of regions (context "regions")', () => {
  it('deploys only those, in the order of REGIONS, and keeps the selection on its own synth', () => {
    const app = synthesize({ pipeline: JSON.stringify(CONFIG), regions: 'eu,default' });
    const template = Template.fromStack(pipelineStackOf(app));
    const names = pipelineStagesOf(template).map((stage) => stage.Name);
    expect(names.slice(4)).toEqual(['cdp-default', 'cdp-eu']);
    const words = shellWords(synthProjectOf(template).spec.phases.build.commands[2] ?? '');
    expect(words.slice(3)).toEqual([
      '-c',
      `pipeline=${JSON.stringify(CONFIG)}`,
      '-c',
      'regions=eu,default',
    ]);
  });
});

describe('without context "pipeline"', () => {
  it('has no pipeline and no stages: the region stacks are deployed directly', () => {
    const app = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    buildApp(app);
    expect(app.node.tryFindChild(PIPELINE_STACK)).toBeUndefined();
    expect(app.node.children.filter((child) => Stage.isStage(child))).toEqual([]);
    const stacks = app.node.children.filter((child) => Stack.isStack(child));
    expect(stacks.map((stack) => stack.stackName)).toHaveLength(2 * REGIONS.length);
  });
});

describe('context "pipeline"', () => {
  it('names the member that is missing', () => {
    const { branch: _branch, ...withoutBranch } = CONFIG;
    expect(() => pipelineConfigFrom(JSON.stringify(withoutBranch))).toThrow(
      /context "pipeline": "branch" is missing/,
    );
    const app = new App({
      context: { ...CDK_JSON_CONTEXT, pipeline: { ...CONFIG, account: undefined } },
    });
    expect(() => buildApp(app)).toThrow(/"account" is missing/);
  });

  it('says what is wrong with a member that is there', () => {
    expect(() => pipelineConfigFrom({ ...CONFIG, account: '1234' })).toThrow(
      /"account" must be a 12-digit AWS account ID/,
    );
    expect(() => pipelineConfigFrom({ ...CONFIG, repository: 'cdp-api' })).toThrow(
      /"repository" must be "owner\/repo"/,
    );
  });

  it('must be a JSON object', () => {
    expect(() => pipelineConfigFrom('true')).toThrow(/must be a JSON object/);
    expect(() => pipelineConfigFrom('{connectionArn:')).toThrow(/must be a JSON object/);
  });

  it('accepts the JSON the command line gives and the object cdk.json gives alike', () => {
    expect(pipelineConfigFrom(JSON.stringify(CONFIG))).toEqual(CONFIG);
    expect(pipelineConfigFrom(CONFIG)).toEqual(CONFIG);
    expect(pipelineConfigFrom(undefined)).toBeUndefined();
  });

  it('reaches cdk synth intact whatever the branch name holds', () => {
    const app = new App({
      context: {
        ...CDK_JSON_CONTEXT,
        'aws:cdk:bundling-stacks': [],
        regions: 'default',
        pipeline: { ...CONFIG, branch: "release/it's $HOME `x`" },
      },
    });
    buildApp(app);
    const template = Template.fromStack(pipelineStackOf(app));
    const words = shellWords(synthProjectOf(template).spec.phases.build.commands[2] ?? '');
    expect(pipelineConfigFrom(words[4]?.slice('pipeline='.length))).toEqual({
      ...CONFIG,
      branch: "release/it's $HOME `x`",
    });
  });
});
