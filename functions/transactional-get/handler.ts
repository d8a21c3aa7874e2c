import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { EmailLinksEnv, readEnv } from '../../shared/config/env.js';
import { getEmails, TransactionalGetRequest } from '../../shared/domain/email/email-status.js';
import { apiHandler } from '../../shared/http/api-handler.js';
import { createApiRuntime } from '../../shared/http/api-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { TransactionalGetResponse } from '../../shared/api/schemas.js';

const { http, db } = createApiRuntime();
const store = new DynamoEmailStore(db, {
  emails: readEnv(EmailLinksEnv.pick({ EMAILS_TABLE: true })).EMAILS_TABLE,
});

/** `POST /v1/transactional/get`: where each email stands, with its events. */
export const handler = apiHandler(
  findRoute('POST /v1/transactional/get'),
  { ...http, body: TransactionalGetRequest, response: TransactionalGetResponse },
  async ({ body, tenant }) => ({ body: await getEmails(body, tenant.instance.id, store) }),
);
