import middy, { type MiddlewareObj } from '@middy/core';
import httpEventNormalizer from '@middy/http-event-normalizer';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import httpSecurityHeaders from '@middy/http-security-headers';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import type { z } from 'zod';
import { z as zod } from 'zod';
import { readEnv } from '../config/env.js';
import { PayloadTooLargeError, ValidationError } from '../domain/errors.js';
import type { Tenant } from '../domain/tenancy.js';
import type { ConsoleUser } from '../domain/console/console-user.js';
import { bearerTokenOf, type ConsoleVerifier } from '../adapters/console-tokens.js';
import { parseWith } from '../domain/validation.js';
import { logger } from '../lib/logger.js';
import { currentDeadline, withDeadline } from '../lib/time-budget.js';
import { routeKey, type RouteDefinition, type RouteKey } from '../routes.js';
import { checkJsonDepth, checkWellFormedText } from './body-checks.js';
import { errorResponse } from './error-mapper.js';
import { idempotencyKeyOf, runIdempotent, type IdempotencyStore } from './idempotency.js';
import { json, type HttpResponse } from './responses.js';

/**
 * The one middy stack of every HTTP function, in middy's recommended order:
 * header and event normalizers, the body guard (413/415 before anything is parsed),
 * authentication, the JSON body parser, security headers, and the error envelope last
 * (so its `onError` runs first and every later `onError` sees a response).
 */
/** Resolves a request's key to its tenant; `sourceIp` limits the unknown keys an address tries. */
export type Authenticator = (apiKey: string | undefined, sourceIp?: string) => Promise<Tenant>;

interface ApiContext extends Context {
  tenant?: Tenant;
  /** The console's signed-in user (console routes: `consoleHandler`). */
  user?: ConsoleUser;
}

type Event = APIGatewayProxyEvent;
type Middleware = MiddlewareObj<Event, HttpResponse, Error, ApiContext>;

export interface HandlerResult<B = unknown> {
  status?: number;
  body: B;
  headers?: Record<string, string>;
}

export interface ApiInput<B> {
  body: B;
  tenant: Tenant;
  requestId: string;
}

/**
 * What the runtime calls: API Gateway (REST API, Lambda proxy, payload format 1.0) and the
 * local server alike. REST rather than HTTP API because only REST lets every error the
 * gateway answers itself (oversized bodies, throttling, integration failures) be the error
 * envelope, and lets WAF refuse bodies a Lambda invocation could not carry (`shared/edge.ts`).
 */
export type HttpHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<HttpResponse>;

/**
 * middy types the event as the union of what its event normalizer accepts (v1 and v2
 * payloads); the functions are deployed behind a REST API (v1) only, hence the narrowing.
 */
export function asHttpHandler(handler: (event: never, context: never) => Promise<HttpResponse>) {
  return handler as HttpHandler;
}

/**
 * The time budget of a request: what the function has left (API Gateway's own limit is 30
 * s), capped by `CDP_REQUEST_BUDGET_MS` where set, minus the time kept to answer. Retries of
 * store calls stop at the deadline, and a call under way then ends `CALL_GRACE_MS` after it
 * at the latest (aws-clients.ts), so a request answers (503 if the store stays unavailable)
 * before the function or the gateway gives up.
 */
const ANSWER_MARGIN_MS = 2_000;
const { CDP_REQUEST_BUDGET_MS: budgetCapMs } = readEnv(
  zod.object({ CDP_REQUEST_BUDGET_MS: zod.coerce.number().int().min(100).max(900_000).optional() }),
);

function deadlineOf(context: Context): number {
  const remaining =
    typeof context.getRemainingTimeInMillis === 'function'
      ? context.getRemainingTimeInMillis()
      : 30_000;
  const budget = Math.min(remaining - ANSWER_MARGIN_MS, budgetCapMs ?? Number.POSITIVE_INFINITY);
  return Date.now() + Math.max(budget, 0);
}

/** Runs every middleware and the handler within the request's deadline. */
export function withRequestBudget(handler: HttpHandler): HttpHandler {
  return (event, context) => withDeadline(deadlineOf(context), () => handler(event, context));
}

/** API Gateway's request ID: the one its access logs carry. */
export function requestIdOf(event: Event): string {
  return event.requestContext.requestId;
}

