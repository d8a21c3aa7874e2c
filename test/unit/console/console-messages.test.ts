import { describe, expect, it } from '@jest/globals';
import { contentSecurityPolicy } from '../../../local/console-site.js';
import { emailSummary } from '../../../shared/domain/console/console-emails.js';
import { webhookHealth } from '../../../shared/domain/console/console-webhooks.js';
import type { EmailRecord } from '../../../shared/domain/email/messages.js';
import type { Webhook } from '../../../shared/domain/webhooks/webhook.js';

const record = (changes: Partial<EmailRecord> = {}): EmailRecord => ({
  instance_id: 'acme',
  message_id: '0066a1f0c7e4b0a1b2c3d4e7',
  request_id: 'r1',
  person_id: '0066a1f0c7e4b0a1b2c3d4e5',
  email_name: 'receipt',
  to: 'ada@example.com',
  status: 'sent',
  links: [],
  events: [],
  created_at: '2026-12-02T10:00:00.000Z',
  updated_at: '2026-12-02T10:00:00.000Z',
  ...changes,
});

describe('emailSummary', () => {
  it('counts opens and clicks, and gives the latest bounce and complaint', () => {
    const summary = emailSummary(
      record({
        status: 'bounced',
        subject: 'Your receipt',
        events: [
          { type: 'sent', at: '2026-12-02T10:00:01.000Z' },
          { type: 'opened', at: '2026-12-02T10:01:00.000Z' },
          { type: 'clicked', at: '2026-12-02T10:02:00.000Z', url: 'https://example.com' },
          { type: 'opened', at: '2026-12-02T10:03:00.000Z' },
          { type: 'soft_bounce', at: '2026-12-02T10:04:00.000Z', detail: 'MailboxFull' },
          { type: 'bounced', at: '2026-12-02T10:05:00.000Z', detail: 'General' },
          { type: 'bounced', at: '2026-12-02T10:06:00.000Z', detail: 'NoEmail' },
        ],
      }),
    );
    expect(summary).toMatchObject({
      subject: 'Your receipt',
      status: 'bounced',
      opens: 2,
      clicks: 1,
      bounce: { at: '2026-12-02T10:06:00.000Z', detail: 'NoEmail' },
      complaint: null,
      error: null,
    });
  });

  it('shows `sending` as queued, and no subject for an email never built', () => {
    const summary = emailSummary(record({ status: 'sending' }));
    expect(summary).toMatchObject({ status: 'queued', subject: null, opens: 0, clicks: 0 });
    const complained = emailSummary(
      record({
        status: 'complained',
        events: [{ type: 'complained', at: '2026-12-02T11:00:00.000Z' }],
      }),
    );
    expect(complained.complaint).toEqual({ at: '2026-12-02T11:00:00.000Z', detail: null });
  });
});

describe('webhookHealth', () => {
  const now = Date.parse('2026-12-02T12:00:00.000Z');
  const hook = (changes: Partial<Webhook> = {}): Webhook => ({
    id: '0066a1f0c7e4b0a1b2c3d4e9',
    url: 'https://hooks.example.com',
    events: ['*'],
    enabled: true,
    created_at: '2026-12-01T00:00:00.000Z',
    updated_at: '2026-12-01T00:00:00.000Z',
    secrets: [],
    ...changes,
  });
  const failing = {
    failing_since: '2026-12-02T09:00:00.000Z',
    failures: 4,
    paused_until: now + 60_000,
    last_failure: 'HTTP 500',
  };

  it('tells healthy, failing, paused and disabled apart', () => {
    expect(webhookHealth(hook(), now)).toEqual({
      state: 'healthy',
      failing_since: null,
      failures: 0,
      paused_until: null,
      last_failure: null,
      slow_until: null,
    });
    expect(webhookHealth(hook({ health: failing }), now)).toMatchObject({
      state: 'paused',
      failures: 4,
      paused_until: '2026-12-02T12:01:00.000Z',
      last_failure: 'HTTP 500',
    });
    expect(webhookHealth(hook({ health: { ...failing, paused_until: now - 1 } }), now).state).toBe(
      'failing',
    );
    expect(webhookHealth(hook({ enabled: false, health: failing }), now).state).toBe('disabled');
  });

  it('says an endpoint answers slowly only until its time has passed', () => {
    expect(webhookHealth(hook({ slow_until: now + 1_000 }), now).slow_until).toBe(
      '2026-12-02T12:00:01.000Z',
    );
    expect(webhookHealth(hook({ slow_until: now - 1_000 }), now).slow_until).toBeNull();
  });
});

describe("the console's Content-Security-Policy", () => {
  it('lets an email preview show HTTPS images, and nothing else loosens', () => {
    const policy = contentSecurityPolicy('http://127.0.0.1:3003/issuer');
    const directives = new Map(
      policy.split('; ').map((directive) => {
        const [name = '', ...values] = directive.split(' ');
        return [name, values];
      }),
    );
    expect(directives.get('img-src')).toEqual(["'self'", 'data:', 'https:']);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('default-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(directives.has('frame-src')).toBe(false);
  });
});
