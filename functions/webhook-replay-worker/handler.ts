import { createWebhookReplayWorker } from '../../shared/worker/webhook-runtime.js';

/** The webhook replay worker: carries replays since a time on, a paced slice per message. */
export const handler = createWebhookReplayWorker();
