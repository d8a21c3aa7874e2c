import { createEmailWorker } from '../../shared/worker/email-runtime.js';

/** The email worker: sends each queued transactional email through SES, at most once. */
export const handler = createEmailWorker();
