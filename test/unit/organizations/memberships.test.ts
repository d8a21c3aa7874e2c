import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../shared/domain/errors.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import {
  addMembers,
  MAX_MEMBERS,
  removeMembers,
  type MembershipStore,
} from '../../../shared/domain/organizations/memberships.js';
import type { Tenant } from '../../../shared/domain/tenancy.js';

const tenant = {
  instance: { id: 'acme' },
  personFields: FieldCatalog.forPerson(),
  organizationFields: FieldCatalog.forOrganization(),
} as unknown as Tenant;

const ORG_A = 'aaaaaaaaaaaaaaaaaaaaaaaa';
const ORG_B = 'bbbbbbbbbbbbbbbbbbbbbbbb';
const id = (n: number) => n.toString(16).padStart(24, '0');

/** Memberships in memory, with the same conditions as DynamoDB's. */
class MemoryMemberships {
  readonly members = new Map<string, number>([
    [ORG_A, 0],
    [ORG_B, 0],
  ]);
  readonly links = new Map<string, string | undefined>();
  moveBeforeNextLink: (() => void) | undefined;

  constructor(people: number) {
    for (let n = 1; n <= people; n += 1) this.links.set(id(n), undefined);
  }
  membersOf = (_i: string, org: string) => Promise.resolve(this.members.get(org));
  organizationsOf(_i: string, ids: string[]) {
    return Promise.resolve(
      new Map(ids.filter((p) => this.links.has(p)).map((p) => [p, this.links.get(p)])),
    );
  }
  reserve(_i: string, org: string, count: number) {
    const current = this.members.get(org) ?? 0;
    if (current + count > MAX_MEMBERS) return Promise.resolve(false);
    this.members.set(org, current + count);
    return Promise.resolve(true);
  }
  release(_i: string, org: string, count: number) {
    this.members.set(org, (this.members.get(org) ?? 0) - count);
    return Promise.resolve();
  }
  link(_i: string, person: string, from: string | undefined, to: string) {
    const hook = this.moveBeforeNextLink;
    this.moveBeforeNextLink = undefined;
    hook?.();
    if (this.links.get(person) !== from) return Promise.resolve('changed' as const);
    if (from) this.members.set(from, (this.members.get(from) ?? 0) - 1);
    this.links.set(person, to);
    return Promise.resolve('done' as const);
  }
  unlink(_i: string, person: string, from: string) {
    if (this.links.get(person) !== from) return Promise.resolve('changed' as const);
    this.members.set(from, (this.members.get(from) ?? 0) - 1);
    this.links.set(person, undefined);
    return Promise.resolve('done' as const);
  }
}

function store(people: number) {
  const memory = new MemoryMemberships(people);
  const port: MembershipStore = {
    members: memory.membersOf,
    organizationsOf: (i, ids) => memory.organizationsOf(i, ids),
    reserve: (i, o, c) => memory.reserve(i, o, c),
    release: (i, o, c) => memory.release(i, o, c),
    link: (i, p, f, t) => memory.link(i, p, f, t),
    unlink: (i, p, f) => memory.unlink(i, p, f),
  };
  return { memory, port };
}

describe('memberships', () => {
  it('adds, moves and removes, keeping member counts right', async () => {
    const { memory, port } = store(3);
    await addMembers({ organization_id: ORG_A, inclusion_ids: [id(1), id(2)] }, tenant, port);
    await addMembers({ organization_id: ORG_B, inclusion_ids: [id(2), id(3)] }, tenant, port);
    expect([memory.members.get(ORG_A), memory.members.get(ORG_B)]).toEqual([1, 2]);
    await removeMembers({ organization_id: ORG_B, inclusion_ids: [id(1), id(2)] }, tenant, port);
    expect([memory.members.get(ORG_A), memory.members.get(ORG_B)]).toEqual([1, 1]);
    expect(memory.links.get(id(2))).toBeUndefined();
  });

  it('refuses unknown people and organizations before changing anything', async () => {
    const { memory, port } = store(1);
    await expect(
      addMembers({ organization_id: ORG_A, inclusion_ids: [id(1), id(99)] }, tenant, port),
    ).rejects.toThrow(new ValidationError(`inclusion_ids: no such people: ${id(99)}`));
    await expect(
      addMembers({ organization_id: id(7), inclusion_ids: [id(1)] }, tenant, port),
    ).rejects.toThrow(/organization_id: no organization/);
    expect(memory.links.get(id(1))).toBeUndefined();
  });

  it('refuses an add that would pass 3000, and gives back room a concurrent move used', async () => {
    const { memory, port } = store(3001);
    const everyone = Array.from({ length: 3001 }, (_, n) => id(n + 1));
    await expect(
      addMembers({ organization_id: ORG_A, inclusion_ids: everyone }, tenant, port),
    ).rejects.toThrow(/limit of 3000/);
    expect(memory.members.get(ORG_A)).toBe(0);
    memory.moveBeforeNextLink = () => {
      memory.links.set(id(1), ORG_A); // someone else linked the person meanwhile
    };
    await addMembers({ organization_id: ORG_A, inclusion_ids: [id(1), id(2)] }, tenant, port);
    expect(memory.members.get(ORG_A)).toBe(1);
  });
});
