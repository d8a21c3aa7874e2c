import { ConsoleOrganizationsResponse } from '../../shared/api/console-groups.js';
import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import {
  ConsoleOrganizationsRequest,
  organizationsOf,
} from '../../shared/domain/console/console-organizations.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { db, cursors } = createApiRuntime();
const { http, config, region } = createConsoleRuntime(db);
const organizations = new DynamoOrganizationStore(
  db,
  readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE,
);

/** `POST /console/v1/organizations/get`: the instance's organizations, searched and paged. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/organizations/get'),
  { ...http, body: ConsoleOrganizationsRequest, response: ConsoleOrganizationsResponse },
  async ({ body, user }) => ({
    body: await organizationsOf(
      config,
      organizations,
      (instanceId) => cursors(instanceId, 'console/organizations/get'),
      { user },
      region,
      body,
    ),
  }),
);
