import { createEmailWebhookWorker } from '../../shared/worker/webhook-runtime.js';

/** The emails' webhook fan-out worker: sent, bounced and complained-about emails. */
export const handler = createEmailWebhookWorker();
