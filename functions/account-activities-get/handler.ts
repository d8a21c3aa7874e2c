import { DynamoAccountActivityStore } from '../../shared/adapters/account-activity-store.js';
import { AccountActivitiesEnv, readEnv } from '../../shared/config/env.js';
import {
  AccountActivitiesRequest,
  getPersonActivities,
} from '../../shared/domain/people/person-activities.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { createFeedPorts } from '../../shared/http/feed-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AccountActivitiesResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const env = readEnv(AccountActivitiesEnv);
const reader = new DynamoAccountActivityStore(db, {
  activities: env.ACTIVITIES_TABLE,
  organizations: env.ORGANIZATIONS_TABLE,
});
const feedPorts = createFeedPorts(db);

/** `POST /v1/accounts/get/activities`: an account's activities, newest first. */
export const handler = apiHandler(
  findRoute('POST /v1/accounts/get/activities'),
  { ...http, body: AccountActivitiesRequest, response: AccountActivitiesResponse },
  async ({ body: { account_id: accountId, ...rest }, tenant: { instance } }) => ({
    body: await getPersonActivities(
      { ...rest, person_id: accountId },
      instance.id,
      feedPorts(instance, reader, await cursors(instance.id, 'accounts/get/activities')),
      { member: 'account_id', noun: 'account' },
    ),
  }),
);
