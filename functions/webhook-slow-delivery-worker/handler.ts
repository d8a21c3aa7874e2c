import { createWebhookDeliveryWorker } from '../../shared/worker/webhook-runtime.js';

/**
 * The slow endpoints' delivery worker: the same attempts as the delivery worker's, for the
 * endpoints that answer slowly, with capacity of their own (docs/webhooks.md, "Fair shares").
 */
export const handler = createWebhookDeliveryWorker('slow');
