import { DynamoAccountActivityStore } from '../../shared/adapters/account-activity-store.js';
import { DynamoOffsetCheckpoints } from '../../shared/adapters/offset-checkpoints.js';
import { AccountActivitiesEnv, ApiEnv, readEnv } from '../../shared/config/env.js';
import {
  AccountActivitiesRequest,
  getPersonActivities,
} from '../../shared/domain/people/person-activities.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AccountActivitiesResponse } from '../../shared/api/schemas.js';

const { http, db, cursors } = createApiRuntime();
const env = readEnv(AccountActivitiesEnv);
const reader = new DynamoAccountActivityStore(db, {
  activities: env.ACTIVITIES_TABLE,
  organizations: env.ORGANIZATIONS_TABLE,
});
const requests = readEnv(ApiEnv).REQUESTS_TABLE;
const checkpoints = requests ? new DynamoOffsetCheckpoints(db, requests) : undefined;

/** `POST /v1/accounts/get/activities`: an account's activities, newest first. */
export const handler = apiHandler(
  findRoute('POST /v1/accounts/get/activities'),
  { ...http, body: AccountActivitiesRequest, response: AccountActivitiesResponse },
  async ({ body, tenant }) => {
    const { instance } = tenant;
    const names = new Map(
      instance.activities.map((definition) => [definition.id, definition.name]),
    );
    const { account_id: accountId, ...rest } = body;
    return {
      body: await getPersonActivities(
        { ...rest, person_id: accountId },
        instance.id,
        {
          reader,
          cursors: await cursors(instance.id, 'accounts/get/activities'),
          ...(checkpoints ? { checkpoints } : {}),
          ...(instance.timezone ? { timeZone: instance.timezone } : {}),
          definitionName: (fieldId) => names.get(fieldId),
        },
        { member: 'account_id', noun: 'account' },
      ),
    };
  },
);
