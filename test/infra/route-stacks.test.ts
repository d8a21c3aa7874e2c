import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ApiStack, UPGRADE_KEEP_DEPLOYMENT_CONTEXT } from '../../infra/stacks/api-stack.js';
import { DataStack } from '../../infra/stacks/data-stack.js';
import { functionSpecs } from '../../infra/stacks/function-groups.js';
import { routeLayout } from '../../infra/stacks/route-layout.js';
import { ROUTES, routeKey, type RouteDefinition } from '../../shared/routes.js';
import { STREAM_WORKERS, WORKERS } from '../../shared/workers.js';
import { logicalIdOf, restApiOf } from './rest-api-template.js';

/**
 * Each area's path resources and methods live in a routes stack of its own
 * (`routes-<group>`), so a route adds to its area's stacks and never to the API stack, and
 * the stage's deployment is named after the routes table, so a changed route deploys again.
 */

const { context: CDK_CONTEXT } = JSON.parse(readFileSync('cdk.json', 'utf8')) as {
  context: Record<string, unknown>;
};
const SPECS = functionSpecs(ROUTES, WORKERS, STREAM_WORKERS);
const groupOf = (route: RouteDefinition) =>
  SPECS.find((spec) => spec.name === route.function)?.group;

/** The default region's API stack with these routes, synthesized without bundling. */
function apiStackWith(
  routes: readonly RouteDefinition[],
  options: { context?: Record<string, unknown>; workers?: boolean } = {},
): ApiStack {
  const app = new App({
    context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...options.context },
  });
  const env = { region: 'us-east-1' };
  const data = new DataStack(app, 'cdp-default-data', { env, region: 'default' });
  const api = new ApiStack(app, 'cdp-default-api', {
    env,
    region: 'default',
    data: data.data,
    baseUrls: CDK_CONTEXT.baseUrls as Record<'default' | 'au' | 'eu', string>,
    routes,
    // The workers have no route: left out where only the API's shape matters (faster).
    workers: options.workers === false ? [] : WORKERS,
    streamWorkers: options.workers === false ? [] : STREAM_WORKERS,
  });
  app.synth();
  return api;
}

function deploymentOf(stack: ApiStack): { logicalId: string; dependsOn: string[] } {
  const deployments = Template.fromStack(stack).findResources('AWS::ApiGateway::Deployment');
  const entries = Object.entries(deployments);
  expect(entries).toHaveLength(1);
  const [logicalId, resource] = entries[0] as [string, { DependsOn?: string[] }];
  return { logicalId, dependsOn: resource.DependsOn ?? [] };
}

describe('where the routes table puts each path and method', () => {
  it("shares /v1 and the console's /console/v1 among the areas; every other path belongs to the area of its routes", () => {
    const layout = routeLayout(ROUTES, SPECS);
    // The console's API is two groups (its configuration, and the instance's records).
    expect(layout.shared).toEqual(['/console', '/console/v1', '/v1']);
    const byGroup = new Map(layout.areas.map((area) => [area.group, area]));
    expect(byGroup.get('people')?.attachments).toEqual(['/v1']);
    expect(byGroup.get('people')?.paths).toContain('/v1/person/custom-field/get');
    // /v1/organizations and /v1/accounts are one area (the accounts routes are its functions).
    expect(byGroup.get('organizations')?.paths).toEqual(
      expect.arrayContaining(['/v1/organizations', '/v1/accounts', '/v1/accounts/merge']),
    );
    // Outside /v1: the email links' /t with email, the rest public, both from the root.
    expect(byGroup.get('email')?.paths).toEqual(
      expect.arrayContaining(['/t', '/t/c', '/v1/transactional']),
    );
    expect(byGroup.get('email')?.attachments).toEqual(['/', '/v1']);
    expect(byGroup.get('public')?.attachments).toEqual(['/']);
    // Every path is in one place, each after its parent.
    const everyPath = [...layout.shared, ...layout.areas.flatMap((area) => area.paths)];
    expect(new Set(everyPath).size).toBe(everyPath.length);
    for (const area of layout.areas) {
      area.paths.forEach((path, index) => {
        const parent = path.slice(0, path.lastIndexOf('/'));
        if (parent && !area.attachments.includes(parent)) {
          expect(area.paths.indexOf(parent)).toBeLessThan(index);
        }
      });
    }
  });

  it('gives a new area its own paths, and a route on a shared path its method only', () => {
    const [template] = ROUTES;
    if (!template) throw new Error('no routes');
    const routes: RouteDefinition[] = [
      ...ROUTES,
      { ...template, path: '/v1/growth/one', function: 'growth-one' },
      { ...template, method: 'POST', path: '/v1', function: 'growth-two' },
    ];
    const specs = functionSpecs(routes, WORKERS).map((spec) =>
      spec.name === 'growth-two' ? { ...spec, group: 'growth' } : spec,
    );
    const growth = routeLayout(routes, specs).areas.find((area) => area.group === 'growth');
    expect(growth).toMatchObject({
      paths: ['/v1/growth', '/v1/growth/one'],
      attachments: ['/v1'],
    });
    expect(growth?.routes.map(routeKey)).toEqual(['GET /v1/growth/one', 'POST /v1']);
  });
});

