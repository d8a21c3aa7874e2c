import { FALLBACK_FUNCTION, type RouteDefinition } from '../../shared/routes.js';
import type { StreamWorkerDefinition, WorkerDefinition } from '../../shared/workers.js';

/**
 * How the functions of a regional API are spread over nested stacks, so that no
 * CloudFormation stack nears its 500-resource limit as routes are added.
 *
 * - One Lambda function per folder under `functions/`: routes that are one operation under
 *   two names (the organizations and accounts routes, the reference page's two asset files)
 *   share their folder's function, and must then declare the same needs.
 * - Each function lives in the nested stack of its group, with its role, policy, log group,
 *   API Gateway permissions and alarms (about 7 resources a function). The group comes from
 *   the first path segment under `/v1` of the function's first route, through `AREA_GROUPS`;
 *   a segment that table does not name becomes a group (and a nested stack) of its own, so a
 *   new area of the API starts in an empty stack by construction.
 * - Each group's path resources and methods live in a nested stack of their own beside its
 *   functions (`routes-<group>`, `route-layout.ts`), about three resources a route (its
 *   method, the fallback method of its path, its path's resource). The API stack keeps the
 *   REST API, the paths several groups share, the deployment, stage, gateway responses, the
 *   WAF and the region's operations: a route adds nothing to it, a new area two nested stacks.
 *
 * The infra test `test/infra/stack-budget.test.ts` synthesizes today's app and one with 30
 * more routes, and fails when any stack passes the budget, naming it and its largest types.
 */

/** Nested stack groups: a group's functions are deployed together, in `functions-<group>`. */
export type FunctionGroup = string;

/** Areas of the API (first segment under `/v1`) that share a group with others. */
export const AREA_GROUPS: Readonly<Record<string, FunctionGroup>> = {
  person: 'people',
  organizations: 'organizations',
  accounts: 'organizations',
  transactional: 'email',
  activities: 'activities',
  async: 'activities',
  definitions: 'activities',
  'instance-schema': 'activities',
  instances: 'activities',
  audiences: 'audiences',
  audience: 'audiences',
};

/** The group of the public routes outside `/v1`, and of the fallback. */
export const PUBLIC_GROUP: FunctionGroup = 'public';
/** The group of the console's API (`/console/v1/…`): the instance's configuration. */
export const CONSOLE_GROUP: FunctionGroup = 'console';
/**
 * The console's areas that read and act on the instance's records rather than its
 * configuration: a group of their own, so that neither of the console's stacks nears the budget.
 */
const CONSOLE_AREAS: Readonly<Record<string, FunctionGroup>> = {
  people: 'console-records',
  organizations: 'console-records',
  audiences: 'console-records',
  emails: 'console-records',
  webhooks: 'console-records',
};
/** The groups of the console's API: their functions are told the console's sign-in. */
export function isConsoleGroup(group: FunctionGroup): boolean {
  return group === CONSOLE_GROUP || Object.values(CONSOLE_AREAS).includes(group);
}
/** The email links (`/t/…`) are served with the rest of email. */
const PUBLIC_AREAS: Readonly<Record<string, FunctionGroup>> = {
  t: 'email',
};
/** The queue workers, apart from the request path. */
export const WORKERS_GROUP: FunctionGroup = 'workers';

/** The group of a route, by its path. */
export function groupOfPath(path: string): FunctionGroup {
  const [first, second, third] = path.split('/').filter(Boolean);
  if (first === 'v1' && second) return AREA_GROUPS[second] ?? second;
  if (first === 'console') return (third && CONSOLE_AREAS[third]) ?? CONSOLE_GROUP;
  return (first && PUBLIC_AREAS[first]) ?? PUBLIC_GROUP;
}

