import { Liquid, type Template } from 'liquidjs';
import type { FieldCatalog, FieldDefinition } from '../fields/field-catalog.js';
import { textOf, type FieldValue } from '../fields/field-values.js';
import type { Person } from '../people/person.js';

/**
 * Liquid for email subjects and bodies (DESIGN.md, Transactional email). Templates are
 * customer input: no file system, no includes, unknown filters refused, and limits on what
 * one template may cost to parse and render (size, time, memory). A template that fails
 * fails its recipient, not the request.
 */
const limits = {
  strictFilters: true,
  strictVariables: false,
  ownPropertyOnly: true,
  // No file system: {% include %}, {% render %} and {% layout %} find nothing.
  relativeReference: false,
  templates: {},
  parseLimit: 1_000_000,
  renderLimit: 1_000,
  memoryLimit: 20_000_000,
};
/**
 * Bodies are HTML: every output is escaped (a person's name cannot inject markup or links);
 * `| raw` prints trusted HTML of the sender's own `json` values as it is. Subjects are text.
 */
const engines = {
  html: new Liquid({ ...limits, outputEscape: 'escape' }),
  text: new Liquid(limits),
};

export class TemplateError extends Error {}

export interface ParsedTemplate {
  kind: keyof typeof engines;
  templates: Template[];
}

/** Parses a template once per request; the error says where the template is wrong. */
export function parseTemplate(source: string, kind: keyof typeof engines = 'text'): ParsedTemplate {
  try {
    return { kind, templates: engines[kind].parse(source) };
  } catch (error) {
    throw new TemplateError(`template error: ${(error as Error).message}`);
  }
}

export async function renderTemplate(
  template: ParsedTemplate,
  variables: Record<string, unknown>,
): Promise<string> {
  try {
    return String(await engines[template.kind].render(template.templates, variables));
  } catch (error) {
    throw new TemplateError(`template error: ${(error as Error).message}`);
  }
}

/** `First name` → `first-name`: the Liquid name of a built-in field. */
export function liquidName(field: Pick<FieldDefinition, 'custom' | 'name' | 'label'>): string {
  if (field.custom) return field.name;
  return field.label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/**
 * What a template sees of a value: scalars as they are (decimal, currency and price fields
 * as the number they stand for, 64280 as 64.28), the options of a multi-select and the
 * members of an object as such (so that `for` and `.member` work), anything else as text.
 */
function display(value: FieldValue, field: FieldDefinition): unknown {
  if (typeof value === 'number' && field.scale) return value / field.scale;
  if (typeof value !== 'object' || Array.isArray(value) || field.type === 'obj') return value;
  return textOf(value);
}

/**
 * `people.<liquid name>` of every built-in field the person holds, `people.custom.<name>` of
 * custom ones, and `people.id`.
 */
export function personVariables(person: Person, catalog: FieldCatalog): Record<string, unknown> {
  const custom: Record<string, unknown> = {};
  const people: Record<string, unknown> = { id: person.id, custom };
  for (const [id, value] of Object.entries(person.fields)) {
    const field = catalog.get(id);
    if (!field) continue;
    if (field.custom) custom[field.name] = display(value, field);
    else people[liquidName(field)] = display(value, field);
  }
  return people;
}

/**
 * `json.<key>`: the request's `static_json_values` overlaid with the entry's `json_values`;
 * a key with underscores is also readable with hyphens (`order_id` as `order-id`).
 */
export function jsonVariables(
  ...sources: (Record<string, unknown> | undefined)[]
): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const source of sources) {
    for (const [key, value] of Object.entries(source ?? {})) {
      setOwn(json, key, value);
      if (key.includes('_')) setOwn(json, key.replace(/_/g, '-'), value);
    }
  }
  return json;
}

/** Sets a property as data, even one named `__proto__` (client keys are data, never prototypes). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}
