import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { HttpHandler } from '../shared/http/api-handler.js';
import { envelope } from '../shared/http/error-mapper.js';
import { matchRoute, routeKey, type RouteDefinition } from '../shared/routes.js';

/**
 * Plays API Gateway (HTTP API, payload format 2.0) in front of the same handler modules the
 * Lambda functions run: a request becomes a proxy event, the handler's result becomes the
 * response. Routing follows the routes table; what matches no route goes to the fallback
 * handler, as API Gateway's `$default` route does.
 */

/** API Gateway refuses bodies above 10 MB before any function runs; so does this server. */
const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

export interface RegionHandlers {
  routes: Map<RouteDefinition, HttpHandler>;
  fallback: HttpHandler;
}

class BodyTooLargeError extends Error {}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > GATEWAY_MAX_BODY_BYTES) throw new BodyTooLargeError();
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

function headersOf(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

const TEXTUAL = /^(?:application\/(?:[a-z0-9.+-]*json|x-www-form-urlencoded|xml)|text\/)/i;

export function toProxyEvent(
  request: IncomingMessage,
  body: Buffer,
  matchedRouteKey: string,
  requestId: string,
): APIGatewayProxyEventV2 {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const headers = headersOf(request);
  const contentType = headers['content-type'];
  const textual = contentType === undefined || TEXTUAL.test(contentType);
  const now = new Date();
  const query = Object.fromEntries(url.searchParams.entries());
  return {
    version: '2.0',
    routeKey: matchedRouteKey,
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0] ?? 'localhost',
      http: {
        method: request.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: matchedRouteKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length > 0
      ? { body: body.toString(textual ? 'utf8' : 'base64'), isBase64Encoded: !textual }
      : { isBase64Encoded: false }),
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

export function createRegionServer(handlers: RegionHandlers): Server {
  return createServer((request, response) => {
    const requestId = randomUUID();
    void (async () => {
      try {
        const body = await readBody(request);
        const url = new URL(request.url ?? '/', 'http://localhost');
        const match = matchRoute(request.method ?? 'GET', url.pathname);
        const route = match.kind === 'route' ? match.route : undefined;
        const handler = route ? handlers.routes.get(route) : handlers.fallback;
        if (!handler) throw new Error(`No handler loaded for ${url.pathname}`);
        const event = toProxyEvent(request, body, route ? routeKey(route) : '$default', requestId);
        const context = lambdaContext(route?.function ?? 'not-found', route?.timeoutSeconds ?? 10);
        send(response, await handler(event, context));
      } catch (error) {
        if (error instanceof BodyTooLargeError) {
          send(response, envelope(413, 'Request body is larger than 10 MB', requestId));
          request.resume();
          return;
        }
        console.error(error);
        send(response, envelope(500, 'Internal Server Error', requestId));
      }
    })();
  });
}
