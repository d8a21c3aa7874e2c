import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { scanPrefix } from './soak-check.js';

/**
 * The soak's webhooks and audiences (bench/soak.ts): an endpoint of its own that receives
 * every delivery (2 % of its answers take 3.5 s, so that the endpoint is marked slow and its
 * deliveries move between the prompt and the slow queue), a webhook subscribed to people,
 * activity, email, organization and audience events, and an audience whose filter changes
 * during the run (a rebuild while people change). The check: every event kept for the
 * webhook was received (every delivery final), and the audience's counters equal a recount
 * of its memberships and of the people its filter matches.
 */
export const HOOK_EVENTS = [
  'person.created',
  'person.updated',
  'activity.created',
  'email.*',
  'organization.created',
  'audience.*',
];

/** Points above this: the audience's first filter; its second one is above `SECOND_POINTS`. */
export const FIRST_POINTS = 500;
export const SECOND_POINTS = 700;

export const pointsFilter = (above: number) => ({
  $and: [{ '$int::greater_than': { field_id: 'int:cm:points', value: above } }],
});

export class HookReceiver {
  private server?: Server;
  /** Webhook IDs (the events' IDs) answered 200. */
  readonly received = new Set<string>();
  requests = 0;
  slowAnswers = 0;
  port = 0;

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const id = String(request.headers['webhook-id'] ?? '');
      request.resume();
      request.on('end', () => {
        this.requests += 1;
        const answer = () => {
          this.received.add(id);
          response.writeHead(200).end();
        };
        if (Math.random() < 0.02) {
          this.slowAnswers += 1;
          setTimeout(answer, 3_500);
        } else answer();
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  }
}

export interface HookReport {
  eventsKept: number;
  received: number;
  requests: number;
  slowAnswers: number;
  audience: { members: number; recounted: number; matching: number; subscribers: number };
  problems: string[];
}

/** The webhook's and the audience's check, once everything has drained. */
export async function checkHooksAndAudience(
  db: DynamoDBDocumentClient,
  instanceId: string,
  webhookId: string,
  receiver: HookReceiver,
  audience: { id: string; members: number; subscribers: number; above: number },
): Promise<HookReport> {
  const problems: string[] = [];
  const kept = (await scanPrefix(db, 'deliveries', `${instanceId}#WE#${webhookId}#`)).filter(
    (item) => item.sk === 'E',
  );
  const missing = kept.filter((item) => !receiver.received.has(String(item.event_id)));
  if (missing.length > 0) {
    problems.push(
      `${missing.length} kept events never delivered: ${missing
        .slice(0, 5)
        .map((item) => `${String(item.event_type)} ${String(item.event_id)}`)
        .join(', ')}`,
    );
  }
  const memberships = (await scanPrefix(db, 'audiences', `${instanceId}#P#`)).filter(
    (item) => item.sk === `A#${audience.id}` && item.member === true,
  );
  const people = (await scanPrefix(db, 'people', `${instanceId}#P#`)).filter(
    (item) => item.sk === 'P' && item.archived_at === undefined,
  );
  const matching = people.filter((item) => {
    const fields = (item.fields ?? {}) as Record<string, unknown>;
    const points = fields['int:cm:points'];
    return typeof points === 'number' && points > audience.above;
  });
  const memberIds = new Set(memberships.map((item) => String(item.pk).split('#P#')[1]));
  const matchingIds = new Set(matching.map((item) => String(item.pk).split('#P#')[1]));
  if (audience.members !== memberships.length) {
    problems.push(
      `audience ${audience.id}: counted ${audience.members} members, recounted ${memberships.length}`,
    );
  }
  const strays = [...memberIds].filter((id) => !matchingIds.has(id));
  const left = [...matchingIds].filter((id) => !memberIds.has(id));
  if (strays.length > 0 || left.length > 0) {
    problems.push(
      `audience ${audience.id}: ${strays.length} members its filter does not match (${strays
        .slice(0, 3)
        .join(', ')}), ${left.length} matching people not members (${left.slice(0, 3).join(', ')})`,
    );
  }
  return {
    eventsKept: kept.length,
    received: receiver.received.size,
    requests: receiver.requests,
    slowAnswers: receiver.slowAnswers,
    audience: {
      members: audience.members,
      recounted: memberships.length,
      matching: matching.length,
      subscribers: audience.subscribers,
    },
    problems,
  };
}
