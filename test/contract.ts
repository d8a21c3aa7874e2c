import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * The API's answers checked against its OpenAPI document (`docs/openapi.json`): the status
 * must be one the document gives the operation, a JSON body must match the schema of that
 * status (ajv, JSON Schema 2020-12, as OpenAPI 3.1 uses), and a body of another kind must be
 * of the media type documented. Paths the document does not have must answer the error
 * envelope with 404 or 405 (the fallback route). The integration suite's HTTP helpers run
 * every answer they receive through `checkAnswer`, so a handler cannot drift from its
 * description.
 */

const DOCUMENT_ID = 'https://cdp.example.com/openapi.json';

export type OpenApiDocument = {
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, ResponseObject>; schemas: Record<string, unknown> };
} & Record<string, unknown>;
interface Operation {
  responses: Record<string, ResponseObject | { $ref: string }>;
  requestBody?: { content: Record<string, MediaType> };
}
interface ResponseObject {
  description: string;
  content?: Record<string, MediaType>;
}
interface MediaType {
  schema?: unknown;
  example?: unknown;
}

export interface Answer {
  method: string;
  /** Path, with or without a query string. */
  path: string;
  status: number;
  contentType: string | null;
  /** The body as text. */
  text: string;
}

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => void;

const pointer = (...parts: string[]) =>
  parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export class ContractChecker {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(readonly document: OpenApiDocument) {
    // Not strict about keywords: the document holds OpenAPI members (`openapi`, `paths`, …) beside
    // its schemas, and the OpenAPI validator checks the document itself.
    this.ajv = new Ajv2020({ allErrors: true, strictSchema: false });
    addFormats(this.ajv);
    this.ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  }

  /** A validator of the schema at a JSON pointer of the document (`#/components/…`). */
  validator(fragment: string): ValidateFunction {
    let validate = this.compiled.get(fragment);
    if (!validate) {
      const found = this.ajv.getSchema(`${DOCUMENT_ID}#${fragment}`);
      if (!found) throw new Error(`No schema at ${fragment} in the OpenAPI document`);
      validate = found;
      this.compiled.set(fragment, validate);
    }
    return validate;
  }

  /** What is wrong with `value` as an instance of the schema at `fragment` (empty: nothing). */
  problems(fragment: string, value: unknown): string[] {
    const validate = this.validator(fragment);
    if (validate(value)) return [];
    return (validate.errors ?? []).map(
      (error) => `${error.instancePath || '(body)'} ${error.message ?? 'is invalid'}`,
    );
  }

  /** The problems of an answer with the document (empty when it matches). */
  check(answer: Answer): string[] {
    const path = answer.path.split('?')[0] ?? answer.path;
    const method = answer.method.toLowerCase();
    const operation = this.document.paths[path]?.[method];
    if (!operation) {
      if (answer.status !== 404 && answer.status !== 405) {
        return [
          `${answer.status} for a path and method the document does not have (only 404 or 405 can be): a new route needs its entry in shared/api/endpoints.ts, then \`npm run openapi\``,
        ];
      }
      return this.checkJson(answer, '/components/schemas/Error');
    }
    const documented = operation.responses[String(answer.status)];
    if (!documented) {
      return [
        `status ${answer.status} is not documented (documented: ${Object.keys(operation.responses).join(', ')})`,
      ];
    }
    const [location, response] =
      '$ref' in documented
        ? [
            documented.$ref.slice(1),
            this.document.components.responses[documented.$ref.split('/').at(-1) ?? ''],
          ]
        : [pointer('', 'paths', path, method, 'responses', String(answer.status)), documented];
    if (!response) return [`no response object at ${location}`];
    const media = (answer.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const content = response.content ?? {};
    if (Object.keys(content).length === 0) return [];
    if (!(media in content)) {
      return [`content type "${media}" is not documented (${Object.keys(content).join(', ')})`];
    }
    if (media !== 'application/json') return [];
    return this.checkJson(answer, `${location}/${pointer('content', media, 'schema')}`);
  }

  private checkJson(answer: Answer, fragment: string): string[] {
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      return [`the body is not JSON: ${answer.text.slice(0, 200)}`];
    }
    return this.problems(fragment, body);
  }
}

let shared: ContractChecker | undefined;

/** The checker of the committed document, built once per test file. */
export function contract(): ContractChecker {
  shared ??= new ContractChecker(
    JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as OpenApiDocument,
  );
  return shared;
}

/** Throws, naming the call and every problem, when an answer does not match the document. */
export function checkAnswer(answer: Answer): void {
  const problems = contract().check(answer);
  if (problems.length > 0) {
    throw new Error(
      `The answer to ${answer.method.toUpperCase()} ${answer.path} (${answer.status}) does not match docs/openapi.json:\n  ${problems.join('\n  ')}\nbody: ${answer.text.slice(0, 1000)}`,
    );
  }
}

/**
 * `fetch` for calls to the API: the answer is checked against the document before it is
 * returned (its body can still be read). Takes what `fetch` takes, a `Request` included (as
 * openapi-fetch, the typed client's transport, sends).
 */
export async function checkedFetch(input: string | Request, init: RequestInit = {}) {
  const response = await fetch(input, init);
  const text = await response.clone().text();
  checkAnswer({
    method: init.method ?? (typeof input === 'string' ? 'GET' : input.method),
    path: new URL(typeof input === 'string' ? input : input.url).pathname,
    status: response.status,
    contentType: response.headers.get('content-type'),
    text,
  });
  return response;
}
