import { Logger } from '@aws-lambda-powertools/logger';

/** One structured logger per container; the level comes from `POWERTOOLS_LOG_LEVEL`. */
export const logger = new Logger({ serviceName: 'cdp-api' });
