import { createActivityWebhookWorker } from '../../shared/worker/webhook-runtime.js';

/** The activities' webhook fan-out worker: each new activity makes `activity.created`. */
export const handler = createActivityWebhookWorker();
