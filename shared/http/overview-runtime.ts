import { z } from 'zod';
import { createSqsClient } from '../adapters/aws-clients.js';
import { DeadLetterEnv, SqsDeadLetterDepths } from '../adapters/dead-letter-depths.js';
import { DynamoDeliveryStore } from '../adapters/delivery-store.js';
import { DynamoEmailTallies } from '../adapters/email-tallies.js';
import { instanceCounters } from '../adapters/people-store.js';
import { DynamoWebhookStore } from '../adapters/webhook-store.js';
import { readEnv } from '../config/env.js';
import type { OverviewPorts } from '../domain/console/console-overview.js';
import type { createConsoleRuntime } from './console-runtime.js';

const tableName = z.string().min(3);
const OverviewEnv = DeadLetterEnv.extend({
  PEOPLE_TABLE: tableName,
  ORGANIZATIONS_TABLE: tableName,
  EMAILS_TABLE: tableName,
  DELIVERIES_TABLE: tableName,
});

/**
 * What the overview reads (console-overview.ts), built once per container from the console's
 * runtime: the counters, the emails' daily counters, webhooks and their attempts, and the
 * dead-letter queues' depths.
 */
export function createOverviewPorts({
  db,
  env: { CONFIG_TABLE },
  config,
}: ReturnType<typeof createConsoleRuntime>): OverviewPorts {
  const env = readEnv(OverviewEnv);
  const tables = { people: env.PEOPLE_TABLE, organizations: env.ORGANIZATIONS_TABLE };
  return {
    config,
    counters: { counters: (instanceId) => instanceCounters(db, tables, instanceId) },
    emails: new DynamoEmailTallies(db, env.EMAILS_TABLE),
    webhooks: new DynamoWebhookStore(db, CONFIG_TABLE),
    attempts: new DynamoDeliveryStore(db, env.DELIVERIES_TABLE),
    deadLetters: new SqsDeadLetterDepths(createSqsClient(), env),
  };
}
