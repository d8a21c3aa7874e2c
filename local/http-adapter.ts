import type { SiteAnswer } from './console-site.js';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import {
  EDGE_ERRORS,
  EDGE_MAX_BODY_BYTES,
  GATEWAY_MAX_BODY_BYTES,
  GATEWAY_MAX_HEADER_BYTES,
  LAMBDA_MAX_EVENT_BYTES,
  STAGE_NAME,
  numbersAbove,
} from '../shared/edge.js';
import type { HttpHandler } from '../shared/http/api-handler.js';
import { envelope } from '../shared/http/error-mapper.js';
import { matchRoute, type RouteDefinition } from '../shared/routes.js';

/**
 * Plays the AWS edge in front of the same handler modules the Lambda functions run, with the
 * same limits and answers (`shared/edge.ts`): the WAF rule on `Content-Length`, API Gateway's
 * 10 MB and header caps, the Lambda invocation's 6 MB, then a REST API proxy event (payload
 * 1.0, every body base64 as the API's binary media type `*\/*` makes it) to the handler.
 * Routing follows the routes table; what matches no route goes to the fallback handler, as
 * the REST API's `ANY` methods and `{proxy+}` resource do.
 */

export interface RegionHandlers {
  routes: Map<RouteDefinition, HttpHandler>;
  fallback: HttpHandler;
  /** The console's pages (`/console/…`), as CloudFront serves them on AWS. */
  site?: (method: string, pathname: string) => SiteAnswer | undefined;
}

type EdgeError = (typeof EDGE_ERRORS)[keyof typeof EDGE_ERRORS];

class EdgeRefusal extends Error {
  constructor(readonly answer: EdgeError) {
    super(answer.message);
  }
}

const OVER_EDGE_LIMIT = new RegExp(numbersAbove(EDGE_MAX_BODY_BYTES));

/** The WAF rule: a body must come with a `Content-Length` of at most the edge limit. */
function checkAtTheEdge(request: IncomingMessage): void {
  const length = request.headers['content-length'];
  const chunked = /chunked/i.test(request.headers['transfer-encoding'] ?? '');
  if (chunked || (length !== undefined && OVER_EDGE_LIMIT.test(length))) {
    throw new EdgeRefusal(EDGE_ERRORS.bodyRefused);
  }
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > GATEWAY_MAX_BODY_BYTES) throw new EdgeRefusal(EDGE_ERRORS.gatewayTooLarge);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

function headersOf(request: IncomingMessage): Record<string, string> {
  // Built from entries, not by assignment: a header named `__proto__` stays a header.
  return Object.fromEntries(
    Object.entries(request.headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, Array.isArray(value) ? value.join(',') : value]],
    ),
  );
}

export interface ProxyRequest {
  method: string;
  /** Path and query string, as on the request line. */
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  requestId: string;
  /** The matched resource (`/v1/person/merge`, or `/{proxy+}` for the fallback). */
  resource: string;
  sourceIp?: string;
}

/** A REST API Lambda proxy event (payload 1.0), as API Gateway builds it. */
export function proxyEvent(request: ProxyRequest): APIGatewayProxyEvent {
  const url = new URL(request.url, 'http://localhost');
  const query = Object.fromEntries(url.searchParams.entries());
  // From entries, not by assignment: `?__proto__=1` is a parameter like any other (on AWS
  // too), not the prototype of the object (which made this throw, a 500).
  const multiQuery: Record<string, string[]> = Object.fromEntries(
    [...new Set(url.searchParams.keys())].map((name) => [name, url.searchParams.getAll(name)]),
  );
  const now = new Date();
  const host = request.headers.host ?? 'localhost';
  const hasQuery = Object.keys(query).length > 0;
  return {
    resource: request.resource,
    path: url.pathname,
    httpMethod: request.method,
    headers: request.headers,
    multiValueHeaders: Object.fromEntries(
      Object.entries(request.headers).map(([name, value]) => [name, [value]]),
    ),
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      domainName: host,
      domainPrefix: host.split('.')[0] ?? 'localhost',
      httpMethod: request.method,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: request.sourceIp ?? '127.0.0.1',
        user: null,
        userAgent: request.headers['user-agent'] ?? null,
        userArn: null,
      },
      path: `/${STAGE_NAME}${url.pathname}`,
      protocol: 'HTTP/1.1',
      requestId: request.requestId,
      requestTimeEpoch: now.getTime(),
      resourceId: 'local',
      resourcePath: request.resource,
      stage: STAGE_NAME,
    },
    // The API's binary media type is */*: every body arrives base64-encoded.
    body: request.body.length > 0 ? request.body.toString('base64') : null,
    isBase64Encoded: request.body.length > 0,
  };
}

