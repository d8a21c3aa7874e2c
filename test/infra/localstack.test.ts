import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/bin/app.js';
import { LEFT_OUT_ON_LOCALSTACK, LOCALSTACK_CONTEXT } from '../../infra/localstack.js';

/**
 * Context `localstack` (set only by `npm run deploy:localstack`) leaves out exactly the types
 * `infra/localstack.ts` lists, and nothing else; without it nothing is left out.
 */
function typesOf(extra: Record<string, unknown>): Map<string, number> {
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
    for (const { Type } of Object.values(resources.Resources)) {
      counts.set(Type, (counts.get(Type) ?? 0) + 1);
    }
  }
  return counts;
}

describe('the LocalStack context flag', () => {
  const full = typesOf({});
  const localstack = typesOf({ [LOCALSTACK_CONTEXT]: 'true' });

  it('leaves out only the listed types, all of them', () => {
    const leftOut = [...full.keys()].filter((type) => !localstack.has(type)).sort();
    expect(leftOut).toEqual(Object.keys(LEFT_OUT_ON_LOCALSTACK).sort());
    for (const [type, count] of localstack)
      expect({ type, count }).toEqual({ type, count: full.get(type) });
  });

  it('leaves nothing out without it', () => {
    for (const type of Object.keys(LEFT_OUT_ON_LOCALSTACK)) {
      expect({ type, declared: (full.get(type) ?? 0) > 0 }).toEqual({ type, declared: true });
    }
  });
});
