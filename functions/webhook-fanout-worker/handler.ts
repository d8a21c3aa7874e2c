import { createWebhookFanoutWorker } from '../../shared/worker/webhook-runtime.js';

/**
 * The webhook fan-out worker: fed by the people table's stream, it turns each change of a
 * person into its events and queues one delivery per subscribed webhook.
 */
export const handler = createWebhookFanoutWorker();
