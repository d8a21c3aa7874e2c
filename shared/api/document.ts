import {
  createDocument,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
  type ZodOpenApiResponsesObject,
} from 'zod-openapi';
import { REGIONS, REGION_NAMES, type Region } from '../domain/regions.js';
import { EDGE_MAX_BODY_BYTES } from '../edge.js';
import { ROUTES, routeKey, type RouteDefinition } from '../routes.js';
import { ENDPOINTS, type Answer, type Endpoint, type Tag } from './endpoints.js';
import { ErrorEnvelope } from './schemas.js';

/**
 * The OpenAPI 3.1 document of the API, built from the routes table and the endpoints table
 * (`endpoints.ts`), whose zod schemas become JSON Schema (2020-12) through zod-openapi.
 * `npm run openapi` writes it to `docs/openapi.json`; the functions serve that file.
 */

export const DOCUMENT_PATH = 'docs/openapi.json';

/** What every error status means, as its component response says. */
const ERRORS: Record<number, string> = {
  400: 'Bad input: the message names the member and what was wrong; nothing was written',
  401: 'Missing or unknown API key',
  403: 'A feature or plan the instance does not have',
  404: 'Not found',
  409: 'A request with the same `Idempotency-Key` is still running (or the resource exists)',
  413: 'The body is over the endpoint’s size limit',
  421: 'The key belongs to an instance of another region: the message names its base address',
  422: 'An `Idempotency-Key` reused with another request',
  429: 'Rate limited (the key’s `rate_limit`, or the regional stage’s throttle): see `Retry-After`',
  431: 'Request headers over 10 KB',
  500: 'An invalid time zone in a date value (as the spec prescribes: `Internal Server Error`), or a fault',
  502: 'The endpoint failed to answer: retry later',
  503: 'The store or a queue stayed unavailable: see `Retry-After`; `details` says which records were applied',
  504: 'The endpoint did not answer in time: retry later',
};

const TAGS: { name: Tag; description: string }[] = [
  { name: 'People', description: 'Create, update and list people' },
  { name: 'Organizations', description: 'Organizations and the people linked to them' },
  {
    name: 'Accounts',
    description:
      'The organizations endpoints under the names newer clients use (`accounts`, `account_id`): the same operations and data',
  },
  { name: 'Activities', description: 'Behaviour events recorded against people' },
  { name: 'Transactional email', description: 'Send emails and follow what became of them' },
  {
    name: 'Asynchronous requests',
    description: 'Requests sent with `async: true`, applied by a worker',
  },
  {
    name: 'Instance',
    description: 'The instance’s configuration: its fields and activity definitions',
  },
  {
    name: 'Webhooks',
    description: 'Signed events sent to your endpoints as the instance’s data changes',
  },
  { name: 'Email links', description: 'The signed links inside sent emails (no key)' },
  { name: 'Service', description: 'Health and this documentation (no key)' },
  {
    name: 'Console',
    description:
      'The console’s own API: a signed-in user’s ID token, never an API key (docs/console.md)',
  },
];

/** The error statuses of a route: those of its kind, and its own. */
export function errorStatuses(route: RouteDefinition, endpoint: Endpoint): number[] {
  const statuses = new Set<number>([413, 429, 431, 500, 502, 504]);
  if (route.access.length > 0) statuses.add(503);
  if (route.auth) [400, 401, 421].forEach((status) => statuses.add(status));
  if (route.console) [400, 401].forEach((status) => statuses.add(status));
  if (route.method !== 'GET' && route.path.startsWith('/v1/')) {
    statuses.add(409);
    statuses.add(422);
  }
  for (const status of endpoint.errors ?? []) statuses.add(status);
  return [...statuses].sort((a, b) => a - b);
}

/** Whether answers of the route honour `Idempotency-Key`. */
function idempotent(route: RouteDefinition): boolean {
  return route.method !== 'GET' && route.path.startsWith('/v1/');
}

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

function answer(route: RouteDefinition, success: Answer): ZodOpenApiResponseObject {
  const headers: Record<string, { $ref: string }> = { 'X-Request-Id': header('RequestId') };
  if (idempotent(route)) headers['Idempotent-Replayed'] = header('IdempotentReplayed');
  for (const name of success.headers ?? []) headers[name] = header(name.replaceAll('-', ''));
  if (success.schema) {
    return {
      description: success.description,
      headers,
      content: {
        'application/json': {
          schema: success.schema,
          ...(success.example === undefined ? {} : { example: success.example }),
        },
      },
    };
  }
  return {
    description: success.description,
    headers,
    ...(success.content
      ? {
          content: {
            [success.content.type]: {
              schema: { type: 'string' as const, description: success.content.description },
            },
          },
        }
      : {}),
  };
}

