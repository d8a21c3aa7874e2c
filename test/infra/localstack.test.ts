import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { App, CfnResource, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/bin/app.js';
import { LEFT_OUT_ON_LOCALSTACK, LOCALSTACK_CONTEXT } from '../../infra/localstack.js';

/**
 * Context `localstack` (set only by `npm run deploy:localstack`) leaves out exactly the types
 * `infra/localstack.ts` lists, and nothing else; without it nothing is left out.
 */
/**
 * The resources of the console's hosting (its construct, and the handler of its uploads that
 * aws-cdk-lib makes at the stack's root): the LocalStack deploy leaves it out whole, so their
 * types are deployed that many fewer times there.
 */
function isConsoleHosting(resource: CfnResource): boolean {
  const path = resource.node.path;
  return path.includes('/console-hosting/') || path.includes('/Custom::CDKBucketDeployment');
}

function typesOf(
  extra: Record<string, unknown>,
  skip: (resource: CfnResource) => boolean = () => false,
): Map<string, number> {
  const { context } = JSON.parse(readFileSync('cdk.json', 'utf8')) as {
    context: Record<string, unknown>;
  };
  const app = new App({
    context: { ...context, regions: 'default', 'aws:cdk:bundling-stacks': [], ...extra },
  });
  buildApp(app);
  app.synth();
  const counts = new Map<string, number>();
  // The two stacks and every stack nested in them (the API's functions live in nested stacks).
  const stacks = ['cdp-default-data', 'cdp-default-api'].flatMap((id) =>
    app.node.findChild(id).node.findAll().filter(Stack.isStack),
  );
  expect(stacks.length).toBeGreaterThan(2);
  for (const stack of stacks) {
    const resources = Template.fromStack(stack).toJSON() as {
      Resources: Record<string, { Type: string }>;
    };
    const skipped = new Set(
      stack.node
        .findAll()
        .filter((child): child is CfnResource => CfnResource.isCfnResource(child))
        .filter((resource) => Stack.of(resource) === stack && skip(resource))
        .map((resource) => stack.resolve(resource.logicalId) as string),
    );
    for (const [id, { Type }] of Object.entries(resources.Resources)) {
      if (!skipped.has(id)) counts.set(Type, (counts.get(Type) ?? 0) + 1);
    }
  }
  return counts;
}

describe('the LocalStack context flag', () => {
  const full = typesOf({});
  const localstack = typesOf({ [LOCALSTACK_CONTEXT]: 'true' });
  // What remains once the console's hosting, left out whole, is taken away.
  const withoutHosting = typesOf({}, isConsoleHosting);

  it('leaves out only the listed types, all of them', () => {
    const leftOut = [...full.keys()].filter((type) => !localstack.has(type)).sort();
    expect(leftOut).toEqual(Object.keys(LEFT_OUT_ON_LOCALSTACK).sort());
    for (const [type, count] of localstack)
      expect({ type, count }).toEqual({ type, count: withoutHosting.get(type) });
  });

  it("leaves out the console's hosting whole, and only its bucket and handler besides the listed types", () => {
    const fewer = [...localstack]
      .filter(([type, count]) => count !== full.get(type))
      .map(([type]) => type)
      .sort();
    expect(fewer).toEqual([
      'AWS::IAM::Policy',
      'AWS::IAM::Role',
      'AWS::Lambda::Function',
      'AWS::S3::Bucket',
      'AWS::S3::BucketPolicy',
    ]);
    expect((full.get('AWS::S3::Bucket') ?? 0) - (localstack.get('AWS::S3::Bucket') ?? 0)).toBe(1);
  });

  it('leaves nothing out without it', () => {
    for (const type of Object.keys(LEFT_OUT_ON_LOCALSTACK)) {
      expect({ type, declared: (full.get(type) ?? 0) > 0 }).toEqual({ type, declared: true });
    }
  });
});