describe('the routes stacks of a regional API', () => {
  let api: ApiStack;
  beforeAll(() => {
    api = apiStackWith(ROUTES);
  });

  it("puts each route's method in its area's routes stack, and each path with its routes", () => {
    const rest = restApiOf(api);
    for (const route of ROUTES) {
      const method = rest.methods.find(
        (m) => m.httpMethod === route.method && m.path === route.path,
      );
      expect({ route: routeKey(route), stack: method?.stack }).toEqual({
        route: routeKey(route),
        stack: `routes-${groupOf(route) ?? '?'}`,
      });
    }
    // A path resource is in the stack of the routes at and beneath it, with its ANY.
    for (const resource of rest.resources.filter((r) => r.stack !== 'api')) {
      const beneath = ROUTES.filter(
        (route) => route.path === resource.path || route.path.startsWith(`${resource.path}/`),
      );
      expect(beneath.length).toBeGreaterThan(0);
      for (const route of beneath) {
        expect({ path: resource.path, stack: `routes-${groupOf(route) ?? '?'}` }).toEqual({
          path: resource.path,
          stack: resource.stack,
        });
      }
      expect(
        rest.methods.filter((m) => m.path === resource.path && m.httpMethod === 'ANY'),
      ).toEqual([expect.objectContaining({ stack: resource.stack }) as unknown]);
    }
    // The API stack keeps what several areas share, and the fallback of unknown paths.
    expect(rest.resources.filter((r) => r.stack === 'api').map((r) => r.path)).toEqual(
      expect.arrayContaining(['/v1', '/console', '/console/v1', '/{proxy+}']),
    );
    expect(rest.resources.filter((r) => r.stack === 'api')).toHaveLength(4);
    expect(
      rest.methods
        .filter((m) => m.stack === 'api')
        .map((m) => `${m.httpMethod} ${m.path}`)
        .sort(),
    ).toEqual(['ANY /', 'ANY /console', 'ANY /console/v1', 'ANY /v1', 'ANY /{proxy+}']);
    expect(api.routeStacks.map((stack) => stack.node.id).sort()).toEqual(
      [...new Set(ROUTES.map((route) => `routes-${groupOf(route) ?? '?'}`))].sort(),
    );
  });

  it('deploys the stage only once every routes stack is in place', () => {
    const { dependsOn } = deploymentOf(api);
    for (const stack of api.routeStacks) {
      if (!stack.nestedStackResource) throw new Error('no nested stack resource');
      expect(dependsOn).toContain(logicalIdOf(stack.nestedStackResource));
    }
  });
});

describe("the deployment's logical ID", () => {
  const [tagsGet] = ROUTES.filter((route) => routeKey(route) === 'POST /v1/tags/get');
  if (!tagsGet) throw new Error('the routes table has POST /v1/tags/get');
  const without = ROUTES.filter((route) => route !== tagsGet);
  /** The routes table with tags/get changed where it stands. */
  const changed = (change: Partial<RouteDefinition>) =>
    ROUTES.map((route) => (route === tagsGet ? { ...route, ...change } : route));
  const idWith = (routes: readonly RouteDefinition[]) =>
    deploymentOf(apiStackWith(routes, { workers: false })).logicalId;
  let today: string;
  beforeAll(() => {
    today = idWith(ROUTES);
  });

  it('is the same for the same routes table, in whatever order', () => {
    expect(idWith([...without, tagsGet])).toBe(today);
  });

  it('changes when a route moves to another path, or a route is added', () => {
    expect(idWith(changed({ path: '/v1/tags/list' }))).not.toBe(today);
    expect(idWith([...ROUTES, { ...tagsGet, path: '/v1/tags/list' }])).not.toBe(today);
  });

  it('changes when a route is served by another function (a change inside a routes stack only)', () => {
    // Same path, method and area: only the integration of one method of routes-organizations.
    const find = (key: string) => {
      const route = ROUTES.find((candidate) => routeKey(candidate) === key);
      if (!route) throw new Error(`the routes table has ${key}`);
      return route;
    };
    const listing = find('POST /v1/accounts/get');
    const byIds = find('POST /v1/accounts/get-by-ids');
    const served = ROUTES.map((route) =>
      route === listing ? { ...byIds, method: listing.method, path: listing.path } : route,
    );
    expect(groupOf(byIds)).toBe(groupOf(listing));
    expect(idWith(served)).not.toBe(today);
  });

  it("stays when only what the function does changes (not the API's)", () => {
    expect(idWith(changed({ memoryMb: 2048, timeoutSeconds: 20 }))).toBe(today);
  });
});

describe('the first deploy of the upgrade from one API stack (context upgradeKeepDeployment)', () => {
  const KEPT = 'apiDeployment149F1294ff535357bd61409e41dce30430e1c3e0';

  it('holds no routes stacks and keeps the deployment the stage serves, under its own ID', () => {
    const detached = apiStackWith(ROUTES, {
      context: { [UPGRADE_KEEP_DEPLOYMENT_CONTEXT]: KEPT },
      workers: false,
    });
    expect(detached.routeStacks).toEqual([]);
    const template = Template.fromStack(detached);
    expect(deploymentOf(detached).logicalId).toBe(KEPT);
    template.hasResourceProperties('AWS::ApiGateway::Stage', { DeploymentId: { Ref: KEPT } });
    // What stays of the REST API is what the API stack holds after the upgrade, same IDs.
    const after = apiStackWith(ROUTES, { workers: false });
    const kept = (stack: ApiStack) =>
      restApiOf(stack)
        .resources.concat(restApiOf(stack).methods)
        .filter((resource) => resource.stack === 'api')
        .map((resource) => `${resource.logicalId} ${resource.path}`)
        .sort();
    expect(kept(detached)).toEqual(kept(after));
  });

  it('refuses anything but a deployment logical ID', () => {
    expect(() =>
      apiStackWith(ROUTES, {
        context: { [UPGRADE_KEEP_DEPLOYMENT_CONTEXT]: 'd-abc123' },
        workers: false,
      }),
    ).toThrow(/must be the logical ID of the API stack's AWS::ApiGateway::Deployment/);
  });
});
