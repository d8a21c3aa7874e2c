import type {
  EmailJob,
  EmailQueue,
  EmailRecord,
  EmailStore,
} from '../../../shared/domain/email/messages.js';
import type { SendContext } from '../../../shared/domain/email/send.js';
import { mergePeople } from '../../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../../shared/domain/people/merge-request.js';
import { testTenant, offlineLocation } from '../fixtures.js';
import { MemoryPeopleStore } from '../people/memory-people-store.js';

/** The ports of `sendTransactional` in memory: people, the emails table and the queue. */
export const tenant = testTenant({
  transactional_email: true,
  sending_domains: ['mail.acme.test'],
});

export const location = offlineLocation;

export const ASSET = {
  from_email: 'team@mail.acme.test',
  subject: 'Hi',
  html_body: '<p>Hello</p>',
};

export interface SendHarness {
  ports: SendContext;
  /** Emails recorded, by message ID. */
  records: Map<string, EmailRecord>;
  /** Messages the queue holds. */
  jobs: EmailJob[];
}

export function sendContext(
  store: MemoryPeopleStore,
  options: {
    /** Archived between the merge and the read of the recipients. */
    archiveBeforeRead?: string;
    queue?: Partial<EmailQueue>;
    emails?: Partial<EmailStore>;
  } = {},
): SendHarness {
  const records = new Map<string, EmailRecord>();
  const jobs: EmailJob[] = [];
  const ports: SendContext = {
    tenant,
    people: { store, location },
    readPeople: async (ids) => {
      const person = options.archiveBeforeRead && store.people.get(options.archiveBeforeRead);
      if (person) person.archived_at = new Date().toISOString();
      return store.getPeople('acme', ids);
    },
    templates: { getTemplate: () => Promise.resolve(undefined) },
    emails: {
      suppressed: () => Promise.resolve(new Set<string>()),
      create: (created, written) => {
        for (const record of created) {
          records.set(record.message_id, structuredClone(record));
          written(record.message_id);
        }
        return Promise.resolve();
      },
      get: () => Promise.resolve(new Map()),
      ...options.emails,
    },
    queue: {
      putAttachments: () => Promise.resolve([]),
      send: (queued, done) => {
        jobs.push(...queued);
        for (const job of queued) done(job.message_id);
        return Promise.resolve();
      },
      ...options.queue,
    },
    links: (id) => ({
      click: (index) => `https://links.test/c/${id}/${index}`,
      open: () => `https://links.test/o/${id}`,
      unsubscribe: () => `https://links.test/u/${id}`,
    }),
    fallbackDomain: 'mail.cdp.test',
    requestId: 'request-1',
  };
  return { ports, records, jobs };
}

/** A store holding Ann, an existing person, and her ID. */
export async function withAnn() {
  const store = new MemoryPeopleStore();
  const existing = await mergePeople(
    PersonMergeRequest.parse({ people: [{ fields: { 'str::email': 'ann@example.com' } }] }),
    { tenant, store, location },
  );
  return { store, ann: existing[0]?.person_id ?? '' };
}
