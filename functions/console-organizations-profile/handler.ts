import { ConsoleOrganizationProfileResponse } from '../../shared/api/console-groups.js';
import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { OrganizationsEnv, readEnv } from '../../shared/config/env.js';
import {
  ConsoleOrganizationProfileRequest,
  organizationProfileOf,
} from '../../shared/domain/console/console-organizations.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { createListingPorts } from '../../shared/http/listing-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { db, cursors } = createApiRuntime();
const { http, config, region } = createConsoleRuntime(db);
const organizations = new DynamoOrganizationStore(
  db,
  readEnv(OrganizationsEnv).ORGANIZATIONS_TABLE,
);
const people = createListingPorts(db);

/** `POST /console/v1/organizations/profile`: an organization's fields, tags and people. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/organizations/profile'),
  {
    ...http,
    body: ConsoleOrganizationProfileRequest,
    response: ConsoleOrganizationProfileResponse,
  },
  async ({ body, user }) => ({
    body: await organizationProfileOf(
      config,
      organizations,
      people,
      (instanceId) => cursors(instanceId, 'console/organizations/profile'),
      { user },
      region,
      body,
    ),
  }),
);
