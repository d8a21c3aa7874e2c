import { ConsoleReplayResponse } from '../../shared/api/console-messages.js';
import {
  ConsoleReplayRequest,
  replayConsoleEvent,
} from '../../shared/domain/console/console-webhooks.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createReplayServices } from '../../shared/worker/webhook-runtime.js';

const { http, config, audit, region, db } = createConsoleRuntime();
const services = createReplayServices(db);

/** `POST /console/v1/webhooks/replay`: one event sent again to its endpoint (202), audited. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/webhooks/replay'),
  { ...http, body: ConsoleReplayRequest, response: ConsoleReplayResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    status: 202,
    body: await replayConsoleEvent(
      config,
      services,
      audit,
      { user, sourceIp, requestId },
      region,
      body,
    ),
  }),
);
