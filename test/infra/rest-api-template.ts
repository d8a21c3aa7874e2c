import { Stack, type CfnElement, type NestedStack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { ApiStack } from '../../infra/stacks/api-stack.js';

/**
 * The REST API of a synthesized API stack as CloudFormation will build it, read from the
 * templates of the API stack and its routes stacks: each path resource and method with the
 * stack that holds it, the path it is on, and the function it invokes. A routes stack names
 * what the API stack holds (`/v1`, the root) and the functions by its parameters; those are
 * followed to the values the API stack passes.
 */
export interface ApiPathResource {
  /** `api` for the API stack, else the routes stack's ID (`routes-people`). */
  stack: string;
  logicalId: string;
  path: string;
}

export interface ApiMethod extends ApiPathResource {
  httpMethod: string;
  /** The functions stack output that gives the ARN the method invokes (`cdp…function…Arn`). */
  invokes: string;
}

interface TemplateJson {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
}

type Expression = unknown;

export function logicalIdOf(element: CfnElement): string {
  return Stack.of(element).resolve(element.logicalId) as string;
}

/** The parameters the API stack passes to a nested stack. */
function parametersOf(parent: TemplateJson, nested: NestedStack): Record<string, Expression> {
  if (!nested.nestedStackResource) throw new Error(`${nested.node.id} has no stack resource`);
  const resource = parent.Resources[logicalIdOf(nested.nestedStackResource)];
  return (resource?.Properties?.Parameters ?? {}) as Record<string, Expression>;
}

/** How a nested template's parameters are read: their values, and the paths they name. */
interface Outer {
  value: (parameter: string) => Expression;
  pathOf: (expression: Expression) => string;
}

/** Reads the resources and methods of one template (a nested one through `outer`). */
function read(
  stack: string,
  template: TemplateJson,
  outer?: Outer,
): { resources: ApiPathResource[]; methods: ApiMethod[]; pathOf: (e: Expression) => string } {
  const resolve = (parameter: string): Expression => {
    if (!outer) throw new Error(`The API stack has no resource ${parameter}`);
    return outer.value(parameter);
  };
  const pathOf = (expression: Expression): string => {
    const value = expression as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
    if (value['Fn::GetAtt']?.[1] === 'RootResourceId') return '/';
    const ref = value.Ref;
    if (ref === undefined) throw new Error(`Not a resource: ${JSON.stringify(expression)}`);
    const resource = template.Resources[ref];
    if (!resource) {
      if (!outer) throw new Error(`The API stack has no resource ${ref}`);
      return outer.pathOf(outer.value(ref));
    }
    const { ParentId, PathPart } = resource.Properties as {
      ParentId: Expression;
      PathPart: string;
    };
    const parent = pathOf(ParentId);
    return `${parent === '/' ? '' : parent}/${PathPart}`;
  };
  const invoked = (uri: Expression): string => {
    const text = JSON.stringify(uri).replace(/\{"Ref":"([^"]+)"\}/g, (whole, ref: string) =>
      ref in template.Resources || ref.startsWith('AWS::') ? whole : JSON.stringify(resolve(ref)),
    );
    return /"Outputs\.(cdp[A-Za-z0-9]+Arn)"/.exec(text)?.[1] ?? '';
  };
  const resources: ApiPathResource[] = [];
  const methods: ApiMethod[] = [];
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (resource.Type === 'AWS::ApiGateway::Resource') {
      resources.push({ stack, logicalId, path: pathOf({ Ref: logicalId }) });
    } else if (resource.Type === 'AWS::ApiGateway::Method') {
      const properties = resource.Properties as {
        HttpMethod: string;
        ResourceId: Expression;
        Integration: { Uri: Expression };
      };
      methods.push({
        stack,
        logicalId,
        path: pathOf(properties.ResourceId),
        httpMethod: properties.HttpMethod,
        invokes: invoked(properties.Integration.Uri),
      });
    }
  }
  return { resources, methods, pathOf };
}

/** Every path resource and method of the stack's REST API, with the stack holding it. */
export function restApiOf(apiStack: ApiStack): {
  resources: ApiPathResource[];
  methods: ApiMethod[];
} {
  const parent = Template.fromStack(apiStack).toJSON() as TemplateJson;
  const top = read('api', parent);
  const parts = [top];
  for (const nested of apiStack.routeStacks) {
    const parameters = parametersOf(parent, nested);
    const template = Template.fromStack(nested).toJSON() as TemplateJson;
    parts.push(
      read(nested.node.id, template, {
        value: (name) => {
          if (!(name in parameters)) throw new Error(`${nested.node.id} is given no ${name}`);
          return parameters[name];
        },
        pathOf: top.pathOf,
      }),
    );
  }
  return {
    resources: parts.flatMap((part) => part.resources),
    methods: parts.flatMap((part) => part.methods),
  };
}
