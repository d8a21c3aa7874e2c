import type { QueueName } from './resources.js';
import type { Access } from './routes.js';

/**
 * The queue workers: one Lambda per entry, fed by its queue through an SQS event source
 * with partial batch failure reporting (CDK), or by a local poller (`npm start`). The
 * asynchronous ingestion and transactional email issues add their workers here.
 */
export interface WorkerDefinition {
  /** Folder under `functions/` holding `handler.ts`. */
  readonly function: string;
  readonly queue: QueueName;
  readonly batchSize: number;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  readonly access: readonly Access[];
}

export const WORKERS: readonly WorkerDefinition[] = [];