/** What one deployed function is made of. */
export interface FunctionSpec {
  /** Its folder under `functions/`, which also names it (`person-merge`). */
  name: string;
  group: FunctionGroup;
  memoryMb: number;
  timeoutSeconds: number;
  access: RouteDefinition['access'];
  packageFiles?: readonly string[];
  /** Its reserved concurrency (`reservedConcurrency` of its routes), if any. */
  reservedConcurrency?: number;
  /** The routes it serves (none for a worker or the fallback). */
  routes: readonly RouteDefinition[];
  /** The queue that feeds it, for a worker. */
  worker?: WorkerDefinition;
  /** The table stream that feeds it, for a stream worker. */
  streamWorker?: StreamWorkerDefinition;
  /** The function behind every path and method no route serves. */
  fallback?: true;
}

/** The parts of a route that must agree between the routes sharing one function. */
function deploymentOf(route: RouteDefinition): string {
  return JSON.stringify({
    memoryMb: route.memoryMb,
    timeoutSeconds: route.timeoutSeconds,
    access: [...route.access].sort(),
    packageFiles: [...(route.packageFiles ?? [])].sort(),
    reservedConcurrency: route.reservedConcurrency,
  });
}

/**
 * The functions of a regional API: one per folder of the routes table (in the order of its
 * first route), the fallback, then one per queue worker and one per stream worker.
 */
export function functionSpecs(
  routes: readonly RouteDefinition[],
  workers: readonly WorkerDefinition[],
  streamWorkers: readonly StreamWorkerDefinition[] = [],
): FunctionSpec[] {
  const byFolder = new Map<string, RouteDefinition[]>();
  for (const route of routes) {
    const shared = byFolder.get(route.function);
    if (shared) shared.push(route);
    else byFolder.set(route.function, [route]);
  }
  const specs: FunctionSpec[] = [];
  for (const [name, served] of byFolder) {
    const [first] = served as [RouteDefinition, ...RouteDefinition[]];
    const differing = served.find((route) => deploymentOf(route) !== deploymentOf(first));
    if (differing) {
      throw new Error(
        `Routes ${first.method} ${first.path} and ${differing.method} ${differing.path} share ` +
          `the function ${name} but declare different memory, timeout, access, files or ` +
          `reserved concurrency`,
      );
    }
    specs.push({
      name,
      group: groupOfPath(first.path),
      memoryMb: first.memoryMb,
      timeoutSeconds: first.timeoutSeconds,
      access: first.access,
      ...(first.packageFiles ? { packageFiles: first.packageFiles } : {}),
      ...(first.reservedConcurrency === undefined
        ? {}
        : { reservedConcurrency: first.reservedConcurrency }),
      routes: served,
    });
  }
  specs.push({
    name: FALLBACK_FUNCTION.function,
    group: PUBLIC_GROUP,
    memoryMb: FALLBACK_FUNCTION.memoryMb,
    timeoutSeconds: FALLBACK_FUNCTION.timeoutSeconds,
    access: [],
    routes: [],
    fallback: true,
  });
  for (const worker of workers) {
    if (byFolder.has(worker.function)) {
      throw new Error(`The worker ${worker.function} is also the function of a route`);
    }
    specs.push({
      name: worker.function,
      group: WORKERS_GROUP,
      memoryMb: worker.memoryMb,
      timeoutSeconds: worker.timeoutSeconds,
      access: worker.access,
      routes: [],
      worker,
    });
  }
  for (const streamWorker of streamWorkers) {
    if (specs.some((spec) => spec.name === streamWorker.function)) {
      throw new Error(
        `The stream worker ${streamWorker.function} has the folder of another function`,
      );
    }
    specs.push({
      name: streamWorker.function,
      group: WORKERS_GROUP,
      memoryMb: streamWorker.memoryMb,
      timeoutSeconds: streamWorker.timeoutSeconds,
      access: streamWorker.access,
      routes: [],
      streamWorker,
    });
  }
  return specs;
}

/** The groups of these functions, in the order they first appear. */
export function groupsOf(specs: readonly FunctionSpec[]): FunctionGroup[] {
  return [...new Set(specs.map((spec) => spec.group))];
}
