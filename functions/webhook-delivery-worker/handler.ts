import { createWebhookDeliveryWorker } from '../../shared/worker/webhook-runtime.js';

/** The webhook delivery worker: signs and posts each event, retried on its schedule. */
export const handler = createWebhookDeliveryWorker();
