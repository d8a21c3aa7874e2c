import { createAudienceJobsWorker } from '../../shared/worker/audience-runtime.js';

/** The audience-jobs queue's worker: builds, the daily re-evaluation, deletions of audiences. */
export const handler = createAudienceJobsWorker();
