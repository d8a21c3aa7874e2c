import { ConsoleAudienceResponse } from '../../shared/api/console-groups.js';
import {
  archiveConsoleAudience,
  ConsoleAudienceRequest,
} from '../../shared/domain/console/console-audiences.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';

const { http, config, audit, region, db } = createConsoleRuntime();
const { services } = createAudienceServices(db);

/** `PUT /console/v1/audiences/archive`: no longer kept current; its members stay as they were. */
export const handler = consoleHandler(
  findRoute('PUT /console/v1/audiences/archive'),
  { ...http, body: ConsoleAudienceRequest, response: ConsoleAudienceResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await archiveConsoleAudience(
      config,
      services,
      audit,
      { user, sourceIp, requestId },
      region,
      body,
    ),
  }),
);
