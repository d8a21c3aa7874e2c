import { describe, expect, it } from '@jest/globals';
import type { Audience } from '../../../shared/domain/audiences/audience.js';
import type { InstanceSchema } from '../../../shared/domain/tenancy.js';
import { TtlCache } from '../../../shared/lib/ttl-cache.js';
import { currentAudiences, type KeptAudiences } from '../../../shared/worker/audience-runtime.js';
import { testAudience } from '../fixtures.js';

const filter = (last: string) => ({
  $and: [{ '$str::is': { field_id: 'str::last', value: last } }],
});

/** Stores that count their reads, with versions and definitions the test moves. */
function stores(audiences: Audience[]) {
  const state = { version: 1, configVersion: 7, audiences };
  const calls = { catalog: 0, configVersion: 0, list: 0, getInstance: 0 };
  const store = {
    catalog: () => {
      calls.catalog += 1;
      return Promise.resolve({ audiences: state.audiences.length, version: state.version });
    },
    list: () => {
      calls.list += 1;
      return Promise.resolve(state.audiences);
    },
  };
  const config = {
    configVersion: () => {
      calls.configVersion += 1;
      return Promise.resolve(state.configVersion);
    },
    getInstance: () => {
      calls.getInstance += 1;
      return Promise.resolve({ person_fields: [] } as unknown as InstanceSchema);
    },
  };
  const tags = { tagNames: () => Promise.resolve(new Map<number, string>()) };
  return { state, calls, store, config, tags };
}

describe("the audience worker's audiences", () => {
  it('costs an instance with no audience one read of its count, and nothing more', async () => {
    const { calls, store, config, tags } = stores([]);
    const kept = new TtlCache<KeptAudiences>(10);
    expect(await currentAudiences('inst', kept, store, config, tags)).toEqual([]);
    expect(await currentAudiences('inst', kept, store, config, tags)).toEqual([]);
    expect(calls).toEqual({ catalog: 2, configVersion: 0, list: 0, getInstance: 0 });
  });

  it('compiles the definitions again only when their version or the configuration version moved', async () => {
    const { state, calls, store, config, tags } = stores([testAudience('a1', filter('In'))]);
    const kept = new TtlCache<KeptAudiences>(10);
    const entryOf = async () => {
      const [live] = await currentAudiences('inst', kept, store, config, tags);
      return live?.audience.filter;
    };
    expect(await entryOf()).toEqual(filter('In'));
    expect(await entryOf()).toEqual(filter('In'));
    // Two batches, the definitions read once; the versions read for each.
    expect(calls).toEqual({ catalog: 2, configVersion: 2, list: 1, getInstance: 1 });

    // An update (its transaction adds to the version): the next batch has the new filter.
    state.audiences = [testAudience('a1', filter('Out'))];
    state.version += 1;
    expect(await entryOf()).toEqual(filter('Out'));
    expect(calls.list).toBe(2);

    // A field changed in the instance's configuration: compiled again.
    state.configVersion += 1;
    await entryOf();
    expect(calls.list).toBe(3);
    expect(calls.getInstance).toBe(3);

    // Kept per instance: another instance reads its own.
    await currentAudiences('other', kept, store, config, tags);
    expect(calls.list).toBe(4);

    // The last audience removed: none, without reading the definitions.
    state.audiences = [];
    state.version += 1;
    expect(await currentAudiences('inst', kept, store, config, tags)).toEqual([]);
    expect(calls.list).toBe(4);
  });
});
