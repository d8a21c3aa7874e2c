import { describe, expect, it } from '@jest/globals';
import {
  getSubscriptions,
  PersonSubscriptionsRequest,
} from '../../../shared/domain/people/person-subscriptions.js';
import { claimId } from '../../../shared/domain/merge/merge-engine.js';
import type { Person } from '../../../shared/domain/people/person.js';
import { testTenant } from '../fixtures.js';

const A = 'aaaaaaaaaaaaaaaaaaaaaaaa';
const B = 'bbbbbbbbbbbbbbbbbbbbbbbb';

function person(id: string, fields: Person['fields']): Person {
  return { id, fields, tags: [], created_at: 'then', updated_at: 'then' };
}

/** The two reads the lookup makes, recording whether they were strongly consistent. */
function store() {
  const reads: { what: string; consistent: boolean | undefined }[] = [];
  const claims = new Map([[claimId('str::email', 'ann@x.test'), A]]);
  const people = new Map([
    [A, person(A, { 'str::email': 'Ann@x.test', 'bol::p': true, 'bol::sp': false })],
    [B, person(B, { 'str::ei': 'b', 'bol::p': false, 'bol::sp': true })],
  ]);
  return {
    reads,
    findClaimOwners: (
      _i: string,
      keys: { field: string; value: string }[],
      consistent?: boolean,
    ) => {
      reads.push({ what: `claims ${keys.map((k) => k.value).join(',')}`, consistent });
      const owners = new Map<string, string>();
      for (const { field, value } of keys) {
        const owner = claims.get(claimId(field, value));
        if (owner) owners.set(claimId(field, value), owner);
      }
      return Promise.resolve(owners);
    },
    getPeople: (_i: string, ids: string[], consistent?: boolean) => {
      reads.push({ what: `people ${ids.join(',')}`, consistent });
      return Promise.resolve(
        new Map(ids.flatMap((id) => (people.has(id) ? [[id, people.get(id) as Person]] : []))),
      );
    },
  };
}

describe('getSubscriptions', () => {
  it('answers by email and by ID in order, in two strongly consistent batched reads', async () => {
    const fake = store();
    const request = PersonSubscriptionsRequest.parse({
      people: [
        { email: ' ANN@x.test ' },
        { person_id: B },
        { email: 'nobody@x.test' },
        { person_id: A },
      ],
    });
    const answer = await getSubscriptions(request, testTenant(), fake);
    expect(answer.people).toEqual([
      {
        person_status: 'merged',
        person_id: A,
        email: 'Ann@x.test',
        email_permissions: true,
        sms_permissions: false,
        subscriptions: [],
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      },
      {
        person_status: 'by-id',
        person_id: B,
        email_permissions: false,
        sms_permissions: true,
        subscriptions: [],
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      },
      {
        person_status: 'invalid',
        email: 'nobody@x.test',
        error: 'people[2].email: no person has this email address',
      },
      {
        person_status: 'by-id',
        person_id: A,
        email_permissions: true,
        sms_permissions: false,
        subscriptions: [],
        ios_permissions: false,
        android_permissions: false,
        web_permissions: false,
      },
    ]);
    expect(fake.reads).toEqual([
      { what: 'claims ann@x.test,nobody@x.test', consistent: true },
      { what: `people ${A},${B}`, consistent: true },
    ]);
  });

  it.each([
    [{ people: [{}] }, ['people', 0]],
    [{ people: [{ email: 'no-at-sign' }] }, ['people', 0, 'email']],
    [{ people: [{ person_id: 'A'.repeat(24) }] }, ['people', 0, 'person_id']],
  ])('refuses %j at %j', (body, path) => {
    const parsed = PersonSubscriptionsRequest.safeParse(body);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(path);
  });
});
