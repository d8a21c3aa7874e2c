import { describe, expect, it } from '@jest/globals';
import { overviewOf, type OverviewPorts } from '../../../shared/domain/console/console-overview.js';
import { NotFoundError } from '../../../shared/domain/errors.js';
import type { ConsoleUser } from '../../../shared/domain/console/console-user.js';
import { lastDays } from '../../../shared/domain/email/email-tallies.js';
import type { DeliveryAttempt } from '../../../shared/domain/webhooks/attempts.js';
import type { Webhook } from '../../../shared/domain/webhooks/webhook.js';
import type { InstanceSchema } from '../../../shared/domain/tenancy.js';

/** The overview from fakes of its ports: what each figure is read from, and who sees what. */
const instance = {
  id: 'acme',
  name: 'Acme',
  region: 'default',
  plan: 'business',
  transactional_email: true,
  sending_domains: [],
  data_sources: [],
  person_fields: [],
  organization_fields: [],
  activities: [],
} as unknown as InstanceSchema;

const webhook = (id: string, extra: Partial<Webhook> = {}): Webhook => ({
  id,
  url: `https://hooks.example.com/${id}`,
  events: ['*'],
  enabled: true,
  created_at: '2026-12-01T00:00:00.000Z',
  updated_at: '2026-12-01T00:00:00.000Z',
  secrets: [],
  ...extra,
});

const attempt = (webhookId: string, status: 'succeeded' | 'failed'): DeliveryAttempt => ({
  webhook_id: webhookId,
  event_id: 'e1',
  event_type: 'person.created',
  replay_id: null,
  attempt: 1,
  status,
  status_code: status === 'succeeded' ? 200 : 503,
  latency_ms: 12,
  response_body: null,
  response_truncated: false,
  error: null,
  attempted_at: '2026-12-07T09:00:00.000Z',
});

function ports(calls: string[]): OverviewPorts {
  return {
    config: { getInstance: (id) => Promise.resolve(id === 'acme' ? instance : undefined) },
    counters: {
      counters: () => Promise.resolve({ contacts: 12, subscribers: 7, organizations: 3 }),
    },
    emails: {
      tallies: (_id, days) => {
        calls.push(`tallies ${days.join(',')}`);
        return Promise.resolve({ sent: 9, bounced: 2, complained: 1 });
      },
    },
    webhooks: {
      list: () =>
        Promise.resolve([
          webhook('w1'),
          webhook('w2', {
            enabled: false,
            disabled_reason: 'failing for 3 days',
            health: {
              failing_since: '2026-12-04T00:00:00.000Z',
              failures: 15,
              paused_until: 0,
              last_failure: 'HTTP 503',
            },
          }),
          webhook('w3', {
            health: {
              failing_since: '2026-12-07T11:00:00.000Z',
              failures: 4,
              paused_until: Date.parse('2026-12-07T12:05:00.000Z'),
              last_failure: 'timeout',
            },
          }),
        ]),
    },
    attempts: {
      attempts: (_id, webhookId, query) => {
        calls.push(`attempts ${webhookId} ${query.limit}`);
        if (webhookId === 'w3') return Promise.resolve({ attempts: [] });
        return Promise.resolve({
          attempts: [attempt(webhookId, webhookId === 'w1' ? 'succeeded' : 'failed')],
        });
      },
    },
    deadLetters: {
      depths: () => {
        calls.push('depths');
        return Promise.resolve([
          { queue: 'ingest', messages: 2 },
          { queue: 'email', messages: null },
          { queue: 'webhooks', messages: 5 },
        ]);
      },
    },
    now: () => new Date('2026-12-07T12:00:00.000Z'),
  };
}

const user = (platformAdmin: boolean): ConsoleUser => ({
  subject: 's',
  email: 'ops@acme.test',
  platformAdmin,
  instances: new Set(platformAdmin ? [] : ['acme']),
});

describe('the overview', () => {
  it("reads the counters, the week's email counters, each webhook's health and newest attempt", async () => {
    const calls: string[] = [];
    const overview = await overviewOf(ports(calls), { user: user(false) }, 'default', 'acme');
    expect(overview).toEqual({
      instance_id: 'acme',
      people: { people: 12, subscribers: 7, organizations: 3 },
      emails: { from: '2026-12-01', to: '2026-12-07', sent: 9, bounced: 2, complained: 1 },
      webhooks: [
        expect.objectContaining({
          id: 'w1',
          enabled: true,
          health: expect.objectContaining({ state: 'healthy', failures: 0, failing_since: null }),
          last_attempt: { at: '2026-12-07T09:00:00.000Z', outcome: 'succeeded', status_code: 200 },
        }),
        expect.objectContaining({
          id: 'w2',
          enabled: false,
          disabled_reason: 'failing for 3 days',
          health: expect.objectContaining({
            state: 'disabled',
            failures: 15,
            failing_since: '2026-12-04T00:00:00.000Z',
            last_failure: 'HTTP 503',
          }),
          last_attempt: expect.objectContaining({ outcome: 'failed', status_code: 503 }),
        }),
        expect.objectContaining({
          id: 'w3',
          // Paused until five minutes after the overview's moment: paused, not merely failing.
          health: expect.objectContaining({
            state: 'paused',
            failures: 4,
            paused_until: '2026-12-07T12:05:00.000Z',
          }),
          last_attempt: null,
        }),
      ],
      // The region's queues are every instance's: not shown to an instance's users.
      dead_letters: null,
    });
    expect(calls).not.toContain('depths');
    // One page of one attempt per webhook, and seven days of counters.
    expect(calls.filter((call) => call.startsWith('attempts')).sort()).toEqual([
      'attempts w1 1',
      'attempts w2 1',
      'attempts w3 1',
    ]);
    expect(calls).toContain(`tallies ${lastDays(new Date('2026-12-07T12:00:00Z')).join(',')}`);
  });

  it("shows platform admins the region's dead letters, summed", async () => {
    const overview = await overviewOf(ports([]), { user: user(true) }, 'default', 'acme');
    expect(overview.dead_letters).toEqual({
      queues: [
        { queue: 'ingest', messages: 2 },
        { queue: 'email', messages: null },
        { queue: 'webhooks', messages: 5 },
      ],
      total: 7,
    });
  });

  it("answers another tenant's instance, or another region's, as one that does not exist", async () => {
    const other = { ...user(false), instances: new Set(['globex']) };
    await expect(overviewOf(ports([]), { user: other }, 'default', 'acme')).rejects.toThrow(
      NotFoundError,
    );
    await expect(overviewOf(ports([]), { user: user(true) }, 'eu', 'acme')).rejects.toThrow(
      NotFoundError,
    );
  });
});

describe('lastDays', () => {
  it('names the seven UTC days up to today, across a month', () => {
    expect(lastDays(new Date('2026-03-02T23:59:59Z'))).toEqual([
      '2026-02-24',
      '2026-02-25',
      '2026-02-26',
      '2026-02-27',
      '2026-02-28',
      '2026-03-01',
      '2026-03-02',
    ]);
  });
});
