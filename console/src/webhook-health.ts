import type { WebhookListing } from './api.ts';

type Health = WebhookListing['health'];

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

/** How an endpoint is doing, in words: the overview's and the webhooks page's. */
export function healthText(health: Health, disabledReason: string | null): string {
  if (health.state === 'disabled') return disabledReason ?? 'disabled by its owner';
  if (health.state === 'healthy') {
    return health.slow_until ? `answers slowly (until ${when(health.slow_until)})` : 'delivering';
  }
  const since = `${health.failures} failed attempts in a row since ${when(health.failing_since)}`;
  return health.state === 'paused' ? `${since}; paused until ${when(health.paused_until)}` : since;
}
