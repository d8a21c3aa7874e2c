import type { z } from 'zod';
import type { ConsoleVerifier } from '../adapters/console-tokens.js';
import type { ConsoleUser } from '../domain/console/console-user.js';
import { ValidationError } from '../domain/errors.js';
import { parseWith } from '../domain/validation.js';
import type { RouteDefinition } from '../routes.js';
import {
  asHttpHandler,
  httpStack,
  requestIdOf,
  withRequestBudget,
  type HandlerResult,
  type HttpHandler,
} from './api-handler.js';
import { checkWellFormedText } from './body-checks.js';
import { json } from './responses.js';

export interface ConsoleInput<B> {
  body: B;
  user: ConsoleUser;
  requestId: string;
  /** The caller's address as API Gateway saw it (the audit log's "from where"). */
  sourceIp: string;
}

/**
 * A route of the console's API: the same middy stack as the public API (body limits, the
 * error envelope, security headers), authenticated by the signed-in user's ID token
 * (`Authorization: Bearer`), never by an API key. The body is validated by `body` before `run`
 * sees it; `run` decides, through the user's groups, which instances it may touch.
 */
export function consoleHandler<S extends z.ZodType, R extends z.ZodType = z.ZodUnknown>(
  route: RouteDefinition,
  options: { verify: ConsoleVerifier; body: S; response?: R },
  run: (input: ConsoleInput<z.infer<S>>) => Promise<HandlerResult<z.infer<R>>>,
): HttpHandler {
  const handler = httpStack(route, undefined, true, undefined, options.verify).handler(
    async (event, context) => {
      const { user } = context;
      if (!user) throw new Error('the sign-in middleware did not run');
      const raw: unknown = event.body;
      if (
        route.method !== 'GET' &&
        (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      ) {
        throw new ValidationError('The request body must be a JSON object', [
          { field: 'body', error: 'expected a JSON object' },
        ]);
      }
      if (raw) checkWellFormedText(raw);
      const body = parseWith(options.body, raw ?? {}, 'request body');
      const result = await run({
        body,
        user,
        requestId: requestIdOf(event),
        sourceIp: event.requestContext.identity.sourceIp,
      });
      return json(result.status ?? 200, result.body, result.headers);
    },
  );
  return withRequestBudget(asHttpHandler(handler));
}
