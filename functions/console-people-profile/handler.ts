import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { ConsoleProfileResponse } from '../../shared/api/console-schemas.js';
import { EmailLinksEnv, readEnv } from '../../shared/config/env.js';
import { ConsoleProfileRequest, profileOf } from '../../shared/domain/console/console-people.js';
import { createApiRuntime, createPeopleStore } from '../../shared/http/api-runtime.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { createFeedPorts } from '../../shared/http/feed-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { createAudienceServices } from '../../shared/worker/audience-runtime.js';

const { db, cursors } = createApiRuntime();
const { http, config, region } = createConsoleRuntime(db);
const store = createPeopleStore(db);
const feedPorts = createFeedPorts(db);
const audiences = createAudienceServices(db);
const emails = new DynamoEmailStore(db, {
  emails: readEnv(EmailLinksEnv.pick({ EMAILS_TABLE: true })).EMAILS_TABLE,
});

/**
 * `POST /console/v1/people/profile`: a person's fields, tags and timeline as display text,
 * the emails sent to them and the audiences they are in.
 */
export const handler = consoleHandler(
  findRoute('POST /console/v1/people/profile'),
  { ...http, body: ConsoleProfileRequest, response: ConsoleProfileResponse },
  async ({ body, user }) => ({
    body: await profileOf(
      config,
      store,
      async (instance) =>
        feedPorts(instance, store, await cursors(instance.id, 'console/people/profile')),
      {
        emails,
        membershipsOf: async (instanceId, personId) =>
          (await audiences.memberships.read(instanceId, personId)).memberships,
        audienceNames: async (instanceId) =>
          new Map(
            (await audiences.store.list(instanceId)).map((audience) => [
              audience.id,
              audience.name,
            ]),
          ),
      },
      { user },
      region,
      body,
    ),
  }),
);
