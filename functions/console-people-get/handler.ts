import { ConsolePeopleResponse } from '../../shared/api/console-schemas.js';
import { ConsolePeopleRequest, peopleOf } from '../../shared/domain/console/console-people.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { createListingPorts } from '../../shared/http/listing-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { db, cursors } = createApiRuntime();
const { http, config, region } = createConsoleRuntime(db);
const ports = createListingPorts(db);

/** `POST /console/v1/people/get`: the instance's people, searched and paged. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/people/get'),
  { ...http, body: ConsolePeopleRequest, response: ConsolePeopleResponse },
  async ({ body, user }) => ({
    body: await peopleOf(
      config,
      ports,
      (instanceId) => cursors(instanceId, 'console/people/get'),
      { user },
      region,
      body,
    ),
  }),
);
