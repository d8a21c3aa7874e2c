import { ConsoleAudienceMembersResponse } from '../../shared/api/console-groups.js';
import {
  audienceMembersOf,
  ConsoleAudienceMembersRequest,
} from '../../shared/domain/console/console-audiences.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { createListingPorts } from '../../shared/http/listing-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { db, cursors } = createApiRuntime();
const { http, config, region } = createConsoleRuntime(db);
const ports = createListingPorts(db);

/** `POST /console/v1/audiences/members`: a page of an audience's members, newest first. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/audiences/members'),
  { ...http, body: ConsoleAudienceMembersRequest, response: ConsoleAudienceMembersResponse },
  async ({ body, user }) => ({
    body: await audienceMembersOf(
      config,
      ports,
      (instanceId) => cursors(instanceId, 'console/audiences/members'),
      { user },
      region,
      body,
    ),
  }),
);
