import { compareKeys, holdsEntry, indexEntriesOf, parseEntrySortKey } from './field-index.js';
import type { ListingPlan, Phase, Source } from './listing-plan.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type {
  Found,
  Keys,
  Listing,
  ListingCursor,
  ListingPorts,
  PersonGetRequest,
  Start,
} from './person-get.js';
import { searchRange, searchTokens, SEARCH_INDEXES, SORT_INDEXES } from './person-index.js';
import type { Person } from './person.js';
import { LAST_SEEN_FIELD } from './system-fields.js';

/**
 * A planned listing (listing-plan.ts) read: its sources' candidates in the listing's order,
 * each read strongly consistent and checked against the whole request, at most
 * `MAX_CANDIDATES` a request (docs/api.md, Listing). `person-get.ts` decides when a listing is
 * planned and builds its answer.
 */

/**
 * A listing that checks a filter (or sorts by a field from the field index) examines at most
 * this many candidates a request: past it, the page holds the matches found so far and its
 * cursor goes on from there. An `offset` walked from a saved position adds what it skips.
 */
export const MAX_CANDIDATES = 1_000;

/** The person ID a listing key ends with. */
export const idOf = (key: string) => key.slice(-24);

export const otherListing = () =>
  new ValidationError('cursor_id: it belongs to a listing with other q, filter or sort settings', [
    { field: 'cursor_id', error: 'issued for another listing' },
  ]);

export const noAudience = (audienceId: string) =>
  new NotFoundError(`audience_id: no audience ${audienceId}`, [
    { field: 'audience_id', error: 'no such audience' },
  ]);

/**
 * The few people a filter names (emails, IDs; 50 at most), read whole on every page: the
 * matches sorted as the listing asks, and the cursor's position a count of them.
 */
async function fromPeople(
  request: PersonGetRequest,
  phase: Phase,
  source: Extract<Source, { kind: 'people' }>,
  ports: ListingPorts,
  listing: Listing,
  position: Extract<ListingCursor, { mode: 'plan' }> | undefined,
  skip: number,
  fingerprint: string,
): Promise<Found> {
  const owners = await Promise.all(
    source.claims.map(({ field, value }) =>
      ports.listing.claimOwner(listing.instanceId, field, value),
    ),
  );
  const ids = [...new Set([...source.ids, ...owners.flatMap((id) => (id ? [id] : []))])];
  const read = await ports.listing.getPeople(listing.instanceId, ids);
  const matches = [...read.values()]
    .filter((person) => accepts(listing, phase, person.id, person))
    .sort(comparatorOf(listing.sortField, request.sort_order));
  const from = Number(position?.after ?? 0) + skip;
  const listed = matches.slice(from, from + request.limit);
  const next = from + listed.length;
  return {
    ids: listed.map((person) => person.id),
    hasMore: next < matches.length,
    matches: matches.length,
    people: read,
    cursor: {
      v: 3,
      mode: 'plan',
      listing: fingerprint,
      phase: 0,
      after: String(next),
      found: next,
    },
  };
}

/** A person's value of a field as the field index holds it (the first, for tags), if any. */
function indexedValueOf(person: Person, field: string): string | undefined {
  return indexEntriesOf(person).find((entry) => entry.field === field)?.value;
}

/** The order of a listing, for people sorted in memory (as its index would have them). */
function comparatorOf(sortField: string | undefined, order: 'asc' | 'desc') {
  const direction = order === 'asc' ? 1 : -1;
  const byId = (a: Person, b: Person) => direction * compareKeys(a.id, b.id);
  if (sortField === undefined) return byId;
  const index = SORT_INDEXES[sortField];
  if (index) {
    return (a: Person, b: Person) =>
      direction * compareKeys(searchTokens(a.fields)[index], searchTokens(b.fields)[index]) ||
      byId(a, b);
  }
  // The value as the field index orders it (`idt::o`, the organization, is not in `fields`).
  const field = sortField === LAST_SEEN_FIELD ? 'tme::last-seen' : sortField;
  const valueOf = (person: Person) => indexedValueOf(person, field);
  return (a: Person, b: Person) => {
    const [x, y] = [valueOf(a), valueOf(b)];
    // People without a value come last either way.
    if (x === undefined || y === undefined) {
      return x === y ? byId(a, b) : x === undefined ? 1 : -1;
    }
    return direction * compareKeys(x, y) || byId(a, b);
  };
}

/** Candidates read at once at most (one batched read of people is 100). */
const MAX_BATCH = 500;

