import { Liquid, type Template } from 'liquidjs';
import type { FieldCatalog, FieldDefinition } from '../fields/field-catalog.js';
import { textOf, type FieldValue } from '../fields/field-values.js';
import type { Person } from '../people/person.js';

/**
 * Liquid for email subjects and bodies (DESIGN.md, Transactional email). Templates are
 * customer input: no file system, no includes, unknown filters refused, and limits on what
 * templates may cost: size and number of tags to parse, memory, and time. Time is one budget
 * for the whole request (`RenderBudget`), spent by every render of every recipient, each
 * render taking at most a slice of it, so that one request cannot hold a function for long,
 * nor, on a shared process, stall other requests for more than a slice. A template that
 * fails fails its recipient, not the request.
 */
export const LIQUID_LIMITS = {
  /** Of one template, in characters (html_body's own limit is in bytes). */
  parseCharacters: 1_048_576,
  /** Tags and outputs (`{% … %}`, `{{ … }}`) in one template: bounds the time to parse it. */
  tags: 2_000,
  /** Rendering time of one request, all recipients and templates together. */
  requestMs: 3_000,
  /**
   * Rendering time of one render (one template for one recipient): also the longest a
   * template holds a shared process (locally, every route of a region) from other requests.
   */
  renderMs: 25,
  /** Memory one render may allocate (liquidjs's count). */
  memory: 20_000_000,
} as const;

const limits = {
  strictFilters: true,
  strictVariables: false,
  ownPropertyOnly: true,
  // No file system: {% include %}, {% render %} and {% layout %} find nothing.
  relativeReference: false,
  templates: {},
  parseLimit: LIQUID_LIMITS.parseCharacters,
  renderLimit: LIQUID_LIMITS.renderMs,
  memoryLimit: LIQUID_LIMITS.memory,
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

/** How many tags and outputs a template holds (an upper bound: it counts their openings). */
function tagCount(source: string): number {
  let count = 0;
  for (let at = source.indexOf('{'); at !== -1; at = source.indexOf('{', at + 1)) {
    const next = source[at + 1];
    if (next === '{' || next === '%') {
      count += 1;
      at += 1;
    }
  }
  return count;
}

/** Parses a template once per request; the error says where the template is wrong. */
export function parseTemplate(source: string, kind: keyof typeof engines = 'text'): ParsedTemplate {
  const tags = tagCount(source);
  if (tags > LIQUID_LIMITS.tags) {
    throw new TemplateError(
      `template error: the template holds ${tags} tags and outputs; at most ${LIQUID_LIMITS.tags} are allowed`,
    );
  }
  try {
    return { kind, templates: engines[kind].parse(source) };
  } catch (error) {
    throw new TemplateError(`template error: ${(error as Error).message}`);
  }
}

/**
 * The rendering time of one request: each render takes what it needs, up to the slice and
 * what is left; once it is spent, every render left fails at once. A render that overruns
 * its slice is tried once more (a pause of the machine, a garbage collection or code not yet
 * compiled can hold a quick template past 25 ms): only a template that overruns twice fails.
 */
export class RenderBudget {
  static readonly attempts = 2;
  private spentMs = 0;

  constructor(
    readonly totalMs: number = LIQUID_LIMITS.requestMs,
    readonly sliceMs: number = LIQUID_LIMITS.renderMs,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  get remainingMs(): number {
    return Math.max(0, this.totalMs - this.spentMs);
  }

  async render(template: ParsedTemplate, variables: Record<string, unknown>): Promise<string> {
    if (this.remainingMs <= 0) {
      throw new TemplateError(
        `template error: not rendered: the request's templates took their ${this.totalMs} ms in all`,
      );
    }
    for (let attempt = 1; ; attempt += 1) {
      const allowed = Math.min(this.sliceMs, this.remainingMs);
      const outcome = await this.attempt(template, variables, allowed);
      if (typeof outcome === 'string') return outcome;
      if (!outcome.overran || attempt >= RenderBudget.attempts || this.remainingMs <= 0) {
        throw outcome.overran
          ? new TemplateError(
              `template error: rendering took longer than ${Math.round(allowed)} ms (a render may take ${this.sliceMs} ms, a request's templates ${this.totalMs} ms in all)`,
            )
          : new TemplateError(`template error: ${outcome.error.message}`);
      }
    }
  }

  /** One render within `allowed` ms: its text, or why it failed. */
  private async attempt(
    template: ParsedTemplate,
    variables: Record<string, unknown>,
    allowed: number,
  ): Promise<string | { overran: boolean; error: Error }> {
    // liquidjs renders without giving the event loop back: other requests of a shared
    // process run between renders, so none waits for more than one slice.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const started = this.clock();
    try {
      return String(
        await engines[template.kind].render(template.templates, variables, {
          renderLimit: allowed,
        }),
      );
    } catch (error) {
      return { overran: this.clock() - started >= allowed, error: error as Error };
    } finally {
      this.spentMs += this.clock() - started;
    }
  }
}

/** Renders one template alone (a budget of its own). */
export function renderTemplate(
  template: ParsedTemplate,
  variables: Record<string, unknown>,
  budget: RenderBudget = new RenderBudget(),
): Promise<string> {
  return budget.render(template, variables);
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
