import { createIngestWorker } from '../../shared/worker/ingest-runtime.js';

/**
 * The ingest worker: applies queued asynchronous requests (person merges, organization
 * merges, activities), each record once, and records their answers for `POST /v1/async/get`.
 */
export const handler = createIngestWorker();
