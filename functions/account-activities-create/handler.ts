import { DynamoAccountActivityStore } from '../../shared/adapters/account-activity-store.js';
import { DynamoOrganizationStore } from '../../shared/adapters/organization-store.js';
import { AccountActivitiesEnv, readEnv } from '../../shared/config/env.js';
import {
  AccountActivitiesCreateRequest,
  recordAccountActivities,
} from '../../shared/domain/organizations/account-activities.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { AccountActivitiesCreateResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const env = readEnv(AccountActivitiesEnv);
const organizations = new DynamoOrganizationStore(db, env.ORGANIZATIONS_TABLE);
const activities = new DynamoAccountActivityStore(db, {
  activities: env.ACTIVITIES_TABLE,
  organizations: env.ORGANIZATIONS_TABLE,
});

/** `POST /v1/accounts/activities/create`: custom activities of accounts (`act:oc:`). */
export const handler = apiHandler(
  findRoute('POST /v1/accounts/activities/create'),
  { ...http, body: AccountActivitiesCreateRequest, response: AccountActivitiesCreateResponse },
  async ({ body, tenant }) => ({
    body: await recordAccountActivities(body, { tenant, organizations, activities }),
  }),
);
