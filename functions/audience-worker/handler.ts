import { createAudienceWorker } from '../../shared/worker/audience-runtime.js';

/**
 * The audience worker: fed by the people table's stream, it evaluates each changed person
 * (and each person a build or the daily job asks for) against the instance's audiences.
 */
export const handler = createAudienceWorker();
