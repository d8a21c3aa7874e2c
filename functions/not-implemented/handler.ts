import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { z } from 'zod';
import { NotImplementedError } from '../../shared/domain/errors.js';
import { apiHandler, type HttpHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http } = createApiRuntime();

/**
 * Endpoints of the spec that are not built yet. The whole stack runs (the route's own size
 * limit, the key, the JSON body) and the answer is 501 in the error envelope, so that
 * authentication and the error contract can be exercised on every path.
 */
const perRoute = new Map<string, HttpHandler>();

export async function handler(event: APIGatewayProxyEventV2, context: Context) {
  let routeHandler = perRoute.get(event.routeKey);
  if (!routeHandler) {
    const route = findRoute(event.routeKey);
    routeHandler = apiHandler(route, { ...http, body: z.looseObject({}) }, () => {
      throw new NotImplementedError(event.routeKey);
    });
    perRoute.set(event.routeKey, routeHandler);
  }
  return routeHandler(event, context);
}
