import { createEmailEventsWorker } from '../../shared/worker/email-runtime.js';

/** The SES events worker: bounces, complaints, deliveries and sends applied to their emails. */
export const handler = createEmailEventsWorker();
