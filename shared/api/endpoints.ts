import type { RouteKey } from '../routes.js';
import { ACTIVITIES } from './endpoints/activities.js';
import { AUDIENCES } from './endpoints/audiences.js';
import type { Endpoint } from './endpoints/common.js';
import { CONSOLE } from './endpoints/console.js';
import { CONSOLE_GROUPS } from './endpoints/console-groups.js';
import { CONSOLE_OVERVIEW } from './endpoints/console-overview.js';
import { CONSOLE_MESSAGES } from './endpoints/console-messages.js';
import { CONSOLE_HOSTING } from './endpoints/console-hosting.js';
import { EMAIL } from './endpoints/email.js';
import { ORGANIZATIONS } from './endpoints/organizations.js';
import { PEOPLE } from './endpoints/people.js';
import { SERVICE } from './endpoints/service.js';
import { WEBHOOKS } from './endpoints/webhooks.js';

export type { Answer, Endpoint, Tag } from './endpoints/common.js';

/**
 * The API's description, one entry per route of the routes table (`shared/routes.ts`): what
 * the OpenAPI document says of it. `npm run openapi` builds `docs/openapi.json` from this
 * table (`shared/api/document.ts`), and a test fails when a route has no entry here. To
 * describe a new route, add its entry: its summary, its request body schema (the zod schema
 * its handler validates with), its answers (the response schemas its handler is typed
 * with) with examples, and the error statuses that are its own. The statuses every route
 * shares (edge limits, keys, rate limits, idempotency, the store) are added from the route's
 * definition.
 *
 * The entries live in `shared/api/endpoints/`, one file per area, each a const object of its
 * entries (`satisfies Partial<Record<RouteKey, Endpoint>>`) spread into the table below:
 * - `people.ts`: `person/*` (merge, listings, subscriptions, archive, restore, delete);
 * - `organizations.ts`: `organizations/*` and `accounts/*` (with the accounts' activities and
 *   the custom organization fields under both names);
 * - `activities.ts`: `activities/create`, `async/get`, activity definitions, a person's
 *   activities, custom person fields, `instances/custom-field/delete`, `tags/get` and
 *   `instance-schema/get`;
 * - `email.ts`: `transactional/*` and the links of sent emails (`/t/*`);
 * - `audiences.ts`: `audiences/*` and `audience/subscribe`;
 * - `webhooks.ts`: `webhooks/*`;
 * - `service.ts`: `GET /health`, `GET /openapi.json` and the reference page (`GET /docs/*`);
 * - `console.ts`: the console's own API (`/console/v1/*`, tag `Console`);
 * - `console-groups.ts`: the console's organizations and audiences (`/console/v1/organizations/*`,
 *   `/console/v1/audiences/*`);
 * - `console-overview.ts`: the console's overview and custom fields (tag `Console`);
 * - `console-messages.ts`: its email and webhook routes;
 * - `console-hosting.ts`: the console's `data-sources/modify`;
 * - `common.ts`: `Tag`, `Answer`, `Endpoint`, the IDs of the examples and the helpers more
 *   than one area uses (`lifecycle` for archive, restore and delete; `html`).
 * A route goes into its area's file; a new area gets a file of its own, spread here.
 */
export const ENDPOINTS: Readonly<Record<RouteKey, Endpoint>> = {
  ...PEOPLE,
  ...ORGANIZATIONS,
  ...ACTIVITIES,
  ...EMAIL,
  ...AUDIENCES,
  ...WEBHOOKS,
  ...SERVICE,
  ...CONSOLE,
  ...CONSOLE_GROUPS,
  ...CONSOLE_OVERVIEW,
  ...CONSOLE_MESSAGES,
  ...CONSOLE_HOSTING,
};
