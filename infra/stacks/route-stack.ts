import { NestedStack, type NestedStackProps } from 'aws-cdk-lib';
import { AwsIntegration, Resource, RestApi, type IResource } from 'aws-cdk-lib/aws-apigateway';
import type { IRestApi } from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import { parentPath, type AreaRoutes } from './route-layout.js';

/**
 * How every method of the API reaches its function: a Lambda proxy integration. The invoke
 * permission is left to the function's own stack (`FunctionStack`, one per route it serves):
 * `LambdaIntegration` would add it beside the method. Part of the deployment's hash
 * (`ApiStack`), so a change here redeploys the stage.
 */
export const LAMBDA_PROXY = { proxy: true, service: 'lambda' } as const;

export function lambdaProxy(fn: IFunction): AwsIntegration {
  return new AwsIntegration({
    ...LAMBDA_PROXY,
    path: `2015-03-31/functions/${fn.functionArn}/invocations`,
  });
}

export interface RouteStackProps extends NestedStackProps {
  region: Region;
  /** This area's routes and paths (`routeLayout`). */
  area: AreaRoutes;
  /** The REST API, which the API stack holds. */
  api: IRestApi;
  /** The shared resources of the API stack by path, `/` its root: what this area hangs from. */
  shared: ReadonlyMap<string, IResource>;
  /** The function of a folder (in the functions stack of this group). */
  functionOf: (name: string) => IFunction;
  /** The function behind every other method of a path (405), in the `public` group. */
  fallback: IFunction;
}

/**
 * One area's part of the REST API (`routes-<group>`): the path resources that only its routes
 * use, each with its fallback method (`ANY`), and the method of each of its routes. The REST
 * API, its shared paths, deployment and stage stay in the API stack, which imports nothing
 * from here: it only waits for this stack before it deploys the stage.
 */
export class RouteStack extends NestedStack {
  constructor(scope: Construct, id: string, props: RouteStackProps) {
    super(scope, id, {
      ...props,
      description: `Customer data platform API, ${props.region} region: the ${props.area.group} routes`,
    });
    const api = RestApi.fromRestApiId(this, 'api', props.api.restApiId);
    const resources = new Map<string, IResource>();
    for (const path of props.area.attachments) {
      const shared = props.shared.get(path);
      if (!shared) throw new Error(`The API stack holds no resource ${path}`);
      // Named by the path, so that the resources hanging from it are (`v1person…`).
      resources.set(
        path,
        Resource.fromResourceAttributes(
          this,
          path === '/' ? 'root' : path.slice(1).replace(/\//g, '-'),
          {
            restApi: api,
            resourceId: shared.resourceId,
            path,
          },
        ),
      );
    }
    const resourceAt = (path: string): IResource => {
      const resource = resources.get(path);
      if (!resource) throw new Error(`No resource ${path} in the ${props.area.group} routes`);
      return resource;
    };
    const fallback = lambdaProxy(props.fallback);
    for (const path of props.area.paths) {
      const resource = resourceAt(parentPath(path)).addResource(
        path.slice(path.lastIndexOf('/') + 1),
      );
      resources.set(path, resource);
      // The other methods of a known path: 405 from the fallback function.
      resource.addMethod('ANY', fallback);
    }
    for (const route of props.area.routes) {
      resourceAt(route.path).addMethod(route.method, lambdaProxy(props.functionOf(route.function)));
    }

    NagSuppressions.addStackSuppressions(this, [
      {
        id: 'AwsSolutions-APIG4',
        reason: 'Requests are authenticated by API key inside every function (spec: X-Api-Key).',
      },
      {
        id: 'AwsSolutions-COG4',
        reason: 'The API authenticates callers by the spec’s X-Api-Key, not Cognito users.',
      },
    ]);
  }
}
