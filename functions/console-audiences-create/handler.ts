import { ConsoleAudienceResponse } from '../../shared/api/console-groups.js';
import {
  ConsoleAudienceCreateRequest,
  createConsoleAudience,
} from '../../shared/domain/console/console-audiences.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';

const { http, config, audit, region, db } = createConsoleRuntime();
const { services } = createAudienceServices(db);

/** `POST /console/v1/audiences/create`: an audience from a filter; its members found after. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/audiences/create'),
  { ...http, body: ConsoleAudienceCreateRequest, response: ConsoleAudienceResponse },
  async ({ body, user, sourceIp, requestId }) => ({
    body: await createConsoleAudience(
      config,
      services,
      audit,
      { user, sourceIp, requestId },
      region,
      body,
    ),
  }),
);
