import { lastDays, type EmailTallyReader, type EmailTotals } from '../email/email-tallies.js';
import type { Region } from '../regions.js';
import type { AttemptReader } from '../webhooks/attempts.js';
import type { Webhook, WebhookStore } from '../webhooks/webhook.js';
import { runBounded } from '../../lib/bounded.js';
import { managedInstance, type ConsoleCaller, type ConsoleStore } from './console-keys.js';
import { webhookHealth } from './console-webhooks.js';

/**
 * An instance's overview, the console's first tab: what it holds, how its emails fared this
 * week, whether its webhooks are healthy, and (to platform admins) what waits in the region's
 * dead-letter queues. Every figure is a key, a counter or a bounded query: nothing grows with
 * the instance's size.
 *
 * - people, subscribers, organizations: the counters the writes keep (`repair counts`);
 * - emails sent, bounced and complained about: the emails' daily counters (email-tallies.ts),
 *   the last seven UTC days, today included;
 * - webhooks: each endpoint's own record (at most `MAX_WEBHOOKS`), its health as the delivery
 *   worker keeps it, and its newest attempt (a page of one from the attempts index);
 * - dead letters: the depth of each dead-letter queue. They are the region's, shared by every
 *   instance, so only platform admins see them; an instance's users get `null`.
 */
export interface OverviewPorts {
  config: Pick<ConsoleStore, 'getInstance'>;
  counters: {
    counters(
      instanceId: string,
    ): Promise<{ contacts: number; subscribers: number; organizations: number }>;
  };
  emails: EmailTallyReader;
  webhooks: Pick<WebhookStore, 'list'>;
  attempts: AttemptReader;
  deadLetters: DeadLetterDepths;
  now?: () => Date;
}

/** The region's dead-letter queues and how many messages wait in each (SQS's approximation). */
export interface DeadLetterDepths {
  depths(): Promise<{ queue: string; messages: number | null }[]>;
}

export interface WebhookSummary {
  id: string;
  url: string;
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  /** The same health as the webhooks page shows (state, failures in a row, since when). */
  health: ReturnType<typeof webhookHealth>;
  last_attempt: { at: string; outcome: 'succeeded' | 'failed'; status_code: number | null } | null;
}

/** Webhooks whose newest attempt is read at once (each is 16 small queries). */
const ATTEMPT_READS = 4;

async function webhookSummaries(
  ports: OverviewPorts,
  instanceId: string,
  now: number,
): Promise<WebhookSummary[]> {
  const webhooks = await ports.webhooks.list(instanceId);
  const summaries = new Map<string, WebhookSummary>();
  const { failure } = await runBounded(webhooks, ATTEMPT_READS, async (webhook: Webhook) => {
    const { attempts } = await ports.attempts.attempts(instanceId, webhook.id, {
      outcomes: ['succeeded', 'failed'],
      limit: 1,
    });
    const last = attempts[0];
    summaries.set(webhook.id, {
      id: webhook.id,
      url: webhook.url,
      description: webhook.description ?? null,
      enabled: webhook.enabled,
      disabled_reason: webhook.disabled_reason ?? null,
      health: webhookHealth(webhook, now),
      last_attempt: last
        ? { at: last.attempted_at, outcome: last.status, status_code: last.status_code }
        : null,
    });
  });
  if (failure) throw failure.error;
  return webhooks.flatMap((webhook) => summaries.get(webhook.id) ?? []);
}

export async function overviewOf(
  ports: OverviewPorts,
  caller: Pick<ConsoleCaller, 'user'>,
  region: Region,
  id: string,
) {
  const instance = await managedInstance(ports.config, caller.user, region, id);
  const now = (ports.now ?? (() => new Date()))();
  const days = lastDays(now);
  const [counters, emails, webhooks, deadLetters] = await Promise.all([
    ports.counters.counters(instance.id),
    ports.emails.tallies(instance.id, days),
    webhookSummaries(ports, instance.id, now.getTime()),
    caller.user.platformAdmin ? ports.deadLetters.depths() : Promise.resolve(null),
  ]);
  return {
    instance_id: instance.id,
    people: {
      people: counters.contacts,
      subscribers: counters.subscribers,
      organizations: counters.organizations,
    },
    emails: {
      from: days[0] ?? '',
      to: days.at(-1) ?? '',
      ...(emails satisfies EmailTotals),
    },
    webhooks,
    dead_letters: deadLetters
      ? {
          queues: deadLetters,
          total: deadLetters.reduce((sum, queue) => sum + (queue.messages ?? 0), 0),
        }
      : null,
  };
}
