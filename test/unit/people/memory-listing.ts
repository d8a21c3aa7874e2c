import {
  compareKeys,
  entrySortKey,
  indexEntriesOf,
  type EntryRange,
} from '../../../shared/domain/people/field-index.js';
import {
  indexSortKey,
  isPrimaryMatch,
  searchRange,
  searchTokens,
  SEARCH_INDEXES,
  type SearchIndex,
} from '../../../shared/domain/people/person-index.js';
import type {
  FieldIndexReader,
  ListIndex,
  OffsetCheckpoints,
  PersonListing,
} from '../../../shared/domain/people/person-get.js';
import type { Person } from '../../../shared/domain/people/person.js';

/** The next `count` keys of a sorted list after `after`, in order. */
function pageOf(sorted: string[], order: 'asc' | 'desc', after: string | undefined, count: number) {
  const keys = order === 'asc' ? sorted : [...sorted].reverse();
  const rest = keys.filter(
    (key) =>
      after === undefined ||
      (order === 'asc' ? compareKeys(key, after) > 0 : compareKeys(key, after) < 0),
  );
  return { keys: rest.slice(0, count), hasMore: rest.length > count };
}

/**
 * People in memory with every index a listing reads (the listing, sort and search indexes,
 * the field index built as the stream worker would, email claims), and counts of what a
 * listing asked for.
 */
export class MemoryListing implements PersonListing, FieldIndexReader {
  readonly people = new Map<string, Person>();
  /** Field index entries by field: sorted sort keys. */
  private entries = new Map<string, string[]>();
  /** Reads: people read, index keys read. */
  readonly reads = { people: 0, keys: 0 };

  add(...people: Person[]): void {
    for (const person of people) this.people.set(person.id, person);
    this.reindex();
  }

  /** The field index as the stream worker leaves it once it caught up. */
  reindex(): void {
    this.entries = new Map();
    for (const person of this.people.values()) {
      for (const entry of indexEntriesOf(person)) {
        const keys = this.entries.get(entry.field) ?? [];
        keys.push(entrySortKey(entry.value, person.id));
        this.entries.set(entry.field, keys);
      }
    }
    for (const keys of this.entries.values()) keys.sort(compareKeys);
  }

  private live() {
    return [...this.people.values()].filter((person) => person.archived_at === undefined);
  }

  indexPage(
    _instance: string,
    index: ListIndex,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ) {
    const keys = this.live().map((person) =>
      index === 'list' ? person.id : indexSortKey(searchTokens(person.fields)[index], person.id),
    );
    const page = pageOf(keys.sort(compareKeys), order, after, count);
    this.reads.keys += page.keys.length;
    return Promise.resolve(page);
  }

  searchPage(_instance: string, q: string, after: string | undefined, count: number) {
    const prefix = searchRange(q).from;
    const keys = this.live().flatMap((person) => {
      const tokens = searchTokens(person.fields);
      const keysOf = Object.fromEntries(
        SEARCH_INDEXES.map((index) => [index, indexSortKey(tokens[index], person.id)]),
      ) as Record<SearchIndex, string>;
      const primary = SEARCH_INDEXES.find(
        (index) => keysOf[index].startsWith(prefix) && isPrimaryMatch(index, keysOf, prefix),
      );
      return primary ? [keysOf[primary]] : [];
    });
    return Promise.resolve(pageOf(keys.sort(compareKeys), 'asc', after, count));
  }

  async countSearch(instance: string, q: string, cap: number) {
    const all = await this.searchPage(instance, q, undefined, Number.MAX_SAFE_INTEGER);
    return Math.min(cap, all.keys.length);
  }

  tagNames(_instance: string, ids: number[]) {
    return Promise.resolve(new Map(ids.map((id) => [id, `tag-${id}`])));
  }

  claimOwner(_instance: string, field: string, value: string) {
    const owner = this.live().find((person) => {
      const held = person.fields[field];
      return typeof held === 'string' && held.toLowerCase() === value;
    });
    return Promise.resolve(owner?.id);
  }

  getPeople(_instance: string, ids: string[]) {
    this.reads.people += ids.length;
    const found = new Map<string, Person>();
    for (const id of ids) {
      const person = this.people.get(id);
      if (person) found.set(id, person);
    }
    return Promise.resolve(found);
  }

  counters() {
    const contacts = this.live().length;
    return Promise.resolve({ contacts, subscribers: contacts, organizations: 0 });
  }

  fieldPage(
    _instance: string,
    range: EntryRange,
    order: 'asc' | 'desc',
    after: string | undefined,
    count: number,
  ) {
    const inRange = (this.entries.get(range.field) ?? []).filter(
      (key) => compareKeys(key, range.from) >= 0 && compareKeys(key, range.to) <= 0,
    );
    const page = pageOf(inRange, order, after, count);
    this.reads.keys += page.keys.length;
    return Promise.resolve(page);
  }
}

/** Offset positions in memory. */
export class MemoryCheckpoints implements OffsetCheckpoints {
  readonly saved = new Map<string, Map<number, string>>();

  nearest(instance: string, listing: string, offset: number) {
    const positions = this.saved.get(`${instance}/${listing}`) ?? new Map<number, string>();
    const best = [...positions.keys()].filter((at) => at <= offset).sort((a, b) => b - a)[0];
    return Promise.resolve(
      best === undefined ? undefined : { offset: best, cursor: positions.get(best) ?? '' },
    );
  }

  save(instance: string, listing: string, offset: number, cursor: string) {
    const key = `${instance}/${listing}`;
    const positions = this.saved.get(key) ?? new Map<number, string>();
    positions.set(offset, cursor);
    this.saved.set(key, positions);
    return Promise.resolve();
  }
}
