import { beforeAll, describe, expect, it } from '@jest/globals';
import { KEYS, call } from './stack.js';
import { idsEventually, listedEventually, mergeRepeating } from './people.js';

const key = KEYS.members;
let run = 0;
const tag = () => `${Date.now().toString(36)}-${(run += 1)}`;

async function organization(name: string): Promise<string> {
  const response = await call('/v1/organizations/merge', {
    key,
    body: { merge_by: ['str:o:name'], organizations: [{ fields: { 'str:o:name': name } }] },
  });
  return (response.body.organizations as { organization_id: string }[])[0]?.organization_id ?? '';
}

async function people(count: number, label: string): Promise<string[]> {
  const ids: string[] = [];
  const batches = Array.from({ length: Math.ceil(count / 100) }, (_, b) =>
    Array.from({ length: Math.min(100, count - b * 100) }, (_, i) => ({
      fields: { 'str::email': `${label}-${b * 100 + i}@members.test` },
    })),
  );
  for (let start = 0; start < batches.length; start += 4) {
    const results = await Promise.all(
      batches.slice(start, start + 4).map((batch) => mergeRepeating(key, { people: batch })),
    );
    for (const entries of results) ids.push(...entries.map((e) => e.person_id ?? ''));
  }
  return ids;
}

const contacts = (op: 'add' | 'remove', organization_id: string, inclusion_ids: string[]) =>
  call(`/v1/organizations/contacts/${op}`, {
    key,
    method: 'PUT',
    body: { organization_id, inclusion_ids },
  });

const byOrganization = (organizationId: string) => ({
  limit: 500,
  filter: { '$str::is': { field_id: 'idt::o', value: organizationId } },
});

/**
 * The people of an organization, by a person filter on `idt::o` (the field index, a moment
 * behind the links), once they are `expected`.
 */
function membersBecome(organizationId: string, expected: string[]): Promise<string[]> {
  return idsEventually(key, byOrganization(organizationId), expected);
}

async function organizationOf(personId: string) {
  const response = await call('/v1/person/get-by-ids', {
    key,
    body: { contact_ids: [personId], fields: ['str::email'] },
  });
  const contact = (response.body.contacts as Record<string, { fields?: Record<string, unknown> }>)[
    personId
  ];
  return contact?.fields?.['idt::o'];
}

describe('organization contacts', () => {
  let small: string[];
  beforeAll(async () => {
    small = await people(5, `small-${tag()}`);
  });

  it('adds people, shows idt::o in person get, and is idempotent', async () => {
    const org = await organization(`Add ${tag()}`);
    const [a = '', b = ''] = small;
    const first = await contacts('add', org, [a, b]);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({});
    expect(await organizationOf(a)).toBe(org);
    expect(await contacts('add', org, [a, b, a])).toMatchObject({ status: 200 });
    expect((await membersBecome(org, [a, b])).sort()).toEqual([a, b].sort());
  });

  it('moves a person to another organization', async () => {
    const [from, to] = [await organization(`From ${tag()}`), await organization(`To ${tag()}`)];
    const person = small[2] ?? '';
    await contacts('add', from, [person]);
    await contacts('add', to, [person]);
    expect(await organizationOf(person)).toBe(to);
    expect(await membersBecome(from, [])).toEqual([]);
    expect(await membersBecome(to, [person])).toEqual([person]);
  });

  it('removes people, and removing someone not linked changes nothing', async () => {
    const org = await organization(`Remove ${tag()}`);
    const [a = '', b = ''] = small.slice(3);
    await contacts('add', org, [a]);
    const removed = await contacts('remove', org, [a, b]);
    expect(removed.status).toBe(200);
    expect(await organizationOf(a)).toBeUndefined();
    expect(await membersBecome(org, [])).toEqual([]);
  });

  it('refuses unknown people or organizations with a 400 that names them, and changes nothing', async () => {
    const org = await organization(`Unknown ${tag()}`);
    const person = small[0] ?? '';
    const before = await organizationOf(person);
    const unknownPerson = await contacts('add', org, [person, 'ffffffffffffffffffffffff']);
    expect(unknownPerson.status).toBe(400);
    expect(unknownPerson.body.error).toBe(
      'inclusion_ids: no such people: ffffffffffffffffffffffff',
    );
    expect(await organizationOf(person)).toBe(before);
    const unknownOrg = await contacts('remove', 'eeeeeeeeeeeeeeeeeeeeeeee', [person]);
    expect(unknownOrg.status).toBe(400);
    expect(unknownOrg.body.error).toMatch(
      /organization_id: no organization eeeeeeeeeeeeeeeeeeeeeeee/,
    );
    // People of another instance are unknown here.
    const foreign = await call('/v1/organizations/contacts/add', {
      key: KEYS.orgs,
      method: 'PUT',
      body: { organization_id: org, inclusion_ids: [person] },
    });
    expect(foreign.status).toBe(400);
  });

  it('never lets parallel adds take an organization past 3000 people', async () => {
    const org = await organization(`Limit ${tag()}`);
    const crowd = await people(3010, `crowd-${tag()}`);
    const requests = [
      crowd.slice(0, 1000),
      crowd.slice(1000, 2000),
      crowd.slice(2000, 3000),
      crowd.slice(3000),
    ];
    const responses = await Promise.all(requests.map((ids) => contacts('add', org, ids)));
    const accepted = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 400);
    // A request that ran out of time (a thousand moves on a slower store: LocalStack, a busy
    // machine) stops before its deadline with a 503 whose details name who it linked.
    const partial = responses.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const response of refused)
      expect(response.body.error).toMatch(/would pass the limit of 3000/);
    const partialDetails = partial.flatMap(
      (response) => (response.body.details ?? []) as { person_id: string; status: string }[],
    );
    const withStatus = (status: string) =>
      partialDetails.filter((detail) => detail.status === status).map((d) => d.person_id);
    const expected = [
      ...requests.filter((_, i) => responses[i]?.status === 200).flat(),
      ...withStatus('linked'),
    ];
    // A link whose write got no answer near the deadline (`unknown`) may be either way.
    const unknown = new Set(withStatus('unknown'));
    const settled = (listed: { id: string }[]) =>
      listed.filter((c) => !unknown.has(c.id)).length === expected.length;
    const members = (await listedEventually(key, byOrganization(org), settled)).map((c) => c.id);
    expect(members.length).toBeLessThanOrEqual(3000);
    // A 503 before any link (the store overloaded while the people were read or the room
    // reserved) has no details and says nothing was linked (a reservation the store did not
    // answer may hold room: a stricter limit, never a looser one); one part-way names each
    // person. Never the function's own timeout.
    for (const response of partial.filter((r) => r.body.details === undefined)) {
      expect(response.body.error).toMatch(
        /^The data store (is overloaded.*nothing more|did not answer in time)/,
      );
    }
    expect(members.filter((person) => !unknown.has(person)).sort()).toEqual(expected.sort());
    expect(accepted.length + refused.length + partial.length).toBe(4);
    // Full now: one more is refused.
    if (members.length === 3000) {
      const more = await contacts('add', org, [small[4] ?? '']);
      expect(more.status).toBe(400);
    }
    // 3,010 people made and 3,000 links: 138-183 s alone on 2 cores, past 240 s when the
    // fault-injected project's copy of this test ran beside it (2026-11-29, npm test).
  }, 480_000);
});
