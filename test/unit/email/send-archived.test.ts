import { describe, expect, it } from '@jest/globals';
import { OfflineGeocoder } from '../../../shared/adapters/geocoders.js';
import type { EmailJob, EmailRecord } from '../../../shared/domain/email/messages.js';
import { sendTransactional, type SendContext } from '../../../shared/domain/email/send.js';
import type { LocationServices } from '../../../shared/domain/location.js';
import { mergePeople } from '../../../shared/domain/people/merge-people.js';
import { PersonMergeRequest } from '../../../shared/domain/people/merge-request.js';
import { testTenant } from '../fixtures.js';
import { MemoryPeopleStore } from '../people/memory-people-store.js';

const tenant = testTenant({ transactional_email: true, sending_domains: ['mail.acme.test'] });
const location: LocationServices = {
  ipLocator: { locate: () => Promise.resolve(undefined) },
  geocoder: new OfflineGeocoder(),
  meter: { record: () => Promise.resolve() },
};

/** The send's ports in memory; `archiveBeforeRead` is archived between the merge and the read. */
function context(store: MemoryPeopleStore, archiveBeforeRead: string) {
  const records: EmailRecord[] = [];
  const jobs: EmailJob[] = [];
  const ports: SendContext = {
    tenant,
    people: { store, location },
    readPeople: async (ids) => {
      const person = store.people.get(archiveBeforeRead);
      if (person) person.archived_at = new Date().toISOString();
      return store.getPeople('acme', ids);
    },
    templates: { getTemplate: () => Promise.resolve(undefined) },
    emails: {
      suppressed: () => Promise.resolve(new Set<string>()),
      create: (created, written) => {
        records.push(...created);
        for (const record of created) written(record.message_id);
        return Promise.resolve();
      },
      get: () => Promise.resolve(new Map()),
      markFailed: () => Promise.resolve(new Set<string>()),
    },
    queue: {
      putAttachments: () => Promise.resolve([]),
      send: (queued, done) => {
        jobs.push(...queued);
        for (const job of queued) done(job.message_id);
        return Promise.resolve();
      },
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

const ASSET = { from_email: 'team@mail.acme.test', subject: 'Hi', html_body: '<p>Hello</p>' };

/** A store holding Ann, an existing person, and her ID. */
async function withAnn() {
  const store = new MemoryPeopleStore();
  const existing = await mergePeople(
    PersonMergeRequest.parse({ people: [{ fields: { 'str::email': 'ann@example.com' } }] }),
    { tenant, store, location },
  );
  return { store, ann: existing[0]?.person_id ?? '' };
}

describe('transactional send to a person archived meanwhile', () => {
  it('refuses that recipient as the merge refuses archived people, and emails the others', async () => {
    const { store, ann } = await withAnn();
    const { ports, records, jobs } = context(store, ann);
    const answer = await sendTransactional(
      {
        asset: ASSET,
        // Ann's merge changes nothing (so writes nothing, and no condition sees the archive).
        emails: [
          { fields: { 'str::email': 'ann@example.com' } },
          { fields: { 'str::email': 'bob@example.com' } },
        ],
      },
      ports,
    );
    expect(answer.emails[0]).toEqual({
      person_id: ann,
      contact_status: 'merged',
      email_status: 'invalid',
      error: `emails[0]: the person ${ann} is archived; restore it (PUT /v1/person/restore) before sending data for it`,
    });
    expect(answer.emails[1]).toMatchObject({ contact_status: 'created', email_status: 'queued' });
    expect(records.map((record) => record.to)).toEqual(['bob@example.com']);
    expect(jobs.map((job) => job.message_id)).toEqual([answer.emails[1]?.message_id]);
  });

  it('answers what the merge wrote when the archived person is the only recipient, and emails nobody', async () => {
    const { store, ann } = await withAnn();
    const { ports, records, jobs } = context(store, ann);
    const answer = await sendTransactional(
      {
        asset: ASSET,
        // This merge writes Ann's first name, then the archive lands before the read.
        emails: [{ fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' } }],
      },
      ports,
    );
    // Not a 400 "nothing was applied": the first name was written.
    expect(answer.emails).toEqual([
      {
        person_id: ann,
        contact_status: 'merged',
        email_status: 'invalid',
        error: `emails[0]: the person ${ann} is archived; restore it (PUT /v1/person/restore) before sending data for it`,
      },
    ]);
    expect(store.people.get(ann)?.fields['str::first']).toBe('Ann');
    expect(records).toEqual([]);
    expect(jobs).toEqual([]);
  });
});