function operation(route: RouteDefinition, endpoint: Endpoint): ZodOpenApiOperationObject {
  type Status = `${1 | 2 | 3 | 4 | 5}${string}`;
  const responses: ZodOpenApiResponsesObject = {};
  for (const [status, success] of Object.entries(endpoint.responses)) {
    responses[status as Status] = answer(route, success);
  }
  for (const status of errorStatuses(route, endpoint)) {
    responses[String(status) as Status] = { $ref: `#/components/responses/Error${status}` };
  }
  const limit =
    route.maxBodyBytes > 0 && route.method !== 'GET'
      ? ` Bodies over ${route.maxBodyBytes.toLocaleString('en-US')} bytes are refused (413).`
      : '';
  return {
    operationId: operationId(route),
    tags: [endpoint.tag],
    summary: endpoint.summary,
    description: `${endpoint.description}${limit}`,
    ...(route.console ? { security: [{ ConsoleSignIn: [] }] } : route.auth ? {} : { security: [] }),
    ...(idempotent(route)
      ? { parameters: [{ $ref: '#/components/parameters/IdempotencyKey' }] }
      : {}),
    ...(endpoint.query ? { requestParams: { query: endpoint.query } } : {}),
    ...(endpoint.request
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: endpoint.request,
                ...(endpoint.requestExample === undefined
                  ? {}
                  : { example: endpoint.requestExample }),
              },
            },
          },
        }
      : {}),
    responses,
  };
}

/** `POST /v1/person/get-by-ids` → `personGetByIds`; `GET /t/c` → `getTC`. */
export function operationId(route: Pick<RouteDefinition, 'method' | 'path'>): string {
  const words = route.path
    .replace(/^\/v1\//, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  const named = route.path.startsWith('/v1/')
    ? words
    : route.path.startsWith('/console/v1/')
      ? words.filter((word) => word !== 'v1')
      : [route.method.toLowerCase(), ...words];
  return named
    .map((word, index) =>
      index === 0 ? word.toLowerCase() : `${word[0]?.toUpperCase() ?? ''}${word.slice(1)}`,
    )
    .join('');
}

/** Routes of the routes table that the endpoints table does not describe (a test lists them). */
export function undocumentedRoutes(): string[] {
  return ROUTES.map(routeKey).filter((key) => !(key in ENDPOINTS));
}

export function buildDocument(baseUrls: Record<Region, string>) {
  const missing = undocumentedRoutes();
  if (missing.length > 0) {
    throw new Error(
      `No OpenAPI entry in shared/api/endpoints.ts for ${missing.join(', ')}: add one per route`,
    );
  }
  const paths: ZodOpenApiPathsObject = {};
  for (const route of ROUTES) {
    const endpoint = ENDPOINTS[routeKey(route)];
    if (!endpoint) continue;
    const item = (paths[route.path] ??= {});
    item[route.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete'] = operation(
      route,
      endpoint,
    );
  }
  const responses = Object.fromEntries(
    Object.entries(ERRORS).map(([status, description]) => [
      `Error${status}`,
      {
        description,
        headers: {
          'X-Request-Id': header('RequestId'),
          ...(status === '429' || status === '503' ? { 'Retry-After': header('RetryAfter') } : {}),
        },
        content: { 'application/json': { schema: ErrorEnvelope } },
      },
    ]),
  );
  return createDocument(
    {
      openapi: '3.1.0',
      info: {
        title: 'Customer data platform API',
        version: '1.0.0',
        description: [
          'People, organizations, activities and transactional email over HTTP/JSON.',
          '',
          'Every `/v1` call needs an `X-Api-Key` header and a JSON body (`Content-Type: application/json`). Each region is its own deployment with its own data: an instance uses its region’s address (a key of another region gets 421 naming it).',
          '',
          `Every error is \`{"request_id", "code", "error", "details"?}\` with \`code\` equal to the status and the same ID in \`X-Request-Id\`. Every \`POST\`/\`PUT\`/\`DELETE\` under \`/v1\` honours \`Idempotency-Key\`. No body may exceed ${EDGE_MAX_BODY_BYTES.toLocaleString('en-US')} bytes.`,
        ].join('\n'),
      },
      servers: REGIONS.map((region) => ({
        url: baseUrls[region],
        description: `${REGION_NAMES[region] === 'default' ? 'Default' : REGION_NAMES[region]} region`,
      })),
      tags: TAGS,
      security: [{ ApiKey: [] }],
      paths,
      components: {
        securitySchemes: {
          ApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Api-Key',
            description: 'The private key of a custom API data source',
          },
          ConsoleSignIn: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              'The ID token of a console sign-in (Amazon Cognito on AWS, the local issuer under npm start)',
          },
        },
        parameters: {
          IdempotencyKey: {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'Makes a retry safe: the first answer is kept 24 hours and replayed (with `Idempotent-Replayed: true`) to a repeat with the same body; 422 for another body, 409 while the first runs.',
            schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' },
          },
        },
        headers: {
          RequestId: {
            description: 'The request’s ID (also `request_id` of an error)',
            schema: { type: 'string' },
          },
          IdempotentReplayed: {
            description: '`true` when the answer is the one kept for the `Idempotency-Key`',
            schema: { type: 'string', enum: ['true'] },
          },
          RetryAfter: {
            description: 'Seconds to wait before retrying',
            schema: { type: 'string', pattern: '^[0-9]+$' },
          },
          Location: { description: 'Where the link leads', schema: { type: 'string' } },
          CacheControl: { description: 'Not to be cached', schema: { type: 'string' } },
          XNextCursor: {
            description:
              'Present when more may follow: the `cursor_id` of the next page (our addition)',
            schema: { type: 'string' },
          },
        },
        responses,
      },
    },
    { reused: 'inline' },
  );
}
