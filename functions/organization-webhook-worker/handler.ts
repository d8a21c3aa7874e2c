import { createOrganizationWebhookWorker } from '../../shared/worker/webhook-runtime.js';

/**
 * The organizations' webhook fan-out worker: fed by the organizations table's stream, it
 * turns each change of an organization into its events and queues one delivery per
 * subscribed webhook.
 */
export const handler = createOrganizationWebhookWorker();
