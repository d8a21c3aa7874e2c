import { ConsoleInstancesResponse } from '../../shared/api/console-schemas.js';
import { instancesOf } from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { z } from 'zod';

const { http, config, region } = createConsoleRuntime();

/** `POST /console/v1/instances/get`: the instances of this region the user may manage. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/instances/get'),
  { ...http, body: z.strictObject({}), response: ConsoleInstancesResponse },
  async ({ user }) => ({ body: { instances: await instancesOf(config, user, region) } }),
);
