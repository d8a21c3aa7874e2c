import { ConsoleAuditResponse } from '../../shared/api/console-schemas.js';
import { ConsoleAuditRequest, managedInstance } from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, audit, region } = createConsoleRuntime();

/** `POST /console/v1/audit/get`: what was changed through the console, newest first. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/audit/get'),
  { ...http, body: ConsoleAuditRequest, response: ConsoleAuditResponse },
  async ({ body, user }) => {
    const instance = await managedInstance(config, user, region, body.instance_id);
    return { body: await audit.list(instance.id, body.limit, body.before) };
  },
);
