import { ConsoleAudiencesResponse } from '../../shared/api/console-groups.js';
import {
  audiencesOf,
  ConsoleAudiencesRequest,
} from '../../shared/domain/console/console-audiences.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';

const { http, config, region, db } = createConsoleRuntime();
const { services } = createAudienceServices(db);

/** `POST /console/v1/audiences/get`: audiences with their counters, and the builder's fields. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/audiences/get'),
  { ...http, body: ConsoleAudiencesRequest, response: ConsoleAudiencesResponse },
  async ({ body, user }) => ({
    body: await audiencesOf(config, services, { user }, region, body),
  }),
);
