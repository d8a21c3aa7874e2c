import { MethodNotAllowedError, NotFoundError } from '../../shared/domain/errors.js';
import { publicHandler } from '../../shared/http/api-handler.js';
import { matchRoute } from '../../shared/routes.js';

/**
 * Behind every path and method of the REST API that no route takes (`ANY` on each resource and
 * the root's `{proxy+}`): 405 for a known path with another method, else 404.
 */
export const handler = publicHandler((event) => {
  const { httpMethod: method, path } = event;
  const match = matchRoute(method, path);
  if (match.kind === 'wrong-method') throw new MethodNotAllowedError(method, match.allowed);
  throw new NotFoundError(`No endpoint ${method} ${path}`);
});
