import { describe, expect, it } from '@jest/globals';
import {
  BUILD_SHARDS,
  isBuilt,
  liveAudience,
  newBuild,
  SHARD_DONE,
  type Audience,
} from '../../../shared/domain/audiences/audience.js';
import {
  BUILD_DEBOUNCE_SECONDS,
  BUILD_WAIT_SECONDS,
  FINISH_PATIENCE_ATTEMPTS,
  MAX_CONCURRENT_BUILDS,
  runAudienceJob,
  startBuild,
  type AudienceJob,
  type AudienceJobPorts,
} from '../../../shared/domain/audiences/jobs.js';
import type { Membership } from '../../../shared/domain/audiences/membership.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';
import { testAudience } from '../fixtures.js';
import type { Person } from '../../../shared/domain/people/person.js';

/**
 * A build's pages: a first build settles the people its filter leaves as they are and asks
 * the audience worker for the others; a rebuild, a filter that depends on time or one that no
 * longer compiles asks for everyone. Each page counts what it reached and what it settled.
 */
const NOW = Date.parse('2026-11-27T12:00:00Z');
const context = { fields: FieldCatalog.forPerson([{ id: 'str:cm:plan', name: 'Plan' }]) };
const gold = { $and: [{ '$str::is': { field_id: 'str:cm:plan', value: 'gold' } }] };

const definition = (filter: unknown, version = 1): Audience =>
  testAudience('a'.repeat(24), filter, { name: 'Gold', version });

const id = (n: number) => n.toString(16).padStart(24, '0');

