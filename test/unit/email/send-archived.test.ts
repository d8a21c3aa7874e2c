import { describe, expect, it } from '@jest/globals';
import { sendTransactional } from '../../../shared/domain/email/send.js';
import { ASSET, sendContext, withAnn } from './send-context.js';

describe('transactional send to a person archived meanwhile', () => {
  it('refuses that recipient as the merge refuses archived people, and emails the others', async () => {
    const { store, ann } = await withAnn();
    const { ports, records, jobs } = sendContext(store, { archiveBeforeRead: ann });
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
    expect([...records.values()].map((record) => record.to)).toEqual(['bob@example.com']);
    expect(jobs.map((job) => job.message_id)).toEqual([answer.emails[1]?.message_id]);
  });

  it('answers what the merge wrote when the archived person is the only recipient, and emails nobody', async () => {
    const { store, ann } = await withAnn();
    const { ports, records, jobs } = sendContext(store, { archiveBeforeRead: ann });
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
    expect(records.size).toBe(0);
    expect(jobs).toEqual([]);
  });
});
