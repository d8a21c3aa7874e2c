import { createAudienceWebhookWorker } from '../../shared/worker/webhook-runtime.js';

/** The memberships' webhook fan-out worker: people entering and leaving audiences. */
export const handler = createAudienceWebhookWorker();
