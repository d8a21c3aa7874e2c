import { DynamoEmailStore } from '../../shared/adapters/email-store.js';
import { ConsoleEmailPreviewResponse } from '../../shared/api/console-messages.js';
import { EmailLinksEnv, readEnv } from '../../shared/config/env.js';
import {
  ConsoleEmailPreviewRequest,
  emailPreviewOf,
} from '../../shared/domain/console/console-emails.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';

const { http, config, region, db } = createConsoleRuntime();
const emails = new DynamoEmailStore(db, {
  emails: readEnv(EmailLinksEnv.pick({ EMAILS_TABLE: true })).EMAILS_TABLE,
});

/** `POST /console/v1/emails/preview`: one email's HTML as it was written, with its state. */
export const handler = consoleHandler(
  findRoute('POST /console/v1/emails/preview'),
  { ...http, body: ConsoleEmailPreviewRequest, response: ConsoleEmailPreviewResponse },
  async ({ body, user }) => ({
    body: await emailPreviewOf(config, emails, { user }, region, body),
  }),
);
