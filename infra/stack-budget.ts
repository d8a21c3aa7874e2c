import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The most resources any stack of the app may hold: CloudFormation refuses a stack above 500,
 * and a stack near it cannot take the next route. The app sets CDK's own limit to this
 * (`@aws-cdk/core:stackResourceLimit`), so `cdk synth` refuses a stack above it, and the infra
 * test `stack-budget.test.ts` reports each one with its largest resource types.
 */
export const STACK_RESOURCE_BUDGET = 400;

/** CloudFormation's own limits on a template's outputs and parameters. */
export const MAX_OUTPUTS = 200;
export const MAX_PARAMETERS = 200;

export interface StackSize {
  /** The template file, relative to the cloud assembly (nested stacks and stages included). */
  template: string;
  resources: number;
  outputs: number;
  parameters: number;
  /** Resource types by count, largest first. */
  types: [string, number][];
}

interface TemplateJson {
  Resources?: Record<string, { Type: string }>;
  Outputs?: Record<string, unknown>;
  Parameters?: Record<string, unknown>;
}

/** Every template of a synthesized cloud assembly, with its counts. */
export function stackSizes(assemblyDir: string, prefix = ''): StackSize[] {
  const sizes: StackSize[] = [];
  for (const entry of readdirSync(assemblyDir, { withFileTypes: true })) {
    const path = join(assemblyDir, entry.name);
    if (entry.isDirectory() && entry.name.startsWith('assembly-')) {
      sizes.push(...stackSizes(path, `${prefix}${entry.name}/`));
    } else if (entry.isFile() && entry.name.endsWith('.template.json')) {
      const template = JSON.parse(readFileSync(path, 'utf8')) as TemplateJson;
      const resources = Object.values(template.Resources ?? {});
      const types = new Map<string, number>();
      for (const { Type } of resources) types.set(Type, (types.get(Type) ?? 0) + 1);
      sizes.push({
        template: `${prefix}${entry.name}`,
        resources: resources.length,
        outputs: Object.keys(template.Outputs ?? {}).length,
        parameters: Object.keys(template.Parameters ?? {}).length,
        types: [...types].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
      });
    }
  }
  return sizes.sort((a, b) => a.template.localeCompare(b.template));
}

/**
 * What is over a limit, one line a stack: its template, its counts and its five largest
 * resource types (where the next split should go). Empty when every stack fits.
 */
export function overBudget(sizes: readonly StackSize[], budget = STACK_RESOURCE_BUDGET): string[] {
  return sizes
    .filter(
      (size) =>
        size.resources > budget || size.outputs > MAX_OUTPUTS || size.parameters > MAX_PARAMETERS,
    )
    .map(
      (size) =>
        `${size.template}: ${size.resources} resources (budget ${budget}), ${size.outputs} ` +
        `outputs, ${size.parameters} parameters; largest: ` +
        size.types
          .slice(0, 5)
          .map(([type, count]) => `${type} ${count}`)
          .join(', '),
    );
}
