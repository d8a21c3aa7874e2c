import { createLastSeenWorker } from '../../shared/worker/last-seen-runtime.js';

/**
 * The last-seen worker: fed by the activities table's stream (new activities that track a
 * touch), it moves their people's last seen forward.
 */
export const handler = createLastSeenWorker();
