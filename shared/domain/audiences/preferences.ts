import { NotFoundError } from '../errors.js';
import type { AudienceStore } from './audience.js';
import { setAudienceEmail, type SubscribePorts } from './subscribe.js';

/**
 * The preference center of an email's unsubscribe page (docs/audiences.md): the public
 * audiences the person is a member of, each with its email choice, and unsubscribing from
 * one of them (the page's other button unsubscribes from all email, `bol::p`).
 */
export interface PreferencePorts extends SubscribePorts {
  audiences: Pick<AudienceStore, 'get' | 'list'>;
}

export interface AudiencePreference {
  audience_id: string;
  /** The audience's public name (its name when it has none). */
  name: string;
  description: string;
  subscribed: boolean;
}

export async function preferencesOf(
  instanceId: string,
  personId: string,
  ports: {
    audiences: Pick<AudienceStore, 'list'>;
    memberships: Pick<SubscribePorts['memberships'], 'read'>;
  },
): Promise<AudiencePreference[]> {
  const [audiences, { memberships }] = await Promise.all([
    ports.audiences.list(instanceId),
    ports.memberships.read(instanceId, personId),
  ]);
  return audiences
    .filter((audience) => audience.is_public && !audience.archived_at)
    .filter((audience) => memberships.get(audience.id)?.member === true)
    .sort((a, b) => a.created.localeCompare(b.created))
    .map((audience) => ({
      audience_id: audience.id,
      name: audience.public_name || audience.name,
      description: audience.public_description,
      subscribed: memberships.get(audience.id)?.subscribed ?? true,
    }));
}

/** Unsubscribes the person from one public audience they are a member of. */
export async function unsubscribeFromAudience(
  instanceId: string,
  personId: string,
  audienceId: string,
  ports: PreferencePorts,
): Promise<AudiencePreference> {
  const audience = await ports.audiences.get(instanceId, audienceId);
  const missing = () =>
    new NotFoundError('audience: this list is not one you can unsubscribe from here', [
      { field: 'audience', error: 'no such public audience of this person' },
    ]);
  if (!audience?.is_public || audience.archived_at) throw missing();
  const entry = await setAudienceEmail(instanceId, audienceId, personId, false, ports);
  if (entry.status !== 'unsubscribed') throw missing();
  return {
    audience_id: audience.id,
    name: audience.public_name || audience.name,
    description: audience.public_description,
    subscribed: false,
  };
}
