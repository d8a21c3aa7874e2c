import { DynamoEmailStore } from '../adapters/email-store.js';
import { EmailLinksEnv, readEnv } from '../config/env.js';
import type { LinkPorts } from '../domain/email/links.js';
import { unsubscriber } from '../domain/email/unsubscribe.js';
import { createApiRuntime, createPeopleWriters, linkSigners } from './api-runtime.js';

/**
 * The composition root of the public email links: the emails table, activities, the
 * deployment's signing keyring, and (for unsubscribing) the people writers.
 */
export function createLinkRuntime(options: { people?: boolean } = {}) {
  const { db, config, signingKeys } = createApiRuntime();
  // The unsubscribe page reads emails only (it records nothing).
  const env = readEnv(EmailLinksEnv.partial({ ACTIVITIES_TABLE: true }));
  const store = new DynamoEmailStore(db, {
    emails: env.EMAILS_TABLE,
    ...(env.ACTIVITIES_TABLE ? { activities: env.ACTIVITIES_TABLE } : {}),
  });
  const writers = options.people ? createPeopleWriters(db) : undefined;
  const unsubscribe = writers
    ? unsubscriber(config, 'Email unsubscribe link', {
        store: writers.people,
        location: writers.location,
      })
    : () => Promise.resolve(false);
  const signer = linkSigners(signingKeys);
  return async (): Promise<LinkPorts> => ({
    signer: await signer(),
    store,
    writeActivity: async (instanceId, activity) => {
      await store.recordActivity(instanceId, activity);
    },
    unsubscribe,
  });
}
