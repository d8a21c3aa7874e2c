import { DynamoActivityStore } from '../adapters/activity-store.js';
import { DynamoEmailStore } from '../adapters/email-store.js';
import { EmailLinksEnv, PeopleEnv, readEnv } from '../config/env.js';
import type { LinkPorts } from '../domain/email/links.js';
import { unsubscribePerson } from '../domain/email/unsubscribe.js';
import { serviceTenant } from '../domain/tenancy.js';
import {
  createApiRuntime,
  createLocationServices,
  createPeopleStore,
  linkSigners,
} from './api-runtime.js';

/**
 * The composition root of the public email links: the emails table, activities, the
 * deployment's signing secret, and (for unsubscribing) the people store.
 */
export function createLinkRuntime(options: { people?: boolean } = {}) {
  const { db, config, signingSecret } = createApiRuntime();
  // The unsubscribe page reads emails only (it records nothing).
  const env = readEnv(EmailLinksEnv.partial({ ACTIVITIES_TABLE: true }));
  const store = new DynamoEmailStore(db, { emails: env.EMAILS_TABLE });
  const activities = new DynamoActivityStore(db, {
    activities: env.ACTIVITIES_TABLE ?? '',
    people: options.people ? readEnv(PeopleEnv).PEOPLE_TABLE : '',
  });
  const people = options.people ? createPeopleStore(db) : undefined;
  const location = people ? createLocationServices(people) : undefined;
  const signer = linkSigners(signingSecret);
  return async (): Promise<LinkPorts> => ({
    signer: await signer(),
    store,
    writeActivity: async (instanceId, activity) => {
      await activities.write(instanceId, [activity], '');
    },
    unsubscribe: async (instanceId, personId, context) => {
      const tenant = await serviceTenant(config, instanceId, 'Email unsubscribe link');
      if (!tenant || !people || !location) return false;
      return unsubscribePerson(tenant, personId, context, { store: people, location });
    },
  });
}
