import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { ConsoleEmailsResponse } from '../../shared/api/console-messages.js';
import { EmailLinksEnv, readEnv } from '../../shared/config/env.js';
import { ConsoleEmailsRequest, emailsOf } from '../../shared/domain/console/console-emails.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, region, db } = createConsoleRuntime();
const emails = new DynamoEmailStore(db, {
  emails: readEnv(EmailLinksEnv.pick({ EMAILS_TABLE: true })).EMAILS_TABLE,
});

/** `POST /console/v1/emails/get`: the instance's (or a person's) emails, newest first. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/emails/get'),
  { ...http, body: ConsoleEmailsRequest, response: ConsoleEmailsResponse },
  async ({ body, user }) => ({
    body: await emailsOf(config, emails, { user }, region, body),
  }),
);
