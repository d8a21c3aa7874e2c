import { describe, expect, it } from '@jest/globals';
import {
  applyAudienceDefinitions,
  BUILD_TOKENS,
  liveAudience,
  liveOrHeld,
  updateAudience,
  type Audience,
  type AudienceJobs,
  type AudienceStore,
} from '../../../shared/domain/audiences/audience.js';
import {
  decideMemberships,
  ENTER_ACTIVITY,
  EXIT_ACTIVITY,
  type Membership,
} from '../../../shared/domain/audiences/membership.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import type { Person } from '../../../shared/domain/people/person.js';
import { testAudience, testTenant } from '../fixtures.js';

const NOW = Date.parse('2026-11-24T12:00:00Z');
const context = { fields: FieldCatalog.forPerson([{ id: 'str:cm:plan', name: 'Plan' }]) };
const plan = (value: string) => ({ '$str::is': { field_id: 'str:cm:plan', value } });

function audience(id: string, filter: unknown, exit?: unknown, extra: Partial<Audience> = {}) {
  return liveAudience(
    testAudience(id, filter, { ...(exit ? { exit_filter: exit } : {}), ...extra }),
    context,
  );
}

function person(fields: Person['fields'], extra: Partial<Person> = {}): Person {
  return {
    id: 'b'.repeat(24),
    fields: { 'bol::p': true, 'bol::sp': true, ...fields },
    tags: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

/** Applies a decision to the memberships as the store would. */
function applied(
  memberships: Map<string, Membership>,
  decision: ReturnType<typeof decideMemberships>,
) {
  const next = new Map(memberships);
  for (const change of decision.changes) {
    if (change.after) next.set(change.audienceId, change.after);
    else next.delete(change.audienceId);
  }
  return next;
}

describe('deciding memberships', () => {
  const gold = audience('a1', plan('gold'));
  const sticky = audience('a2', plan('trial'), plan('churned'));

  it('enters a matching person, subscribed by default, counting them, with an enter activity', () => {
    const decision = decideMemberships(person({ 'str:cm:plan': 'gold' }), new Map(), [gold], NOW);
    expect(decision.changes).toEqual([
      expect.objectContaining({
        audienceId: 'a1',
        entered: true,
        delta: { members: 1, subscribers: 1, sms_opted_in: 1 },
        after: expect.objectContaining({ member: true, subscribed: true, rev: 1 }),
      }),
    ]);
    expect(decision.activities.map((activity) => activity.field_id)).toEqual([ENTER_ACTIVITY]);
  });

  it('decides the same from the same state: a repeat or a late delivery changes nothing', () => {
    const subject = person({ 'str:cm:plan': 'gold' });
    const first = decideMemberships(subject, new Map(), [gold], NOW);
    const again = decideMemberships(subject, applied(new Map(), first), [gold], NOW + 1000);
    expect(again.changes).toEqual([]);
    expect(again.activities).toEqual([]);
  });

  it('keeps a member with an exit filter until it matches, and does not let them back while it does', () => {
    let memberships = new Map<string, Membership>();
    const step = (fields: Person['fields']) => {
      const decision = decideMemberships(person(fields), memberships, [sticky], NOW);
      memberships = applied(memberships, decision);
      return memberships.get('a2')?.member ?? false;
    };
    expect(step({ 'str:cm:plan': 'trial' })).toBe(true);
    expect(step({ 'str:cm:plan': 'paid' })).toBe(true);
    expect(step({ 'str:cm:plan': 'churned' })).toBe(false);
    expect(memberships.get('a2')?.left_at).toBeDefined();
  });

  it('counts a globally unsubscribed member as no subscriber, and an archived person as no member', () => {
    const subject = person({ 'str:cm:plan': 'gold' });
    const memberships = applied(new Map(), decideMemberships(subject, new Map(), [gold], NOW));
    const unsubscribed = decideMemberships(
      person({ 'str:cm:plan': 'gold', 'bol::p': false }),
      memberships,
      [gold],
      NOW,
    );
    expect(unsubscribed.changes.map((change) => change.delta)).toEqual([
      { members: 0, subscribers: -1, sms_opted_in: 0 },
    ]);
    const archived = decideMemberships(
      person({ 'str:cm:plan': 'gold' }, { archived_at: '2026-11-24T00:00:00Z' }),
      memberships,
      [gold],
      NOW,
    );
    expect(archived.changes).toEqual([
      expect.objectContaining({
        exited: true,
        delta: { members: -1, subscribers: -1, sms_opted_in: -1 },
      }),
    ]);
    expect(archived.activities.map((activity) => activity.field_id)).toEqual([EXIT_ACTIVITY]);
  });

  it('drops every membership of an erased person with what it counted, and a deleted audience’s without', () => {
    const memberships = applied(
      new Map(),
      decideMemberships(person({ 'str:cm:plan': 'gold' }), new Map(), [gold], NOW),
    );
    expect(decideMemberships(undefined, memberships, [gold], NOW).changes).toEqual([
      expect.objectContaining({
        after: null,
        delta: { members: -1, subscribers: -1, sms_opted_in: -1 },
      }),
    ]);
    expect(decideMemberships(person({}), memberships, [], NOW).changes).toEqual([
      expect.objectContaining({
        after: null,
        delta: { members: 0, subscribers: 0, sms_opted_in: 0 },
      }),
    ]);
  });

  it('holds an audience whose filter no longer compiles: memberships, choices and counts stay', () => {
    const memberships = applied(
      new Map(),
      decideMemberships(person({ 'str:cm:plan': 'gold' }), new Map(), [gold], NOW),
    );
    // The member unsubscribed from the audience in the preference center.
    const chosen = new Map<string, Membership>(
      [...memberships].map(([id, membership]) => [
        id,
        { ...membership, subscribed: false, counted: { ...membership.counted, subscribers: 0 } },
      ]),
    );
    // A configuration applied since has no str:cm:plan: the filter does not compile.
    const withoutPlan = { fields: FieldCatalog.forPerson([]) };
    const held = liveOrHeld(testAudience('a1', plan('gold')), withoutPlan);
    expect(held.held).toMatch(/^its filter no longer compiles: .*str:cm:plan/);
    for (const who of [person({ 'str:cm:plan': 'silver' }), person({})]) {
      const decision = decideMemberships(who, chosen, [held], NOW);
      expect(decision.changes).toEqual([]);
      expect(decision.activities).toEqual([]);
    }
    // Erased meanwhile: the membership goes with what it counted (the audience is not deleted).
    expect(decideMemberships(undefined, chosen, [held], NOW).changes).toEqual([
      expect.objectContaining({
        after: null,
        delta: { members: -1, subscribers: 0, sms_opted_in: -1 },
      }),
    ]);
    // The field is back: the member is decided again from where they were, still unsubscribed.
    const back = decideMemberships(person({ 'str:cm:plan': 'gold' }), chosen, [gold], NOW);
    expect(back.changes).toEqual([]);
  });

  it('leaves archived audiences as they were', () => {
    const archived = audience('a3', plan('gold'), undefined, {
      archived_at: '2026-11-02T00:00:00Z',
    });
    expect(
      decideMemberships(person({ 'str:cm:plan': 'gold' }), new Map(), [archived], NOW).changes,
    ).toEqual([]);
  });
});

describe('the configuration file’s audiences', () => {
  function fakes(existing: Audience[] = []) {
    const stored = new Map(existing.map((a) => [a.id, a]));
    const builds: string[] = [];
    const store = {
      list: () => Promise.resolve([...stored.values()]),
      get: (_i: string, id: string) => Promise.resolve(stored.get(id)),
      create: (_i: string, a: Audience) => {
        stored.set(a.id, a);
        return Promise.resolve();
      },
      update: (_i: string, a: Audience) => {
        stored.set(a.id, a);
        return Promise.resolve();
      },
      remove: (_i: string, a: Audience) => {
        stored.delete(a.id);
        return Promise.resolve();
      },
      markTimed: () => Promise.resolve(),
      counters: () => Promise.resolve(new Map()),
    } satisfies AudienceStore;
    const jobs: AudienceJobs = {
      build: (_i, id, version, options) => {
        builds.push(`${id}@${version}${options?.debounced ? ' debounced' : ''}`);
        return Promise.resolve();
      },
      dispose: () => Promise.resolve(),
    };
    return { stored, builds, services: { store, jobs } };
  }

  it('charges a rebuild to the key that asked for it, debounced; a change of the name alone costs nothing more', async () => {
    const existing = audience('d'.repeat(24), plan('gold')).audience;
    existing.build.finished_at = '2026-11-01T00:10:00.000Z';
    const { builds, services } = fakes([existing]);
    const charged: number[] = [];
    const withCharge = {
      ...services,
      filterContext: () => Promise.resolve(context),
      charge: (_tenant: unknown, tokens: number) => {
        charged.push(tokens);
        return Promise.resolve();
      },
    };
    const tenant = testTenant({ person_fields: [{ id: 'str:cm:plan', name: 'Plan' }] });
    await updateAudience({ audience_id: existing.id, name: 'Renamed' }, tenant, withCharge);
    expect(charged).toEqual([]);
    await updateAudience({ audience_id: existing.id, filter: plan('silver') }, tenant, withCharge);
    expect(charged).toEqual([BUILD_TOKENS]);
    expect(builds).toEqual([`${existing.id}@2 debounced`]);
  });

  it('makes the missing ones, changes nothing on a second apply, rebuilds a changed filter, and never deletes', async () => {
    const api = audience('c'.repeat(24), plan('api')).audience;
    const { stored, builds, services } = fakes([api]);
    const file = [
      { name: 'Gold', filter: plan('gold') },
      { name: 'Trial', filter: plan('trial'), exit_filter: plan('churned'), is_public: true },
    ];
    expect(await applyAudienceDefinitions('acme', file, context, services)).toEqual({
      created: ['Gold', 'Trial'],
      updated: [],
    });
    expect(builds).toHaveLength(2);
    expect(await applyAudienceDefinitions('acme', file, context, services)).toEqual({
      created: [],
      updated: [],
    });
    expect(builds).toHaveLength(2);
    const changed = [{ name: 'gold', filter: plan('platinum') }];
    expect(await applyAudienceDefinitions('acme', changed, context, services)).toEqual({
      created: [],
      updated: ['gold'],
    });
    const gold = [...stored.values()].find((a) => a.name.toLowerCase() === 'gold');
    expect(gold).toMatchObject({ version: 2, filter: plan('platinum') });
    expect(builds.at(-1)).toBe(`${gold?.id ?? ''}@2 debounced`);
    // Trial left the file, and the API's audience was never in it: both stay.
    expect([...stored.values()].map((a) => a.name).sort()).toEqual([
      'Audience cccccccccccccccccccccccc',
      'Trial',
      'gold',
    ]);
  });
});