function person(n: number, plan: string, extra: Partial<Person> = {}): Person {
  return {
    id: id(n),
    fields: { 'bol::p': true, 'bol::sp': true, 'str:cm:plan': plan },
    tags: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

function membership(member: boolean): Membership {
  const counted = member
    ? ({ members: 1, subscribers: 1, sms_opted_in: 1 } as const)
    : ({ members: 0, subscribers: 0, sms_opted_in: 0 } as const);
  return {
    audience_id: 'a'.repeat(24),
    member,
    subscribed: true,
    sms_opted_in: true,
    counted,
    rev: 1,
  };
}

/**
 * One shard's people: 1 gold, not a member (enters); 2 silver, never a member (settled);
 * 3 gold, a member (settled); 4 erased with a membership (leaves); 5 silver, a member (exits);
 * 6 erased with none (settled); 7 archived, never a member (settled).
 */
const PEOPLE = new Map<string, { person?: Person; membership?: Membership }>([
  [id(1), { person: person(1, 'gold') }],
  [id(2), { person: person(2, 'silver') }],
  [id(3), { person: person(3, 'gold'), membership: membership(true) }],
  [id(4), { membership: membership(true) }],
  [id(5), { person: person(5, 'silver'), membership: membership(true) }],
  [id(6), {}],
  [id(7), { person: person(7, 'gold', { archived_at: '2026-11-02T00:00:00Z' }) }],
]);

function ports(audience: Audience, compiles = true, others: Audience[] = []) {
  const asked: string[][] = [];
  let pages = 0;
  const advances: { queued: number; decided: number; to: string }[] = [];
  const reads: string[][] = [];
  const sent: AudienceJob[] = [];
  const delays: number[] = [];
  const stored = structuredClone(audience);
  const value: AudienceJobPorts = {
    audiences: {
      get: () => Promise.resolve(structuredClone(stored)),
      list: () => Promise.resolve([structuredClone(stored), ...others]),
      counters: () => Promise.resolve(new Map()),
      advanceBuild: (_instance, _audience, shard, from, to, queued, decided) => {
        if (stored.build.cursors[String(shard)] !== from) return Promise.resolve(false);
        stored.build.cursors[String(shard)] = to;
        stored.build.queued += queued;
        stored.build.decided = (stored.build.decided ?? 0) + decided;
        advances.push({ queued, decided, to });
        return Promise.resolve(true);
      },
      finishBuild: () => Promise.resolve(),
      removeCounters: () => Promise.resolve(),
      timedInstances: () => Promise.resolve([]),
      live: (_instance, found) =>
        Promise.resolve(compiles ? liveAudience(found, context) : undefined),
    },
    people: {
      listPage: () => {
        pages += 1;
        return Promise.resolve({ ids: [...PEOPLE.keys()], hasMore: false });
      },
    },
    memberships: {
      readForBuild: (_instance, personIds) => {
        reads.push([...personIds]);
        return Promise.resolve(
          new Map(personIds.map((personId) => [personId, PEOPLE.get(personId) ?? {}])),
        );
      },
      requestEvaluation: (_instance, personIds) => {
        asked.push([...personIds]);
        return Promise.resolve();
      },
      dueForRecheck: () => Promise.resolve({ personIds: [] }),
      disposeMembers: () => Promise.resolve(0),
    },
    queue: {
      send: (job, delaySeconds = 0) => {
        sent.push(job);
        delays.push(delaySeconds);
        return Promise.resolve();
      },
    },
    now: () => NOW,
    sliceMs: 20_000,
  };
  return { value, asked, advances, reads, sent, delays, stored, pages: () => pages };
}

const buildJob = (audience: Audience): AudienceJob => ({
  kind: 'build',
  instance_id: 'inst',
  audience_id: audience.id,
  version: audience.build.version,
  shard: 0,
});

describe('audience builds', () => {
  it('ten rapid changes of a filter cost one build: the last one’s', async () => {
    const audience = definition(gold, 2);
    const run = ports(audience);
    // Ten changes, each queuing its build's shards, debounced.
    for (let version = 2; version <= 11; version += 1) {
      run.stored.version = version;
      run.stored.build = newBuild(version, new Date(NOW).toISOString());
      await startBuild('inst', audience.id, version, run.value.queue, BUILD_DEBOUNCE_SECONDS);
    }
    expect(run.sent).toHaveLength(10 * BUILD_SHARDS);
    expect(new Set(run.delays)).toEqual(new Set([BUILD_DEBOUNCE_SECONDS]));
    // When the messages come, the audience is at its last version: the others do nothing.
    const queued = run.sent.splice(0);
    for (const job of queued) await runAudienceJob(job, run.value);
    expect(run.pages()).toBe(BUILD_SHARDS);
    expect(run.asked).toHaveLength(BUILD_SHARDS);
    expect(run.stored.build.queued).toBe(BUILD_SHARDS * PEOPLE.size);
  });

  it('walks at most two builds of an instance at once, the earliest first', async () => {
    const audience = definition(gold, 2);
    audience.build.started_at = '2026-11-27T12:00:10.000Z';
    const earlier = (n: number, finished?: string) => {
      const other = testAudience(n.toString(16).padStart(24, 'b'), gold, { version: 2 });
      other.build.started_at = `2026-11-27T12:00:0${n}.000Z`;
      if (finished) other.build.finished_at = finished;
      return other;
    };
    const busy = ports(audience, true, [earlier(1), earlier(2)]);
    await runAudienceJob(buildJob(audience), busy.value);
    expect(busy.pages()).toBe(0);
    expect(busy.sent).toEqual([buildJob(audience)]);
    expect(busy.delays).toEqual([BUILD_WAIT_SECONDS]);
    expect(MAX_CONCURRENT_BUILDS).toBe(2);
    // One of them finished (or was archived): this one goes.
    const free = ports(audience, true, [earlier(1), earlier(2, '2026-11-27T12:05:00.000Z')]);
    await runAudienceJob(buildJob(audience), free.value);
    expect(free.pages()).toBe(1);
  });

  it('settles the people a first build leaves as they are and asks the worker for the rest', async () => {
    const audience = definition(gold);
    const run = ports(audience);
    await runAudienceJob(buildJob(audience), run.value);
    expect(run.asked).toEqual([[id(1), id(4), id(5)]]);
    expect(run.advances).toEqual([{ queued: 7, decided: 4, to: SHARD_DONE }]);
    expect(run.sent).toEqual([expect.objectContaining({ kind: 'finish', attempt: 0 })]);
  });

  it('counts the settled people as evaluated: the build is over when the worker has the rest', () => {
    const audience = definition(gold);
    audience.build.cursors = Object.fromEntries(
      Array.from({ length: BUILD_SHARDS }, (_, shard) => [String(shard), SHARD_DONE]),
    );
    audience.build.queued = 7;
    audience.build.decided = 4;
    expect(isBuilt(audience, { evaluated: 2 })).toBe(false);
    expect(isBuilt(audience, { evaluated: 3 })).toBe(true);
  });

  it('asks for everyone on a rebuild (a worker may still hold the old filter)', async () => {
    const audience = definition(gold, 2);
    const run = ports(audience);
    await runAudienceJob(buildJob(audience), run.value);
    expect(run.reads).toEqual([]);
    expect(run.asked).toEqual([[...PEOPLE.keys()]]);
    expect(run.advances).toEqual([{ queued: 7, decided: 0, to: SHARD_DONE }]);
  });

  it('asks for everyone when the filter depends on time, or no longer compiles', async () => {
    const recent = {
      $and: [{ '$tme::relative_less_than': { field_id: 'tme::c', days_ago: 30 } }],
    };
    for (const [audience, compiles] of [
      [definition(recent), true],
      [definition(gold), false],
    ] as const) {
      const run = ports(audience, compiles);
      await runAudienceJob(buildJob(audience), run.value);
      expect(run.asked).toEqual([[...PEOPLE.keys()]]);
      expect(run.advances).toEqual([{ queued: 7, decided: 0, to: SHARD_DONE }]);
    }
  });

  it('leaves to the next message a page that would end past its slice', async () => {
    const audience = definition(gold);
    const run = ports(audience);
    let clock = NOW;
    let after = 0;
    run.value.now = () => clock;
    // Every page takes 7 s of a 20 s slice, and there is always more.
    run.value.people.listPage = () => {
      clock += 7_000;
      after += 1;
      return Promise.resolve({ ids: [id(after)], hasMore: true });
    };
    await runAudienceJob(buildJob(audience), run.value);
    expect(run.advances.map((advance) => advance.to)).toEqual([id(1), id(2)]);
    expect(run.sent).toEqual([buildJob(audience)]);
  });
  it('checks a walked build again after 1, 2, 4 and 8 s, then every 10 s, and records it built after its patience', async () => {
    const audience = definition(gold);
    audience.build.cursors = Object.fromEntries(
      Array.from({ length: BUILD_SHARDS }, (_, shard) => [String(shard), SHARD_DONE]),
    );
    audience.build.queued = 7;
    audience.build.decided = 4;
    const run = ports(audience);
    const delays: number[] = [];
    let finished = 0;
    run.value.queue.send = (_job, delaySeconds) => {
      delays.push(delaySeconds ?? 0);
      return Promise.resolve();
    };
    run.value.audiences.finishBuild = () => {
      finished += 1;
      return Promise.resolve();
    };
    const finish = (attempt: number): AudienceJob => ({
      kind: 'finish',
      instance_id: 'inst',
      audience_id: audience.id,
      version: audience.build.version,
      attempt,
    });
    for (let attempt = 0; attempt < 7; attempt += 1) {
      await runAudienceJob(finish(attempt), run.value);
    }
    expect(delays).toEqual([1, 2, 4, 8, 10, 10, 10]);
    expect(finished).toBe(0);
    // About 55 minutes of checks before a build missing evaluations is recorded anyway.
    const patience = delays.slice(0, 4).reduce((sum, delay) => sum + delay, 0);
    expect(patience + 10 * (FINISH_PATIENCE_ATTEMPTS - 4)).toBeGreaterThanOrEqual(55 * 60);
    await runAudienceJob(finish(FINISH_PATIENCE_ATTEMPTS), run.value);
    expect(finished).toBe(1);
    expect(delays).toHaveLength(7);
  });
});
