import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import type { Tenant } from '../tenancy.js';

/** An organization holds at most this many people (API.md, Limits). */
export const MAX_MEMBERS = 3000;

const id = z.string().regex(ID_PATTERN, 'expected an ID of 24 hexadecimal characters');

/** `PUT /v1/organizations/contacts/add` and `.../remove`. */
export const MembershipRequest = z.object({
  inclusion_ids: z.array(id).min(1, 'expected at least one person ID').max(MAX_MEMBERS),
  organization_id: id,
});
export type MembershipRequest = z.infer<typeof MembershipRequest>;

export type LinkResult = 'done' | 'changed';

/** The port memberships go through: people's `organization_id` and organizations' member counts. */
export interface MembershipStore {
  members(instanceId: string, organizationId: string): Promise<number | undefined>;
  /** The organization of each existing person (undefined when none); unknown IDs are absent. */
  organizationsOf(
    instanceId: string,
    personIds: string[],
  ): Promise<Map<string, string | undefined>>;
  /** Adds `count` to the member count if it stays within the limit; false if it would not. */
  reserve(instanceId: string, organizationId: string, count: number): Promise<boolean>;
  release(instanceId: string, organizationId: string, count: number): Promise<void>;
  /** Moves a person from `from` (or none) to `to`, adjusting `from`'s count; `changed` if the person moved meanwhile. */
  link(
    instanceId: string,
    personId: string,
    from: string | undefined,
    to: string,
  ): Promise<LinkResult>;
  /** Removes a person from `from`, adjusting its count; `changed` if the person is no longer in it. */
  unlink(instanceId: string, personId: string, from: string): Promise<LinkResult>;
}

const CONCURRENCY = 16;
const MAX_ATTEMPTS = 5;

async function validate(request: MembershipRequest, tenant: Tenant, store: MembershipStore) {
  const instanceId = tenant.instance.id;
  const personIds = [...new Set(request.inclusion_ids)];
  const [members, organizations] = await Promise.all([
    store.members(instanceId, request.organization_id),
    store.organizationsOf(instanceId, personIds),
  ]);
  const problems = [];
  if (members === undefined) {
    problems.push({
      field: 'organization_id',
      error: `no organization ${request.organization_id}`,
    });
  }
  const unknown = personIds.filter((personId) => !organizations.has(personId));
  if (unknown.length > 0) {
    problems.push({ field: 'inclusion_ids', error: `no such people: ${unknown.join(', ')}` });
  }
  if (problems.length > 0) {
    throw new ValidationError(problems.map((p) => `${p.field}: ${p.error}`).join('; '), problems);
  }
  return { instanceId, members: members ?? 0, organizations };
}

async function eachLimited<T>(items: T[], work: (item: T) => Promise<void>) {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

/**
 * Adds people to an organization, moving them from any other. Every ID is checked before
 * anything changes. Room is reserved first with one conditional update of the member
 * count, so parallel adds can never take an organization past 3000; the people are then
 * linked one transaction each, and room not used (someone moved meanwhile) is given back.
 */
export async function addMembers(
  request: MembershipRequest,
  tenant: Tenant,
  store: MembershipStore,
): Promise<void> {
  const { instanceId, members, organizations } = await validate(request, tenant, store);
  const target = request.organization_id;
  const moving = [...organizations].filter(([, current]) => current !== target);
  if (moving.length === 0) return;
  if (!(await store.reserve(instanceId, target, moving.length))) {
    const message = `organization_id: organization ${target} holds ${members} people; adding ${moving.length} would pass the limit of ${MAX_MEMBERS}`;
    throw new ValidationError(message, [
      { field: 'inclusion_ids', error: `at most ${MAX_MEMBERS} people per organization` },
    ]);
  }
  let unused = 0;
  try {
    await eachLimited(moving, async ([personId, current]) => {
      let from = current;
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
        if ((await store.link(instanceId, personId, from, target)) === 'done') return;
        from = (await store.organizationsOf(instanceId, [personId])).get(personId);
        if (from === target) break;
      }
      unused += 1;
    });
  } finally {
    if (unused > 0) await store.release(instanceId, target, unused);
  }
}

/** Removes people from an organization; people not in it are left alone. */
export async function removeMembers(
  request: MembershipRequest,
  tenant: Tenant,
  store: MembershipStore,
): Promise<void> {
  const { instanceId, organizations } = await validate(request, tenant, store);
  const target = request.organization_id;
  const leaving = [...organizations.entries()]
    .filter(([, current]) => current === target)
    .map(([personId]) => personId);
  await eachLimited(leaving, async (personId) => {
    await store.unlink(instanceId, personId, target);
  });
}
