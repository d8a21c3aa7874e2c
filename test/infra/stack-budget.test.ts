import { beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { buildApp } from '../../infra/bin/app.js';
import {
  STACK_RESOURCE_BUDGET,
  overBudget,
  stackSizes,
  type StackSize,
} from '../../infra/stack-budget.js';
import { ApiStack } from '../../infra/stacks/api-stack.js';
import { DataStack } from '../../infra/stacks/data-stack.js';
import { EXAMPLE_PIPELINE } from '../../infra/stacks/pipeline-stack.js';
import { functionSpecs, groupOfPath } from '../../infra/stacks/function-groups.js';
import { ROUTES, type RouteDefinition } from '../../shared/routes.js';
import { WORKERS } from '../../shared/workers.js';

/**
 * The guard of the stacks' size: every stack the app synthesizes (both regions' pairs, their
 * nested stacks, the pipeline and its stages) stays under the budget, and still does with 30
 * more routes, so the next endpoints have room. A failure names the stack and its largest
 * resource types.
 */

const { context: CDK_CONTEXT } = JSON.parse(readFileSync('cdk.json', 'utf8')) as {
  context: Record<string, unknown>;
};

/** Synthesizes into a fresh directory, without bundling, and gives the stacks' sizes. */
function synthesized(build: (app: App) => void, context: Record<string, unknown> = {}) {
  const outdir = mkdtempSync(join(tmpdir(), 'cdp-budget-'));
  try {
    const app = new App({
      outdir,
      context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context },
    });
    build(app);
    app.synth();
    return stackSizes(outdir);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** Routes that are not in the table, each with a function of its own, under one prefix. */
function moreRoutes(count: number, prefix: string): RouteDefinition[] {
  const [template] = ROUTES.filter((route) => route.path === '/v1/person/merge');
  if (!template) throw new Error('the routes table has person merge');
  return Array.from({ length: count }, (_, index) => ({
    ...template,
    path: `${prefix}/growth-${index}`,
    function: `growth-${index}`,
  }));
}

/** Today's region pair with more routes, as `cdk synth` would build it. */
function growthSizes(extra: RouteDefinition[]) {
  const health = join(process.cwd(), 'functions', 'health', 'handler.ts');
  const extraFunctions = new Set(extra.map((route) => route.function));
  return synthesized((app) => {
    const env = { region: 'us-east-1' };
    const data = new DataStack(app, 'cdp-default-data', { env, region: 'default' });
    new ApiStack(app, 'cdp-default-api', {
      env,
      region: 'default',
      data: data.data,
      baseUrls: CDK_CONTEXT.baseUrls as Record<'default' | 'au' | 'eu', string>,
      routes: [...ROUTES, ...extra],
      workers: WORKERS,
      // The extra functions have no folder: they are bundled from an existing handler.
      entryOf: (spec) => (extraFunctions.has(spec.name) ? health : undefined),
    });
  });
}

/** The group that holds the most functions today: the worst place for 30 more routes. */
function largestGroup(): string {
  const counts = new Map<string, number>();
  for (const spec of functionSpecs(ROUTES, WORKERS)) {
    counts.set(spec.group, (counts.get(spec.group) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
}

/** A path prefix of a group: `/v1/<area>`, or `/console/v1/<area>` for the console's. */
function prefixOf(group: string): string {
  const route = ROUTES.find((candidate) => groupOfPath(candidate.path) === group);
  // `/v1/person/merge` → `/v1/person`, `/console/v1/people/get` → `/console/v1/people`.
  const segments = route?.path.startsWith('/console/') ? 4 : 3;
  const area = route?.path.split('/').slice(0, segments).join('/');
  if (!area || groupOfPath(`${area}/growth`) !== group) {
    throw new Error(`group ${group} has no route to grow from`);
  }
  return area;
}

describe('the stacks’ resource budget', () => {
  it('is kept by every stack of every region, nested stacks included (direct deploy)', () => {
    const sizes = synthesized((app) => buildApp(app));
    expect(sizes.filter((size) => size.template.includes('nested')).length).toBeGreaterThan(0);
    expect(overBudget(sizes)).toEqual([]);
  });

  it('is kept by the pipeline stack and every stage stack', () => {
    const sizes = synthesized((app) => buildApp(app), { pipeline: EXAMPLE_PIPELINE });
    expect(sizes.some((size) => size.template.startsWith('assembly-cdp-au/'))).toBe(true);
    expect(overBudget(sizes)).toEqual([]);
  });

  /** The resources of the API stack itself, which no route adds to. */
  const apiStackSize = (sizes: StackSize[]) =>
    sizes.find((size) => size.template === 'cdp-default-api.template.json')?.resources;
  let today: StackSize[];
  beforeAll(() => {
    today = growthSizes([]);
  });

  it('is still kept with 30 more routes in the group that holds the most functions', () => {
    const group = largestGroup();
    const extra = moreRoutes(30, prefixOf(group));
    expect(new Set(extra.map((route) => groupOfPath(route.path)))).toEqual(new Set([group]));
    const sizes = growthSizes(extra);
    expect(overBudget(sizes)).toEqual([]);
    // They went to the group's own two stacks: the API stack did not grow.
    expect(apiStackSize(sizes)).toBe(apiStackSize(today));
  });

  it('is still kept with 30 more routes in a new area of the API, which gets stacks of its own', () => {
    const sizes = growthSizes(moreRoutes(30, '/v1/growth'));
    expect(sizes.some((size) => /functionsgrowth/.test(size.template))).toBe(true);
    expect(sizes.some((size) => /routesgrowth/.test(size.template))).toBe(true);
    expect(overBudget(sizes)).toEqual([]);
    // The API stack holds the two new nested stacks, nothing else of the area.
    expect(apiStackSize(sizes)).toBe((apiStackSize(today) ?? 0) + 2);
  });

  it('names a stack over the budget with its counts and its largest resource types', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-budget-'));
    try {
      const resources = Object.fromEntries(
        Array.from({ length: STACK_RESOURCE_BUDGET + 1 }, (_, index) => [
          `r${index}`,
          { Type: index % 3 === 0 ? 'AWS::CloudWatch::Alarm' : 'AWS::Lambda::Function' },
        ]),
      );
      writeFileSync(join(dir, 'big.template.json'), JSON.stringify({ Resources: resources }));
      writeFileSync(join(dir, 'small.template.json'), JSON.stringify({ Resources: { a: {} } }));
      expect(overBudget(stackSizes(dir))).toEqual([
        `big.template.json: 401 resources (budget ${STACK_RESOURCE_BUDGET}), 0 outputs, ` +
          '0 parameters; largest: AWS::Lambda::Function 267, AWS::CloudWatch::Alarm 134',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is enforced by CDK itself at synth: the app sets its resource limit to the budget', () => {
    const app = buildApp(new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } }));
    expect(app.node.tryGetContext('@aws-cdk/core:stackResourceLimit')).toBe(STACK_RESOURCE_BUDGET);
  });
});