function bodyBytes(event: Event): number {
  if (event.body === null) return 0;
  return Buffer.byteLength(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
}

/**
 * Refuses oversized bodies before they are read. Every body is read as JSON whatever its
 * Content-Type says (clients are asked to send `application/json`; a forgotten header, as
 * with curl's default, is not worth refusing a well-formed request for).
 */
function bodyGuard(route: RouteDefinition): Middleware {
  return {
    before: ({ event }) => {
      if (bodyBytes(event) > route.maxBodyBytes) throw new PayloadTooLargeError(route.maxBodyBytes);
    },
  };
}

/**
 * A request without a body is read as `{}`: the real API documents several endpoints as
 * taking none, and clients send none (or an empty one). Where a member is required, the
 * validation then names it, as for any body that lacks it.
 */
function emptyBodyAsObject(): Middleware {
  return {
    before: ({ event }) => {
      if (event.body === null || event.body.trim() === '') {
        event.body = '{}';
        event.isBase64Encoded = false;
      }
    },
  };
}

/** Refuses bodies nested too deep to parse safely, with a message saying so (body-checks.ts). */
function jsonDepthGuard(): Middleware {
  return {
    before: ({ event }) => {
      if (typeof event.body !== 'string') return;
      checkJsonDepth(
        event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body,
      );
    },
  };
}

function authentication(authenticate: Authenticator): Middleware {
  return {
    before: async (request) => {
      request.context.tenant = await authenticate(
        request.event.headers['x-api-key'],
        request.event.requestContext.identity.sourceIp,
      );
    },
  };
}

/** The console's routes: the signed-in user's ID token instead of a key (`consoleHandler`). */
function signIn(verify: ConsoleVerifier): Middleware {
  return {
    before: async (request) => {
      request.context.user = await verify(bearerTokenOf(request.event.headers.authorization));
    },
  };
}

function errorEnvelope(): Middleware {
  return {
    after: (request) => {
      if (request.response) {
        request.response.headers['x-request-id'] = requestIdOf(request.event);
      }
    },
    onError: (request) => {
      request.response = errorResponse(
        request.error,
        requestIdOf(request.event),
        true,
        request.event.headers['x-api-key'] ?? undefined,
        // Still the text when the parser refused it; read only for that answer.
        () =>
          typeof request.event.body === 'string' && request.event.isBase64Encoded
            ? Buffer.from(request.event.body, 'base64').toString('utf8')
            : request.event.body,
      );
    },
  };
}

/**
 * Every log line of a request carries the Lambda context and API Gateway's request ID (the
 * one the response, the error envelope and the access logs carry), reset between requests.
 */
function requestLogging(): Middleware {
  return {
    before: ({ event }) => {
      logger.appendKeys({ request_id: requestIdOf(event) });
    },
  };
}

/** A Content-Security-Policy as middy's security headers take it (`false` drops a directive). */
export type ContentSecurityPolicy = Record<string, string | false>;

/**
 * The policy of the public links' pages and images: nothing loads, forms post to themselves,
 * sandboxed. Not upgraded to https: the local stack serves http (AWS serves https only anyway).
 */
const LINK_PAGE_POLICY: ContentSecurityPolicy = {
  'default-src': "'none'",
  'style-src': "'unsafe-inline'",
  'form-action': "'self'",
  sandbox: 'allow-forms allow-same-origin',
  'upgrade-insecure-requests': false,
};

export function httpStack(
  route?: RouteDefinition,
  authenticate?: Authenticator,
  jsonBody = true,
  pagePolicy: ContentSecurityPolicy = LINK_PAGE_POLICY,
  verifyUser?: ConsoleVerifier,
) {
  const handler = middy<Event, HttpResponse, Error, ApiContext>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(requestLogging())
    .use(httpHeaderNormalizer())
    .use(httpEventNormalizer());
  if (route) handler.use(bodyGuard(route));
  if (authenticate) handler.use(authentication(authenticate));
  if (verifyUser) handler.use(signIn(verifyUser));
  if (route && route.method !== 'GET' && jsonBody) {
    handler
      .use(emptyBodyAsObject())
      .use(jsonDepthGuard())
      .use(httpJsonBodyParser({ disableContentTypeCheck: true }));
  }
  // The public links answer small pages whose button posts back to the same address, and the
  // open pixel, which mail clients of any origin embed: `same-origin` would have browsers
  // refuse the image (the redirect and the pages are navigations, which this header spares).
  const headers = jsonBody
    ? httpSecurityHeaders()
    : httpSecurityHeaders({
        crossOriginResourcePolicy: { policy: 'cross-origin' },
        // middy drops a directive whose value is falsy (its types say string only).
        contentSecurityPolicy: pagePolicy as Record<string, string>,
      });
  return handler.use(headers).use(errorEnvelope());
}

/**
 * An authenticated JSON endpoint: the body is validated by `body` before `run` sees it, and
 * `run` answers what `response` (the schema the OpenAPI document gives its success, from
 * `shared/api/schemas.ts`) describes. `POST`/`PUT` endpoints honour `Idempotency-Key` through
 * `idempotency`.
 */
export function apiHandler<S extends z.ZodType, R extends z.ZodType = z.ZodUnknown>(
  route: RouteDefinition,
  options: {
    authenticate: Authenticator;
    body: S;
    response?: R;
    idempotency?: IdempotencyStore;
    /** Charges the tenant's key for the time its request took (rate-limit.ts, `charge`). */
    charge?: (tenant: Tenant, elapsedMs: number) => Promise<void>;
    /**
     * What a repeat with the same `Idempotency-Key` answers instead of the answer itself (an
     * answer that shows a secret once: the secret is never kept).
     */
    keptAnswer?: (body: Record<string, unknown>) => Record<string, unknown>;
  },
  run: (input: ApiInput<z.infer<S>>) => Promise<HandlerResult<z.infer<R>>>,
): HttpHandler {
  if (route.method !== 'GET' && route.path.startsWith('/v1/') && !options.idempotency) {
    throw new Error(`${routeKey(route)} needs an idempotency store (REQUESTS_TABLE)`);
  }
  const handler = httpStack(route, options.authenticate).handler(async (event, context) => {
    const { tenant } = context;
    if (!tenant) throw new Error('authentication middleware did not run');
    const raw: unknown = event.body;
    if (route.method !== 'GET' && (typeof raw !== 'object' || raw === null || Array.isArray(raw))) {
      throw new ValidationError('The request body must be a JSON object', [
        { field: 'body', error: 'expected a JSON object' },
      ]);
    }
    if (raw) checkWellFormedText(raw);
    const requestId = requestIdOf(event);
    const started = Date.now();
    const answer = async () => {
      const body = parseWith(options.body, raw ?? {}, 'request body');
      try {
        const result = await run({ body, tenant, requestId });
        return json(result.status ?? 200, result.body, result.headers);
      } finally {
        // What the request cost, whatever it answered; a replayed answer costs nothing more.
        await options.charge?.(tenant, Date.now() - started);
      }
    };
    const key = route.method === 'GET' ? undefined : idempotencyKeyOf(event.headers);
    if (key === undefined || !options.idempotency) return answer();
    return runIdempotent(
      {
        store: options.idempotency,
        instanceId: tenant.instance.id,
        dataSource: tenant.dataSource.name,
        key,
        route: routeKey(route),
        body: raw,
        requestId,
        secret: event.headers['x-api-key'] ?? undefined,
        leaseUntil: currentDeadline() + ANSWER_MARGIN_MS,
        ...(options.keptAnswer
          ? {
              keep: (text: string) =>
                JSON.stringify(options.keptAnswer?.(JSON.parse(text) as Record<string, unknown>)),
            }
          : {}),
      },
      answer,
    );
  });
  return withRequestBudget(asHttpHandler(handler));
}

/**
 * One handler module behind several routes: the same operation under two sets of names
 * (`/v1/organizations/…` and `/v1/accounts/…`). Each route is a function of its own, built
 * from the module; a request is answered by the handler of the route it came by (API
 * Gateway's `resource`, which the local server sets the same way).
 */
export function routeHandlers(handlers: Partial<Record<RouteKey, HttpHandler>>): HttpHandler {
  return (event, context) => {
    const handler = handlers[`${event.httpMethod.toUpperCase()} ${event.resource}` as RouteKey];
    if (!handler) throw new Error(`no handler for ${event.httpMethod} ${event.resource}`);
    return handler(event, context);
  };
}

/** An endpoint that needs no key and reads no body (health, the fallback route). */
export function publicHandler(run: (event: Event) => Promise<HandlerResult>): HttpHandler {
  const handler = httpStack().handler(async (event) => {
    const result = await run(event);
    return json(result.status ?? 200, result.body, result.headers);
  });
  return withRequestBudget(asHttpHandler(handler));
}

/**
 * A public route of the routes table (no key, body not parsed): the signed links of emails.
 * `run` answers the whole response (a redirect, a page, an image); errors are the envelope.
 */
export function publicRoute(
  route: RouteDefinition,
  run: (event: Event) => Promise<HttpResponse>,
  options: { contentSecurityPolicy?: ContentSecurityPolicy } = {},
): HttpHandler {
  const handler = httpStack(route, undefined, false, options.contentSecurityPolicy).handler(run);
  return withRequestBudget(asHttpHandler(handler));
}