/** The next keys of a plan's source after `after`, in the listing's order. */
async function sourcePage(
  source: Source,
  request: PersonGetRequest,
  ports: ListingPorts,
  instanceId: string,
  after: string | undefined,
  count: number,
): Promise<Keys> {
  const order = request.sort_order;
  switch (source.kind) {
    case 'people':
      // Read whole by `fromPeople`.
      return { keys: [], hasMore: false };
    case 'index':
      return ports.listing.indexPage(instanceId, source.index, order, after, count);
    case 'search':
      return ports.listing.searchPage(instanceId, source.q, after, count);
    case 'field':
      return ports.fields.fieldPage(instanceId, source.range, order, after, count);
    case 'audience': {
      if (!ports.audiences) throw noAudience(source.audienceId);
      return ports.audiences.membersPage(instanceId, source.audienceId, order, after, count);
    }
  }
}

/** Whether a candidate of a phase is listed: the whole filter, `q`, and its source's terms. */
function accepts(listing: Listing, phase: Phase, key: string, person: Person): boolean {
  if (person.archived_at !== undefined) return false;
  if (phase.source.kind === 'field') {
    // An entry the person no longer holds (the index is behind a change): not listed here.
    const { field } = phase.source.range;
    if (!holdsEntry(person, field, parseEntrySortKey(key).value)) return false;
  }
  if (phase.lacking !== undefined && indexedValueOf(person, phase.lacking) !== undefined) {
    return false;
  }
  if (listing.predicate && !listing.predicate(person)) return false;
  if (listing.q === undefined || phase.source.kind === 'search') return true;
  const prefix = searchRange(listing.q).from;
  const tokens = searchTokens(person.fields);
  return SEARCH_INDEXES.some((index) => tokens[index].startsWith(prefix));
}

/**
 * A planned listing: the plan's phases in turn, each source's candidates read (strongly
 * consistent) and checked, until the page is full, the sources end, or `MAX_CANDIDATES` (and
 * what the offset skips) were examined. The cursor is the position in the source: the last
 * candidate examined, or the last listed when the page filled.
 */
export async function fromPlan(
  request: PersonGetRequest,
  plan: ListingPlan,
  ports: ListingPorts,
  listing: Listing,
  start: Start,
): Promise<Found> {
  const fingerprint = `${listing.fingerprint}.${plan.shape}`;
  const { cursor, skip } = start;
  if (cursor && (cursor.mode !== 'plan' || cursor.listing !== fingerprint)) throw otherListing();
  const position = cursor?.mode === 'plan' ? cursor : undefined;
  const [first] = plan.phases;
  if (first?.source.kind === 'people') {
    return fromPeople(request, first, first.source, ports, listing, position, skip, fingerprint);
  }
  let phase = position?.phase ?? 0;
  let after = position?.after;
  const listed: Person[] = [];
  let skipped = 0;
  let examined = 0;
  let round = 0;
  const budget = MAX_CANDIDATES + skip;
  let hasMore: boolean | undefined;
  for (;;) {
    const current = plan.phases[phase];
    if (hasMore !== undefined || !current) break;
    const needed = Math.max(1, skip - skipped + request.limit - listed.length);
    const count = Math.min(budget - examined, MAX_BATCH, needed * 2 ** Math.min(round, 8));
    round += 1;
    const page = await sourcePage(current.source, request, ports, listing.instanceId, after, count);
    const people = await ports.listing.getPeople(listing.instanceId, [
      ...new Set(page.keys.map(idOf)),
    ]);
    for (const [index, key] of page.keys.entries()) {
      examined += 1;
      after = key;
      const person = people.get(idOf(key));
      if (person && accepts(listing, current, key, person)) {
        if (skipped < skip) skipped += 1;
        else listed.push(person);
      }
      if (listed.length >= request.limit || examined >= budget) {
        const rest = index < page.keys.length - 1 || page.hasMore;
        hasMore = rest || phase < plan.phases.length - 1;
        break;
      }
    }
    if (hasMore === undefined && !page.hasMore) {
      phase += 1;
      after = undefined;
    }
  }
  const found = (position?.found ?? 0) + skipped + listed.length;
  // Short of the offset (the budget spent skipping), the cursor stands where it got to.
  const reached = start.at + skipped + listed.length;
  const everyone =
    !listing.predicate &&
    listing.q === undefined &&
    plan.phases.every((p) => p.source.kind !== 'audience');
  return {
    ids: listed.map((person) => person.id),
    hasMore: hasMore ?? false,
    ...(skipped < skip ? { position: reached } : {}),
    // Without a filter every person matches: the counters say how many.
    ...(everyone ? {} : { matches: found }),
    people: new Map(listed.map((person) => [person.id, person])),
    cursor: {
      v: 3,
      mode: 'plan',
      listing: fingerprint,
      phase,
      ...(after === undefined ? {} : { after }),
      found,
    },
  };
}
