import { ConsoleProfileResponse } from '../../shared/api/console-schemas.js';
import { ConsoleProfileRequest, profileOf } from '../../shared/domain/console/console-people.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { createFeedPorts } from '../../shared/http/feed-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { db, cursors } = createApiRuntime();
const { http, config, region } = createConsoleRuntime(db);
const store = createPeopleStore(db);
const feedPorts = createFeedPorts(db);

/** `POST /console/v1/people/profile`: a person's fields, tags and timeline as display text. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/people/profile'),
  { ...http, body: ConsoleProfileRequest, response: ConsoleProfileResponse },
  async ({ body, user }) => ({
    body: await profileOf(
      config,
      store,
      async (instance) =>
        feedPorts(instance, store, await cursors(instance.id, 'console/people/profile')),
      { user },
      region,
      body,
    ),
  }),
);
