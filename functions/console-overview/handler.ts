import { ConsoleOverviewResponse } from '../../shared/api/console-overview.js';
import { overviewOf } from '../../shared/domain/console/console-overview.js';
import { ConsoleInstanceRequest } from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { createOverviewPorts } from '../../shared/http/overview-runtime.js';
import { findRoute } from '../../shared/routes.js';

const runtime = createConsoleRuntime();
const ports = createOverviewPorts(runtime);

/** `POST /console/v1/instances/overview`: an instance's figures at a glance. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/instances/overview'),
  { ...runtime.http, body: ConsoleInstanceRequest, response: ConsoleOverviewResponse },
  async ({ body, user }) => ({
    body: await overviewOf(ports, { user }, runtime.region, body.instance_id),
  }),
);