export function lambdaContext(functionName: string, timeoutSeconds: number): Context {
  const deadline = Date.now() + timeoutSeconds * 1000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    // The Context type still lists the callback-era methods; nothing here calls them.
    /* eslint-disable @typescript-eslint/no-deprecated */
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
    /* eslint-enable @typescript-eslint/no-deprecated */
  };
}

function send(response: ServerResponse, result: Awaited<ReturnType<HttpHandler>>): void {
  response.writeHead(result.statusCode, result.headers);
  response.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
}

function refuse(response: ServerResponse, answer: EdgeError, requestId: string): void {
  send(response, envelope(answer.status, answer.message, requestId));
}

const KEEP_ALIVE_MS = 65_000;

/**
 * An idle connection stays open as long as AWS's endpoints keep theirs (API Gateway's 65 s;
 * Node closes it after 5 s). With 5 s, a client reusing a pooled connection the server is
 * closing at that moment fails ("fetch failed", "socket hang up"), which a burst after a quiet
 * moment makes likely: every idle socket expires at once.
 */
export function keepIdleConnections(server: Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
}

export function createRegionServer(handlers: RegionHandlers): Server {
  const server = createServer(
    // Node's own header cap (16 KB) would answer a bare 431; the gateway's is smaller.
    { maxHeaderSize: GATEWAY_MAX_HEADER_BYTES },
    (request, response) => {
      const requestId = randomUUID();
      void (async () => {
        try {
          checkAtTheEdge(request);
          const body = await readBody(request);
          const url = new URL(request.url ?? '/', 'http://localhost');
          const method = request.method ?? 'GET';
          const page = handlers.site?.(method, url.pathname);
          if (page) {
            response.writeHead(page.statusCode, page.headers);
            response.end(method === 'HEAD' ? undefined : page.body);
            return;
          }
          const match = matchRoute(method, url.pathname);
          const route = match.kind === 'route' ? match.route : undefined;
          const handler = route ? handlers.routes.get(route) : handlers.fallback;
          if (!handler) throw new Error(`No handler loaded for ${url.pathname}`);
          const event = proxyEvent({
            method,
            url: request.url ?? '/',
            headers: headersOf(request),
            body,
            requestId,
            resource: route?.path ?? '/{proxy+}',
            sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
          });
          if (Buffer.byteLength(JSON.stringify(event)) > LAMBDA_MAX_EVENT_BYTES) {
            throw new EdgeRefusal(EDGE_ERRORS.integrationFailure);
          }
          const context = lambdaContext(
            route?.function ?? 'not-found',
            route?.timeoutSeconds ?? 10,
          );
          const result = await handler(event, context);
          // Lambda refuses to return more than it takes; API Gateway then answers 502.
          if (Buffer.byteLength(JSON.stringify(result)) > LAMBDA_MAX_EVENT_BYTES) {
            throw new EdgeRefusal(EDGE_ERRORS.integrationFailure);
          }
          send(response, result);
        } catch (error) {
          if (error instanceof EdgeRefusal) {
            refuse(response, error.answer, requestId);
            request.resume();
            return;
          }
          console.error(error);
          send(response, envelope(500, 'Internal Server Error', requestId));
        }
      })();
    },
  );
  keepIdleConnections(server);
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    const answer = error.code === 'HPE_HEADER_OVERFLOW' ? EDGE_ERRORS.headersTooLarge : undefined;
    if (!answer) {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      return;
    }
    // The envelope with its request ID in the header too, as every other answer has it.
    const requestId = randomUUID();
    const body = JSON.stringify({
      request_id: requestId,
      code: answer.status,
      error: answer.message,
    });
    socket.end(
      `HTTP/1.1 ${answer.status} Request Header Fields Too Large\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `X-Request-Id: ${requestId}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
