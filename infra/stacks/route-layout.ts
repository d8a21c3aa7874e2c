import type { RouteDefinition } from '../../shared/routes.js';
import type { FunctionGroup, FunctionSpec } from './function-groups.js';

/**
 * Which CloudFormation stack holds each path resource and method of a regional REST API, so
 * that a route adds to the stack of its area and never to the API stack.
 *
 * - A route's method lives in the routes stack of its function's group (`routes-<group>`),
 *   beside the functions stack of that group (`functions-<group>`).
 * - A path resource whose routes all belong to one group (`/v1/person`, `/v1/person/merge`,
 *   `/t`) lives in that group's routes stack, with its fallback method (`ANY`, 405).
 * - A path resource that several groups hang from (`/v1`) is shared: the API stack holds it
 *   and its fallback method, and each routes stack that needs it imports it by its ID.
 *
 * A path therefore has one home for as long as the groups beneath it do not change, which is
 * what an existing deployment needs: API Gateway refuses a second resource on a path, and
 * CloudFormation creates a resource in its new stack before it deletes it from the old one.
 */
export interface AreaRoutes {
  group: FunctionGroup;
  /** Its routes, in the order of the routes table. */
  routes: RouteDefinition[];
  /** The path resources it creates, each after its parent. */
  paths: string[];
  /** The shared paths (`/` for the API's root) it hangs resources or methods from. */
  attachments: string[];
}

export interface RouteLayout {
  /** The path resources the API stack holds (the root excluded), each after its parent. */
  shared: string[];
  /** One entry per group that serves routes, in the order of its first route. */
  areas: AreaRoutes[];
}

/** `/v1/person/merge` → `/v1`, `/v1` → `/`. */
export function parentPath(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

/** `/v1/person/merge` → `/v1`, `/v1/person`, `/v1/person/merge`. */
function prefixesOf(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.map((_, index) => `/${parts.slice(0, index + 1).join('/')}`);
}

/** Parents before children; siblings alphabetically (segment by segment). */
function byPath(a: string, b: string): number {
  const left = a.split('/');
  const right = b.split('/');
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    const order = (left[index] ?? '').localeCompare(right[index] ?? '');
    if (order !== 0) return order;
  }
  return left.length - right.length;
}

/** Where each route's method and each path's resource go (see the module's comment). */
export function routeLayout(
  routes: readonly RouteDefinition[],
  specs: readonly FunctionSpec[],
): RouteLayout {
  const groupOf = (route: RouteDefinition): FunctionGroup => {
    const spec = specs.find((candidate) => candidate.name === route.function);
    if (!spec) throw new Error(`No function ${route.function} for ${route.method} ${route.path}`);
    return spec.group;
  };
  // The groups of the routes at or beneath each path.
  const beneath = new Map<string, Set<FunctionGroup>>();
  for (const route of routes) {
    for (const prefix of prefixesOf(route.path)) {
      const groups = beneath.get(prefix) ?? new Set<FunctionGroup>();
      groups.add(groupOf(route));
      beneath.set(prefix, groups);
    }
  }
  const ownerOf = (path: string): FunctionGroup | undefined => {
    const groups = beneath.get(path);
    return groups?.size === 1 ? [...groups][0] : undefined;
  };

  const shared = [...beneath.keys()].filter((path) => ownerOf(path) === undefined).sort(byPath);
  const areas = new Map<FunctionGroup, AreaRoutes>();
  for (const route of routes) {
    const group = groupOf(route);
    const area = areas.get(group) ?? { group, routes: [], paths: [], attachments: [] };
    area.routes.push(route);
    areas.set(group, area);
  }
  for (const area of areas.values()) {
    const paths = new Set<string>();
    const attachments = new Set<string>();
    for (const route of area.routes) {
      // A route on a shared path (or the root) puts its method on the imported resource.
      if (ownerOf(route.path) !== area.group) attachments.add(route.path);
      for (const prefix of prefixesOf(route.path)) {
        if (ownerOf(prefix) !== area.group) continue;
        paths.add(prefix);
        const parent = parentPath(prefix);
        if (parent === '/' || ownerOf(parent) !== area.group) attachments.add(parent);
      }
    }
    area.paths = [...paths].sort(byPath);
    area.attachments = [...attachments].sort(byPath);
  }
  return { shared, areas: [...areas.values()] };
}

/**
 * What API Gateway holds of a layout: every path, which stack holds it, and every method with
 * the function it invokes. The API stack names its deployment after this, so that any change
 * to it (a route added, moved, removed or given another function) deploys the stage again;
 * the order of the routes table, and what the functions do with a request (memory, access, limits) is not the API's, and a
 * change to it leaves the deployment alone.
 */
export function apiShapeOf(layout: RouteLayout): unknown {
  // In a fixed order: the order of the routes table is not the API's.
  return {
    shared: layout.shared,
    areas: [...layout.areas]
      .sort((a, b) => a.group.localeCompare(b.group))
      .map((area) => ({
        group: area.group,
        attachments: area.attachments,
        paths: area.paths,
        methods: area.routes
          .map((route) => `${route.method} ${route.path} ${route.function}`)
          .sort(),
      })),
  };
}
